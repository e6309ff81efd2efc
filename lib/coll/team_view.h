// lib/coll: what a collective needs to know about a team. Teams themselves (creation, split,
// translation, handles) live in lib/core/team.*; collectives see only this view.
#pragma once

#include <cstddef>
#include <cstdint>

#include "lib/progress/wait.h"
#include "lib/transport/net/peer.h"
#include "lib/transport/shm/control_block.h"

namespace hoshmem {

// The deprecated active-set collectives (PE_start, logPE_stride, PE_size, pSync) run in this slot
// on every PE; team creation must never hand it out. Why a slot and not pSync: pSync has 64 words,
// too few to stage data or to give each sender its own channel, and it must read
// SHMEM_SYNC_VALUE again when the call returns while a faster PE may already be writing flags for
// its next call. The slot's channels are indexed by world PE (lib/coll/collectives.h), so active
// sets that overlap share it safely: every pair of PEs meets its common active-set collectives in
// the same program order (the spec requires it), and a PE's staging is idle when it returns.
// pSync is then only checked (it must hold SHMEM_SYNC_VALUE) and never written.
constexpr int kActiveSetSlot = shm::kTeamSlots - 1;

struct TeamView {
  int rank = -1;                              // my index in the team
  int size = 0;                               // number of members
  const int *world = nullptr;                 // member index -> world PE
  int slot = -1;                              // scratch slot index, the same on every member
  shm::ControlBlock *const *control = nullptr;  // world PE -> its control block here (null: off node)
  const WaitPolicy *wait = nullptr;
  // Some member is on another node (note_locality()): collectives then use O(log n) shapes instead
  // of the gathers to member 0 that suit PEs sharing the cores of one node.
  bool spans_nodes = false;
  // SHMEM_DEBUG: the routine being run. Waits then also notice a member that entered a world
  // barrier this PE has not entered: it skipped this collective (or called it with another team
  // or active set) and will never send what we wait for, so the wait fails instead of hanging.
  // Only members on this node are watched: an off-node one's count would cost an RDMA read per poll.
  const char *watch = nullptr;

  int world_pe(int member) const { return world[member]; }
  // My scratch slot for this team. A place in another member's slot is named by the same place
  // in mine (lib/transport/net/peer.h): there is no pointer to it when the member is off node.
  char *my_scratch() const { return shm::team_slot(control[world[rank]], slot); }
  shm::ControlBlock *my_control() const { return control[world[rank]]; }
  // Sets spans_nodes from the members' locality; whoever builds a view calls it once.
  void note_locality() {
    spans_nodes = false;
    for (int m = 0; m < size; ++m) spans_nodes |= !peer::on_node(world[m]);
  }
};

}  // namespace hoshmem
