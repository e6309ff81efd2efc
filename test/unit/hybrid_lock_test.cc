// The hybrid lock's protocol (lib/core/hybrid_lock_protocol.h), the library's own code, run under a
// scheduler that decides which of its actors takes the next step: two requesters on the home's
// node (PEs 0 and 1), one on another node (PE 2) and the home's lock manager, which answers PE 2's
// messages in order. Every access to the CPU word, the network word or the manager's queue is a
// step; a wait is a step that is enabled only once what it waits for has changed.
//
// Each test explores every schedule with at most preemptions() preemptions (switching away from
// an actor that could have gone on; switches at waits are free), depth-first, replaying each
// schedule from the start. In every schedule: at most one actor inside the critical section,
// no error from the protocol (a word it did not expect, a release it does not hold, an answer it
// cannot take), no deadlock, a bounded number of steps, and at the end a lock that is free in
// a consistent mode (CPU free with the network word 0, or network mode with the word 1).
// HYBRID_LOCK_TEST_PREEMPTIONS=2 searches further (minutes); HYBRID_LOCK_TEST_PROGRESS=1 prints
// the count of schedules as it goes.
#include "lib/core/hybrid_lock_protocol.h"

#include <gtest/gtest.h>

#include <ucontext.h>

#include <cstdio>
#include <cstdlib>
#include <deque>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace hoshmem::hybrid_lock {
namespace {

using namespace protocol;

struct Abort {};  // unwinds an actor when its schedule ends early

// One run of the actors under a given prefix of choices. Each actor is a coroutine (ucontext: a
// stack of its own, switched in well under a microsecond) that returns to the scheduler at every
// step; nothing runs concurrently, so the actors share the world without locks.
class Run {
 public:
  struct Step {
    std::vector<int> enabled;
    int chosen;
    int previous;  // the actor that took the step before (-1: none)
  };
  using Body = std::function<void(Run &, int)>;

  std::vector<Step> steps;
  std::string failure;

  // A step of actor `id`: back to the scheduler until it picks this actor; `ready`, if given,
  // says whether it may go on (a wait).
  void point(int id, std::function<bool()> ready = nullptr) {
    Actor &a = actors_[static_cast<size_t>(id)];
    a.ready = std::move(ready);
    swapcontext(&a.context, &scheduler_);
    if (aborted_) throw Abort{};
    a.ready = nullptr;
  }
  void fail(const std::string &why) {
    if (failure.empty()) failure = why;
  }

  // Runs the actors to the end, choosing `prefix` first, then the actor that took the last step
  // while it can go on, else the lowest enabled one.
  void go(std::vector<Body> bodies, const std::vector<int> &prefix, size_t max_steps) {
    const int n = static_cast<int>(bodies.size());
    actors_.clear();
    actors_.resize(static_cast<size_t>(n));
    for (int id = 0; id < n; ++id) {
      Actor &a = actors_[static_cast<size_t>(id)];
      a.body = std::move(bodies[static_cast<size_t>(id)]);
      a.stack.resize(256 * 1024);
      getcontext(&a.context);
      a.context.uc_stack.ss_sp = a.stack.data();
      a.context.uc_stack.ss_size = a.stack.size();
      a.context.uc_link = &scheduler_;
      current_ = this;
      makecontext(&a.context, reinterpret_cast<void (*)()>(&Run::entry), 1, id);
      swapcontext(&scheduler_, &a.context);  // to its first step
    }
    int previous = -1;
    for (;;) {
      if (!failure.empty()) break;
      std::vector<int> enabled;
      bool all_done = true;
      for (int id = 0; id < n; ++id) {
        Actor &a = actors_[static_cast<size_t>(id)];
        if (a.done) continue;
        all_done = false;
        if (!a.ready || a.ready()) enabled.push_back(id);
      }
      if (all_done) break;
      if (enabled.empty()) {
        failure = "deadlock: every actor waits";
        break;
      }
      if (steps.size() >= max_steps) {
        failure = "no end after " + std::to_string(max_steps) + " steps";
        break;
      }
      int chosen = enabled[0];
      if (steps.size() < prefix.size()) {
        chosen = prefix[steps.size()];
      } else {
        for (int id : enabled)
          if (id == previous) chosen = id;
      }
      steps.push_back({enabled, chosen, previous});
      previous = chosen;
      current_ = this;
      swapcontext(&scheduler_, &actors_[static_cast<size_t>(chosen)].context);
    }
    aborted_ = true;  // unwind the actors still inside the protocol
    for (Actor &a : actors_) {
      if (a.done) continue;
      current_ = this;
      swapcontext(&scheduler_, &a.context);
    }
  }

 private:
  struct Actor {
    Body body;
    std::vector<char> stack;
    ucontext_t context;
    bool done = false;
    std::function<bool()> ready;
  };

  static void entry(int id) {
    Run &run = *current_;
    Actor &a = run.actors_[static_cast<size_t>(id)];
    try {
      run.point(id);
      a.body(run, id);
    } catch (const Abort &) {
    } catch (const std::exception &e) {
      run.fail(e.what());
    }
    a.done = true;
  }  // returns to the scheduler (uc_link)

