// lib/bootstrap: how a PE learns who it is and exchanges startup data with the other PEs.
//
// A PMIx client (oshrun, mpirun, prterun, srun --mpi=pmix serve PMIx), a PMI-2 or PMI-1 client
// (MPICH's Hydra, srun --mpi=pmi2), or, started with no launcher, a singleton job of one PE. Upper layers
// use only this interface. Data exchange is tiny by design: with the heap at the same virtual
// address everywhere, a peer needs a few bytes per segment.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace hoshmem {

class Bootstrap {
 public:
  virtual ~Bootstrap() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Ranks on this node, ascending, including this one.
  virtual const std::vector<int> &local_ranks() const = 0;
  // The PEs this PE shares memory with: the launcher's local ranks, or after group_nodes(k) those
  // of them in this PE's group of k consecutive ranks (k PEs per "node" on one machine).
  const std::vector<int> &node_ranks() const { return grouped_ ? node_ : local_ranks(); }
  void group_nodes(int k) {
    grouped_ = k > 0;
    node_.clear();
    for (int pe : local_ranks())
      if (grouped_ && pe / k == rank() / k) node_.push_back(pe);
  }
  // A short description of the launcher for SHMEM_INFO ("pmix (oshrun)", "pmi-2 (PMI_FD)", "singleton ...").
  virtual const char *launcher() const = 0;

  // Starts a new shmem_init session on the same connection: keys published from now on are
  // distinct from those of earlier sessions.
  virtual void begin_session() = 0;
  // Publishes a value under key; visible to the others after exchange().
  virtual void put(const char *key, const void *data, size_t len) = 0;
  // Collective: every PE's published values become readable by every PE.
  virtual void exchange() = 0;
  // A value another PE published before the last exchange(). Fatal if missing.
  virtual std::vector<uint8_t> get(int rank, const char *key) = 0;
  // Collective synchronization through the launcher (slow; used only at startup/shutdown).
  virtual void barrier() = 0;
  // Tears the whole job down; the launcher reports status and message.
  [[noreturn]] virtual void abort(int status, const char *message) = 0;
  virtual void finalize() = 0;

 private:
  bool grouped_ = false;
  std::vector<int> node_;
};

// The client of the launcher that started this process (PMIx, PMI-2/PMI-1), otherwise a
// singleton. Fatal on the launcher's errors.
std::unique_ptr<Bootstrap> make_bootstrap();

}  // namespace hoshmem
