// Process management for one oshrun job: binding plan, fork/exec of the PEs, and the main
// loop that reaps them, reacts to failures, aborts and signals, and computes the exit status.
#pragma once

#include <sched.h>
#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "tools/oshrun/options.h"
#include "tools/oshrun/pmix_server.h"

namespace oshrun {

// Which CPUs each PE is pinned to (empty: not pinned). Uses hwloc's view of the cores this
// process may use. Prints one warning if --bind-to core has to share cores.
std::vector<std::vector<int>> plan_binding(const Options& options);

class Job {
 public:
  // The signals the main loop handles must be blocked in every thread before any thread
  // (e.g. PMIx's progress thread) is created: call this first thing in main.
  static void block_signals();

  Job(const Options& options, std::string program_path, ServerEvents& events);
  ~Job();
  Job(const Job&) = delete;
  Job& operator=(const Job&) = delete;

  // Starts every PE; on failure kills those already started and returns false.
  bool launch(PmixServer& server, const std::vector<std::vector<int>>& binding, std::string& error);

  // Runs until every PE is gone; returns oshrun's exit status.
  int wait();

 private:
  struct Pe {
    pid_t pid = -1;
    bool alive = false;
    // Read end of a pipe whose write end only the PE holds (a low fd, so the kernel closes it
    // before the PE's PMIx socket when the PE dies). Its hang-up orders deaths, see reap().
    int life_fd = -1;
    long death_order = 0;  // 0: not seen dying yet
  };
  using Clock = std::chrono::steady_clock;

  void reap();
  void note_deaths(int timeout_ms);
  void handle_exits(std::vector<std::pair<int, int>> exited);
  bool wait_for_exit(int rank, int& wait_status);
  void on_pe_exit(int rank, int wait_status);
  void check_abort();
  void check_early_exit();
  void on_signal(int signo);
  // Starts the teardown: prints `line`, sends `signo` to every live PE, arms the SIGKILL timer.
  void fail(int status, const std::string& line, int signo);
  int live_count(int except) const;
  void signal_all(int signo);

  const Options& options_;
  std::string program_path_;
  ServerEvents& events_;
  std::vector<Pe> pes_;
  int signal_fd_ = -1;
  bool failed_ = false;
  bool abort_seen_ = false;
  // The first PE that exited with status 0 without ever connecting to the PMIx server (-1: none).
  int early_exit_rank_ = -1;
  int exit_status_ = 0;
  bool killed_ = false;
  long deaths_seen_ = 0;
  Clock::time_point kill_deadline_;
};

}  // namespace oshrun
