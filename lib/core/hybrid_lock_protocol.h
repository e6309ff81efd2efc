// lib/core: the hybrid lock's protocol (hybrid_lock.h describes it), apart from where its words
// live and how messages travel: every step goes through an environment `E`, so the library runs
// it on its words (hybrid_lock.cc) and test/unit/hybrid_lock_test.cc runs the same code under a
// scheduler that tries the interleavings of two local requesters, a remote one and the manager.
//
// E provides, for one lock and one PE:
//   int me; unsigned migrate_after; bool flip_on_release;   (the policy: hybrid_lock.h)
//   uint64_t load();  bool cas(uint64_t &expected, uint64_t desired);   the CPU word
//   uint64_t net_cas(uint64_t expected, uint64_t desired);  void net_store(uint64_t);
//   uint64_t net_peek();           the manager: a load of the home's copy of the network word
//   void wake(uint64_t old);       ring the waiters `old` names
//   void wait_change(uint64_t seen);   until the CPU word is not `seen` (waiter bit announced)
//   void pause(unsigned &round);   back off before trying a held network word again
//   Answer ask();  void post(Request);   a remote PE's messages to the manager
//   void count(Event);  [[noreturn]] void corrupt(uint64_t net);  [[noreturn]] void not_held();
#pragma once

#include <algorithm>
#include <cstdint>

