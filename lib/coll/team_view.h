// lib/coll: what a collective needs to know about a team. Teams themselves (creation, split,
// translation, handles) live in lib/core/team.*; collectives see only this view.
#pragma once

#include <cstddef>
#include <cstdint>

#include "lib/progress/wait.h"
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
  shm::ControlBlock *const *control = nullptr;  // world PE -> its control block as mapped here
  const WaitPolicy *wait = nullptr;
  // SHMEM_DEBUG: the routine being run. Waits then also notice a member that entered a world
  // barrier this PE has not entered: it skipped this collective (or called it with another team
  // or active set) and will never send what we wait for, so the wait fails instead of hanging.
  const char *watch = nullptr;

  int world_pe(int member) const { return world[member]; }
  // Member `member`'s scratch slot for this team, as mapped here.
  char *scratch(int member) const { return shm::team_slot(control[world[member]], slot); }
  char *my_scratch() const { return scratch(rank); }
  shm::ControlBlock *my_control() const { return control[world[rank]]; }
};

}  // namespace hoshmem
