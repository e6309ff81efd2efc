// lib/coll: the exchange team management runs over a parent team (lib/core/team.cc): a bitwise
// OR-allreduce of a few words, and the synchronization that retires a destroyed team's slot. It
// uses the last kMgmtReserveBytes of the team's slot, which the collectives leave alone.
#pragma once

#include <cstddef>
#include <cstdint>

#include "lib/coll/team_view.h"

namespace hoshmem::coll {

// Bitwise OR of `words` over all members of `team`, result on every member (n == 0: a barrier).
// `epoch` counts the exchanges run over this team so far (the same on every member); each call
// advances it. Recursive doubling: O(log n) messages per member.
void allreduce_or(const TeamView &team, uint64_t &epoch, uint64_t *words, size_t n);

// Team destroy: once every member has made its earlier writes visible and reached this point,
// nobody writes into the team's slot any more, so each member zeroes its own copy: channels,
// cell credits and exchange flags restart at zero together for the next team given the slot.
void retire_slot(const TeamView &team, uint64_t &epoch);

}  // namespace hoshmem::coll
