// lib/coll: what a collective needs to know about a team. Teams themselves (creation, split,
// translation, handles) live in lib/core/team.*; collectives see only this view.
#pragma once

#include <cstddef>
#include <cstdint>

#include "lib/progress/wait.h"
#include "lib/transport/shm/control_block.h"

namespace hoshmem {

struct TeamView {
  int rank = -1;                              // my index in the team
  int size = 0;                               // number of members
  const int *world = nullptr;                 // member index -> world PE
  int slot = -1;                              // scratch slot index, the same on every member
  shm::ControlBlock *const *control = nullptr;  // world PE -> its control block as mapped here
  const WaitPolicy *wait = nullptr;

  int world_pe(int member) const { return world[member]; }
  // Member `member`'s scratch slot for this team, as mapped here.
  char *scratch(int member) const { return shm::team_slot(control[world[member]], slot); }
  char *my_scratch() const { return scratch(rank); }
  shm::ControlBlock *my_control() const { return control[world[rank]]; }
};

}  // namespace hoshmem
