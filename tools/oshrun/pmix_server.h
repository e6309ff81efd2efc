// The PMIx server oshrun embeds: one namespace, every PE on this node.
//
// The PMIx library calls back on its own progress thread; those callbacks only record what
// happened in ServerEvents and wake the main thread through an eventfd. All decisions about
// processes are made by the main thread (see job.h).
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace oshrun {

struct AbortRequest {
  int rank = -1;
  int status = 0;
  std::string message;
};

class ServerEvents {
 public:
  explicit ServerEvents(int num_pes);
  ~ServerEvents();
  ServerEvents(const ServerEvents&) = delete;
  ServerEvents& operator=(const ServerEvents&) = delete;

  int wake_fd() const { return wake_fd_; }
  void drain_wakeups();

  // Called on the PMIx thread. Recorded before the client is released, so by the time the
  // main thread sees the PE exit, these flags are already visible.
  void on_connected(int rank);
  void on_finalized(int rank);
  void on_abort(int rank, int status, const char* message);

  bool connected(int rank) const { return connected_[rank].load(std::memory_order_acquire); }
  bool finalized(int rank) const { return finalized_[rank].load(std::memory_order_acquire); }
  std::optional<AbortRequest> first_abort();

 private:
  void wake();

  int wake_fd_ = -1;
  std::unique_ptr<std::atomic<bool>[]> connected_;
  std::unique_ptr<std::atomic<bool>[]> finalized_;
  std::mutex mutex_;
  std::optional<AbortRequest> abort_;
};

class PmixServer {
 public:
  explicit PmixServer(ServerEvents& events) : events_(events) {}
  ~PmixServer() = default;
  PmixServer(const PmixServer&) = delete;
  PmixServer& operator=(const PmixServer&) = delete;

  // Initializes the server (named `server_nspace`) with all its files under `tmpdir` and
  // registers `nspace` with `num_pes` local processes. On failure returns false with a one-line
  // `error`. Clients are authenticated as peer_check.h says.
  bool start(const std::string& tmpdir, const std::string& nspace, const std::string& server_nspace, int num_pes,
             int num_nodes, std::string& error);

  // Registers PE `rank` and appends the PMIx variables it needs to `env` (NAME=value strings).
  bool prepare_client(int rank, std::vector<std::string>& env, std::string& error);

  // PMIx_server_finalize is deliberately never called: libpmix 4.2.2 crashes in it (SIGSEGV,
  // seen about 1 run in 15) after clients died without finalizing. All oshrun leaves
  // behind is its tmpdir, which main removes before _exit, so the server is simply abandoned.

 private:
  ServerEvents& events_;
  std::string nspace_;
};

}  // namespace oshrun