namespace hoshmem::hybrid_lock {

enum Request : uint8_t { kAcquire = 1, kMigrated = 2, kRelease = 3 };
enum Answer : uint8_t { kGranted = 1, kMigrate = 2, kBusy = 3, kNetworkMode = 4, kRefused = 5 };
// How a PE holds a lock it acquired (its release depends on it).
enum class Held : uint8_t { kCpuWord, kNetworkWord, kByManager };
enum class Event : uint8_t { kToCpu, kToNetwork, kAsked, kBusy, kServed };

namespace protocol {

// The network word: 0 CPU mode (a zeroed lock starts there), 1 network mode and free, 2 + p held
// by PE p in network mode.
constexpr uint64_t kNetCpuMode = 0;
constexpr uint64_t kNetFree = 1;
inline uint64_t net_held_by(int pe) { return 2 + static_cast<uint64_t>(pe); }

// The CPU word: state (2 bits), holder (24 bits), streak (16 bits: acquisitions in a row from
// the side that does not own the mode), sleeping waiters (16 bits, one per PE number modulo 16).
enum State : uint64_t { kCpuFree = 0, kCpuHeld = 1, kNetwork = 2, kMigrating = 3 };
constexpr int kHolderShift = 2, kStreakShift = 26, kWaiterShift = 48;
constexpr uint64_t kHolderMask = (uint64_t{1} << 24) - 1, kStreakMask = 0xffff;
constexpr uint64_t kWaitersMask = uint64_t{0xffff} << kWaiterShift;

inline State state_of(uint64_t w) { return static_cast<State>(w & 3); }
inline int holder_of(uint64_t w) { return static_cast<int>((w >> kHolderShift) & kHolderMask); }
inline unsigned streak_of(uint64_t w) {
  return static_cast<unsigned>((w >> kStreakShift) & kStreakMask);
}
// A word; `waiters` keeps the waiter bits of a word whose change does not concern them.
inline uint64_t word(State s, int holder, unsigned streak, uint64_t waiters = 0) {
  return s | (static_cast<uint64_t>(holder) & kHolderMask) << kHolderShift |
         uint64_t{std::min(streak, 0xffffu)} << kStreakShift | (waiters & kWaitersMask);
}
inline uint64_t waiter_bit(int pe) { return uint64_t{1} << (kWaiterShift + pe % 16); }

// Sets the CPU word to `desired` (waiters cleared) if it still is `seen`, and wakes them.
template <class E>
bool move(E &e, uint64_t &seen, uint64_t desired) {
  if (!e.cas(seen, desired & ~kWaitersMask)) return false;
  e.wake(seen);
  return true;
}

// The same, retried until it takes: for a word this PE has claimed (held or migrating), which
// others only mark with waiter bits.
template <class E>
void move_claimed(E &e, uint64_t desired) {
  uint64_t now = e.load();
  while (!move(e, now, desired)) {
  }
}

// Waits for the CPU word to change from `seen`, announced first so that its next change rings.
template <class E>
void wait_change(E &e, uint64_t seen) {
  const uint64_t bit = waiter_bit(e.me);
  if (!(seen & bit)) {
    if (!e.cas(seen, seen | bit)) return;  // changed already
    seen |= bit;
  }
  e.wait_change(seen);
}

// --- a PE of the home's node --------------------------------------------------------------------

// Network to CPU mode, for this PE, which then holds the lock. `seen`: the CPU word in network
// mode. False if the word changed first, or (`wait` false) the network word is held (*held set;
// the lock stays in network mode).
template <class E>
bool migrate_here(E &e, uint64_t seen, bool wait, bool *held) {
  const uint64_t claimed = word(kMigrating, e.me, 0, seen);
  if (!e.cas(seen, claimed)) return false;
  // The network word's holder releases it to free; 0: the lock was zeroed by its owner since it
  // was last used in network mode (claimed, it is safe to take back).
  for (unsigned round = 0;;) {
    const uint64_t old = e.net_cas(kNetFree, kNetCpuMode);
    if (old == kNetFree || old == kNetCpuMode) break;
    if (!wait) {
      move_claimed(e, word(kNetwork, 0, streak_of(seen)));
      *held = true;
      return false;
    }
    e.pause(round);
  }
  move_claimed(e, word(kCpuHeld, e.me, 0));
  e.count(Event::kToCpu);
  return true;
}

// One acquisition; `wait` false: one attempt. True when acquired (*how says how).
template <class E>
bool acquire_here(E &e, bool wait, Held *how) {
  for (unsigned round = 0;;) {
    uint64_t w = e.load();
    switch (state_of(w)) {
      case kCpuFree:
        // A local acquisition ends a streak of other nodes' grants.
        if (e.cas(w, word(kCpuHeld, e.me, 0, w))) {
          *how = Held::kCpuWord;
          return true;
        }
        continue;
      case kCpuHeld:
      case kMigrating:
        if (!wait) return false;
        wait_change(e, w);
        continue;
      case kNetwork: {
        bool held = false;
        if (streak_of(w) + 1 >= e.migrate_after) {
          if (migrate_here(e, w, wait, &held)) {
            *how = Held::kCpuWord;
            return true;
          }
          if (held) return false;
          continue;
        }
        const uint64_t old = e.net_cas(kNetFree, net_held_by(e.me));
        if (old == kNetFree) {
          // One more acquisition from the side that does not own the mode. Advice only: a count
          // lost to a concurrent change of the word just delays a migration.
          uint64_t now = w;
          if (streak_of(w) < kStreakMask - 1) e.cas(now, w + (uint64_t{1} << kStreakShift));
          *how = Held::kNetworkWord;
          return true;
        }
        if (old == kNetCpuMode) {  // zeroed since its network-mode use: claim it for CPU mode
          if (migrate_here(e, w, true, &held)) {
            *how = Held::kCpuWord;
            return true;
          }
          continue;
        }
        if (!wait) return false;
        e.pause(round);
        continue;
      }
    }
  }
}

template <class E>
void release_here(E &e, Held how) {
  uint64_t w = e.load();
  if (how == Held::kCpuWord) {
    for (;;) {
      if (state_of(w) != kCpuHeld || holder_of(w) != e.me) e.not_held();
      if (e.flip_on_release) {  // to network mode: the next acquisition here migrates it back
        if (!e.cas(w, word(kMigrating, e.me, 0, w))) continue;
        const uint64_t old = e.net_cas(kNetCpuMode, kNetFree);
        if (old != kNetCpuMode) e.corrupt(old);
        move_claimed(e, word(kNetwork, 0, 0));
        e.count(Event::kToNetwork);
        return;
      }
      if (move(e, w, word(kCpuFree, 0, streak_of(w)))) return;
    }
  }
  // Held in network mode.
  if (e.flip_on_release && state_of(w) == kNetwork && e.cas(w, word(kMigrating, e.me, 0, w))) {
    const uint64_t old = e.net_cas(net_held_by(e.me), kNetCpuMode);
    if (old != net_held_by(e.me)) e.corrupt(old);
    move_claimed(e, word(kCpuFree, 0, 0));
    e.count(Event::kToCpu);
    return;
  }
  e.net_store(kNetFree);
}

// --- a PE of another node -----------------------------------------------------------------------

template <class E>
bool acquire_remote(E &e, bool wait, Held *how) {
  for (unsigned round = 0;;) {
    const uint64_t old = e.net_cas(kNetFree, net_held_by(e.me));
    if (old == kNetFree) {
      *how = Held::kNetworkWord;
      return true;
    }
    if (old == kNetCpuMode) {  // CPU mode: through the home's manager
      e.count(Event::kAsked);
      const Answer answer = e.ask();
      if (answer == kGranted) {
        *how = Held::kByManager;
        return true;
      }
      if (answer == kMigrate) {  // marked migrating for us: the network word is ours to move
        const uint64_t was = e.net_cas(kNetCpuMode, net_held_by(e.me));
        if (was != kNetCpuMode) e.corrupt(was);
        e.post(kMigrated);
        e.count(Event::kToNetwork);
        *how = Held::kNetworkWord;
        return true;
      }
      if (answer == kNetworkMode) continue;  // migrated since: the word again
      e.count(Event::kBusy);
    }
    if (!wait) return false;
    e.pause(round);
  }
}

template <class E>
void release_remote(E &e, Held how) {
  if (how == Held::kByManager)
    e.post(kRelease);
  else
    e.net_store(kNetFree);
}

// --- the manager, on the home --------------------------------------------------------------------

// PE `from`'s request. Only the CPU word's atomics and a load of the network word: it never waits.
template <class E>
Answer serve(E &e, int from, Request request) {
  e.count(Event::kServed);
  uint64_t w = e.load();
  switch (request) {
    case kAcquire:
      for (;;) {
        switch (state_of(w)) {
          case kCpuFree: {
            const unsigned streak = streak_of(w) + 1;
            if (streak >= e.migrate_after) {
              if (e.cas(w, word(kMigrating, from, 0, w))) return kMigrate;
            } else if (e.cas(w, word(kCpuHeld, from, streak, w))) {
              return kGranted;
            }
            continue;
          }
          case kCpuHeld:
          case kMigrating:
            return kBusy;
          case kNetwork: {
            // The requester saw CPU mode in the network word: a migration since (say so), or a
            // lock zeroed since its network-mode use (claim it, then serve it as free).
            if (e.net_peek() != kNetCpuMode) return kNetworkMode;
            uint64_t claimed = word(kMigrating, e.me, 0, w);
            if (!e.cas(w, claimed)) continue;
            if (e.net_peek() != kNetCpuMode) {  // moved before the claim: give it back
              move_claimed(e, word(kNetwork, 0, 0));
              return kNetworkMode;
            }
            move_claimed(e, word(kCpuFree, 0, 0));
            w = e.load();
            continue;
          }
        }
      }
    case kMigrated:
      for (;;) {
        if (state_of(w) != kMigrating || holder_of(w) != from) return kRefused;
        if (move(e, w, word(kNetwork, 0, 0))) return kGranted;
      }
    case kRelease:
      for (;;) {
        if (state_of(w) != kCpuHeld || holder_of(w) != from) return kRefused;
        if (move(e, w, word(kCpuFree, 0, streak_of(w)))) return kGranted;
      }
  }
  return kRefused;
}

}  // namespace protocol
}  // namespace hoshmem::hybrid_lock