  static inline Run *current_ = nullptr;
  ucontext_t scheduler_;
  std::vector<Actor> actors_;
  bool aborted_ = false;
};

struct Message {
  int from;
  Request request;
  Answer *answer;  // null: posted
};

// What the actors share: the lock's two words, the manager's queue, the critical section.
struct World {
  uint64_t cpu = 0, net = 0;
  uint64_t version = 0;  // bumped at every change of a word (what a pause waits for)
  std::deque<Message> queue;
  int inside = 0;
  int clients_left = 0;
};

constexpr int kHome = 0;

// The protocol's environment for one actor (hybrid_lock_protocol.h).
struct ModelEnv {
  Run &run;
  World &w;
  int id;  // actor number (the scheduler's)
  int me;  // PE
  unsigned migrate_after;
  bool flip_on_release;
  // A pause lasts until another actor has written a word since this actor's last pause (in the
  // library it lasts a time; here nothing spins: a retry that nobody else's write could have
  // changed would fail the same way).
  uint64_t my_writes = 0, others_mark = 0;

  void step() { run.point(id); }
  void wrote() {
    ++w.version;
    ++my_writes;
  }
  uint64_t load() {
    step();
    return w.cpu;
  }
  bool cas(uint64_t &expected, uint64_t desired) {
    step();
    if (w.cpu != expected) {
      expected = w.cpu;
      return false;
    }
    w.cpu = desired;
    wrote();
    return true;
  }
  uint64_t net_cas(uint64_t expected, uint64_t desired) {
    step();
    const uint64_t old = w.net;
    if (old == expected) {
      w.net = desired;
      wrote();
    }
    return old;
  }
  void net_store(uint64_t v) {
    step();
    w.net = v;
    wrote();
  }
  uint64_t net_peek() {
    step();
    return w.net;
  }
  void wake(uint64_t) {}
  void wait_change(uint64_t seen) {
    run.point(id, [this, seen] { return w.cpu != seen; });
  }
  void pause(unsigned &) {
    const uint64_t mark = others_mark;
    run.point(id, [this, mark] { return w.version - my_writes != mark; });
    others_mark = w.version - my_writes;
  }
  Answer ask() {
    Answer answer = static_cast<Answer>(0);
    step();
    w.queue.push_back({me, kAcquire, &answer});
    run.point(id, [&answer] { return answer != 0; });
    return answer;
  }
  void post(Request r) {
    step();
    w.queue.push_back({me, r, nullptr});
  }
  void count(Event) {}
  [[noreturn]] void corrupt(uint64_t net) {
    throw std::runtime_error("PE " + std::to_string(me) + ": network word " + std::to_string(net) +
                             " where CPU mode was expected");
  }
  [[noreturn]] void not_held() {
    throw std::runtime_error("PE " + std::to_string(me) + " released a lock it does not hold");
  }
};

struct Scenario {
  unsigned migrate_after = 1;
  bool flip_on_release = false;
  int rounds = 1;          // acquisitions per requester
  bool try_lock = false;   // the second local requester uses test (one attempt) until it wins
  uint64_t cpu0 = 0, net0 = 0;  // the lock's words at the start
};

struct Outcome {
  std::vector<Run::Step> steps;
  std::string failure;
};

// One schedule; returns its steps (for the search) and its failure, if any.
Outcome run_once(const Scenario &sc, const std::vector<int> &prefix) {
  Run run;
  World w;
  w.cpu = sc.cpu0;
  w.net = sc.net0;
  w.clients_left = 3;
  auto env = [&](int id, int me) {
    return ModelEnv{run, w, id, me, sc.migrate_after, sc.flip_on_release};
  };
  auto critical = [&](ModelEnv &e) {
    e.step();
    if (w.inside++ != 0) throw std::runtime_error("two holders inside the critical section");
    e.step();
    --w.inside;
  };
  auto client = [&](int me, bool local, bool use_test) {
    return [&, me, local, use_test](Run &, int id) {
      ModelEnv e = env(id, me);
      for (int r = 0; r < sc.rounds; ++r) {
        Held how;
        if (use_test) {
          for (unsigned round = 0;
               !(local ? acquire_here(e, false, &how) : acquire_remote(e, false, &how));)
            e.pause(round);
        } else if (!(local ? acquire_here(e, true, &how) : acquire_remote(e, true, &how))) {
          throw std::runtime_error("an acquisition that waits returned without the lock");
        }
        critical(e);
        if (local)
          release_here(e, how);
        else
          release_remote(e, how);
      }
      e.step();
      --w.clients_left;
    };
  };
  auto manager = [&](Run &, int id) {
    ModelEnv e = env(id, kHome);
    for (;;) {
      run.point(id, [&] { return !w.queue.empty() || w.clients_left == 0; });
      if (w.queue.empty()) return;
      const Message m = w.queue.front();
      w.queue.pop_front();
      const Answer a = serve(e, m.from, m.request);
      if (a == kRefused)
        throw std::runtime_error("the manager refused request " + std::to_string(m.request) +
                                 " of PE " + std::to_string(m.from));
      if (m.answer) {
        e.step();
        *m.answer = a;
      }
    }
  };
  run.go({client(0, true, false), client(1, true, sc.try_lock), client(2, false, false), manager},
         prefix, 4000);
  if (run.failure.empty()) {
    const bool cpu_free = state_of(w.cpu) == kCpuFree && w.net == kNetCpuMode;
    const bool net_free = state_of(w.cpu) == kNetwork && w.net == kNetFree;
    if (!cpu_free && !net_free)
      run.failure = "ends with CPU word state " + std::to_string(state_of(w.cpu)) +
                    " and network word " + std::to_string(w.net);
  }
  return {std::move(run.steps), std::move(run.failure)};
}

// Every schedule with at most `budget` preemptions, depth first. Returns the schedules run.
size_t explore(const Scenario &sc, int budget) {
  std::vector<int> prefix;
  size_t schedules = 0;
  for (;;) {
    Outcome run = run_once(sc, prefix);
    ++schedules;
    if (getenv("HYBRID_LOCK_TEST_PROGRESS") && schedules % 200 == 0)
      fprintf(stderr, "%zu schedules, last %zu steps\n", schedules, run.steps.size());
    if (!run.failure.empty()) {
      std::string trace;
      for (const Run::Step &s : run.steps) trace += std::to_string(s.chosen);
      ADD_FAILURE() << run.failure << " (schedule " << schedules << ", actors by step: " << trace
                    << "; 0, 1: the home's node, 2: another node, 3: the manager)";
      return schedules;
    }
    // The deepest step with an alternative within the budget.
    std::vector<int> preempts(run.steps.size() + 1, 0);
    for (size_t i = 0; i < run.steps.size(); ++i) {
      const Run::Step &s = run.steps[i];
      bool could_go_on = false;
      for (int id : s.enabled) could_go_on |= id == s.previous;
      preempts[i + 1] = preempts[i] + (could_go_on && s.chosen != s.previous ? 1 : 0);
    }
    bool next = false;
    for (size_t i = run.steps.size(); i-- > 0 && !next;) {
      const Run::Step &s = run.steps[i];
      bool could_go_on = false;
      for (int id : s.enabled) could_go_on |= id == s.previous;
      // alternatives after the one chosen, in the order of `enabled`
      size_t k = 0;
      while (s.enabled[k] != s.chosen) ++k;
      for (++k; k < s.enabled.size(); ++k) {
        const int alt = s.enabled[k];
        const int cost = could_go_on && alt != s.previous ? 1 : 0;
        if (preempts[i] + cost > budget) continue;
        prefix.assign(run.steps.size(), 0);
        for (size_t j = 0; j < i; ++j) prefix[j] = run.steps[j].chosen;
        prefix[i] = alt;
        prefix.resize(i + 1);
        next = true;
        break;
      }
    }
    if (!next) return schedules;
  }
}

// Preemptions per schedule: 1 in the test command (seconds); HYBRID_LOCK_TEST_PREEMPTIONS=2 for
// a longer search (every schedule with two: tens of thousands per scenario, minutes).
int preemptions() {
  const char *v = getenv("HYBRID_LOCK_TEST_PREEMPTIONS");
  return v ? atoi(v) : 1;
}

TEST(HybridLockProtocol, EagerFromCpuMode) {
  Scenario sc;
  sc.migrate_after = 1;
  const size_t n = explore(sc, preemptions());
  EXPECT_GT(n, 100u);
  printf("eager, from CPU mode: %zu schedules\n", n);
}

TEST(HybridLockProtocol, AlwaysFlipping) {
  Scenario sc;
  sc.migrate_after = 1;
  sc.flip_on_release = true;
  printf("always, from CPU mode: %zu schedules\n", explore(sc, preemptions()));
}

TEST(HybridLockProtocol, HysteresisTwoRounds) {
  Scenario sc;
  sc.migrate_after = 2;
  sc.rounds = 2;
  printf("hysteresis 2, two rounds each: %zu schedules\n", explore(sc, preemptions()));
}

TEST(HybridLockProtocol, FromNetworkModeWithTestLock) {
  Scenario sc;
  sc.migrate_after = 1;
  sc.try_lock = true;
  sc.cpu0 = word(kNetwork, 0, 0);
  sc.net0 = kNetFree;
  printf("eager, from network mode, PE 1 with test_lock: %zu schedules\n",
         explore(sc, preemptions()));
}

// A lock zeroed by its owner after use in network mode: the CPU word still says network.
TEST(HybridLockProtocol, ZeroedAfterNetworkMode) {
  Scenario sc;
  sc.migrate_after = 2;
  sc.cpu0 = word(kNetwork, 0, 0);
  sc.net0 = kNetCpuMode;
  printf("hysteresis 2, a lock zeroed in network mode: %zu schedules\n",
         explore(sc, preemptions()));
}

}  // namespace
}  // namespace hoshmem::hybrid_lock
