// SOFTHCA_EVENT_DELAY_US: a completion-channel event (what wakes a thread sleeping in
// ibv_get_cq_event, or a poll()/epoll on the channel's fd) comes that many microseconds after
// the model would have raised it, while the CQ itself is pollable at once. Each scenario runs in
// a child process (knobs are read when the library loads). Timing is asserted only as a lower
// bound (never "at most", the machine is loaded): nothing may be seen before the delay.
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <signal.h>
#include <time.h>

#include <cmath>

#include "common.h"

namespace {

uint64_t mono_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);  // the clock the model measures the delay on
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

// ---- the child: one process with the knob set --------------------------------------------------

#define CHECK(cond)                                                                   \
  do {                                                                                \
    if (!(cond)) {                                                                    \
      fprintf(stderr, "event_delay_test peer: line %d: %s failed\n", __LINE__, #cond); \
      return __LINE__;                                                                \
    }                                                                                 \
  } while (0)

// A connected RC pair in this process whose completions go to a CQ of its own on `ch`.
struct Pair {
  Dev& d;
  ibv_cq* cq = nullptr;
  ibv_qp *a = nullptr, *b = nullptr;
  ibv_mr* mr = nullptr;
  alignas(64) uint64_t buf[16] = {};
  Pair(Dev& dev, ibv_comp_channel* ch, void* cq_context) : d(dev) {
    cq = ibv_create_cq(d.ctx, 64, cq_context, ch, 0);
    if (!cq) return;
    a = make_rc(d, cq);
    b = make_rc(d, cq);
    if (!a || !b || connect_rc(a, b->qp_num, lid_of(d)) || connect_rc(b, a->qp_num, lid_of(d))) return;
    mr = ibv_reg_mr(d.pd, buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  }
  bool ok() const { return cq && a && b && mr; }
  int post_write() {  // a signaled 8-byte RDMA write from a to b: one CQE on cq
    ibv_sge s{uint64_t(uintptr_t(&buf[0])), 8, mr->lkey};
    ibv_send_wr wr{}, *bad;
    wr.sg_list = &s;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = uint64_t(uintptr_t(&buf[8]));
    wr.wr.rdma.rkey = mr->rkey;
    return ibv_post_send(a, &wr, &bad);
  }
  bool completion() {  // polls the CQ (never the channel) for that CQE
    ibv_wc wc{};
    uint64_t t0 = mono_ns();
    for (uint64_t i = 0;; ++i) {
      int n = ibv_poll_cq(cq, 1, &wc);
      if (n) return n == 1 && wc.status == IBV_WC_SUCCESS;
      if (mono_ns() - t0 > 30000000000ull) return false;
      if (i > 10000) usleep(20);
    }
  }
  void destroy_qps() {
    if (a) ibv_destroy_qp(a);
    if (b) ibv_destroy_qp(b);
    a = b = nullptr;
  }
  ~Pair() {
    destroy_qps();
    if (mr) ibv_dereg_mr(mr);
    if (cq) ibv_destroy_cq(cq);
  }
};

bool readable_now(int fd) {
  pollfd p{fd, POLLIN, 0};
  return poll(&p, 1, 0) == 1;
}

// Exercises every way an event is observed with the delay of SOFTHCA_EVENT_DELAY_US (0 too).
// Prints "early E of R": in how many of R rounds the channel's fd was already readable when the
// CQE had just been polled (with a delay, normally none). Returns 0, or the failing line.
int peer_events() {
  const char* e = getenv("SOFTHCA_EVENT_DELAY_US");
  const uint64_t delay = e ? uint64_t(std::llround(strtod(e, nullptr) * 1000)) : 0;  // ns
  void* const kCtx1 = reinterpret_cast<void*>(0x77);
  void* const kCtx2 = reinterpret_cast<void*>(0x88);
  Dev d;
  CHECK(d.pd);
  ibv_comp_channel* ch = ibv_create_comp_channel(d.ctx);
  CHECK(ch);
  auto p1 = std::make_unique<Pair>(d, ch, kCtx1);
  auto p2 = std::make_unique<Pair>(d, ch, kCtx2);
  CHECK(p1->ok() && p2->ok());

  // 1. A thread asleep in ibv_get_cq_event wakes no earlier than the delay after the CQE was
  //    written (t0 is taken before the post, so before the CQE), and the CQ is pollable meanwhile.
  for (int round = 0; round < 3; ++round) {
    CHECK(ibv_req_notify_cq(p1->cq, 0) == 0);
    std::atomic<uint64_t> woke{0};
    std::atomic<int> bad{0};
    std::thread sleeper([&] {
      ibv_cq* ev = nullptr;
      void* ctx = nullptr;
      int r = ibv_get_cq_event(ch, &ev, &ctx);
      uint64_t t = mono_ns();
      if (r != 0 || ev != p1->cq || ctx != kCtx1) bad = 1;
      if (r == 0) ibv_ack_cq_events(ev, 1);
      woke = t;
    });
    usleep(20000);  // asleep by now, most likely (not needed for what is checked)
    CHECK(woke.load() == 0);  // no event without a CQE
    uint64_t t0 = mono_ns();
    CHECK(p1->post_write() == 0);
    CHECK(p1->completion());
    sleeper.join();
    CHECK(bad.load() == 0);
    CHECK(woke.load() - t0 >= delay);
  }

  // 2. poll() and epoll (with an eventfd, as a progress thread waits) on the channel's fd: not
  //    readable before the delay; one event, then EAGAIN on the non-blocking fd.
  CHECK(fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK) == 0);
  int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  int ep = epoll_create1(EPOLL_CLOEXEC);
  CHECK(efd >= 0 && ep >= 0);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = efd;
  CHECK(epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev) == 0);
  ev.data.fd = ch->fd;
  CHECK(epoll_ctl(ep, EPOLL_CTL_ADD, ch->fd, &ev) == 0);
  const int kRounds = 6;
  int early = 0;
  for (int round = 0; round < kRounds; ++round) {
    CHECK(ibv_req_notify_cq(p1->cq, 0) == 0);
    CHECK(!readable_now(ch->fd));
    uint64_t t0 = mono_ns();
    CHECK(p1->post_write() == 0);
    CHECK(p1->completion());  // the CQE is there without waiting for the event
    if (readable_now(ch->fd)) {
      early++;
      CHECK(mono_ns() - t0 >= delay);  // readable by now: the delay must be over
    }
    if (round % 2 == 0) {
      pollfd p{ch->fd, POLLIN, 0};
      CHECK(poll(&p, 1, 30000) == 1 && (p.revents & POLLIN));
    } else {
      epoll_event out[2];
      int n = epoll_wait(ep, out, 2, 30000);
      CHECK(n == 1 && out[0].data.fd == ch->fd);
    }
    CHECK(mono_ns() - t0 >= delay);
    ibv_cq* got = nullptr;
    void* ctx = nullptr;
    CHECK(ibv_get_cq_event(ch, &got, &ctx) == 0 && got == p1->cq && ctx == kCtx1);
    ibv_ack_cq_events(got, 1);
    errno = 0;
    CHECK(ibv_get_cq_event(ch, &got, &ctx) == -1 && errno == EAGAIN);  // exactly once
  }
  close(ep);
  close(efd);

  // 3. Two CQs on the channel: their events arrive in the order their CQEs were written, once.
  CHECK(ibv_req_notify_cq(p1->cq, 0) == 0);
  CHECK(ibv_req_notify_cq(p2->cq, 0) == 0);
  uint64_t t0 = mono_ns();
  CHECK(p1->post_write() == 0);
  CHECK(p2->post_write() == 0);
  CHECK(p1->completion() && p2->completion());
  for (ibv_cq* want : {p1->cq, p2->cq}) {
    pollfd p{ch->fd, POLLIN, 0};
    CHECK(poll(&p, 1, 30000) == 1);
    CHECK(mono_ns() - t0 >= delay);
    ibv_cq* got = nullptr;
    void* ctx = nullptr;
    CHECK(ibv_get_cq_event(ch, &got, &ctx) == 0 && got == want);
    ibv_ack_cq_events(got, 1);
  }
  usleep(useconds_t(2 * delay / 1000 + 20000));
  CHECK(!readable_now(ch->fd));  // nothing twice

  // 4. A CQ destroyed while its event is delayed: the destroy does not wait for it, and the event
  //    never reaches the channel. Then every CQ is gone and the channel can go.
  auto p3 = std::make_unique<Pair>(d, ch, nullptr);
  CHECK(p3->ok());
  CHECK(ibv_req_notify_cq(p3->cq, 0) == 0);
  CHECK(p3->post_write() == 0);
  CHECK(p3->completion());
  p3->destroy_qps();
  CHECK(ibv_destroy_cq(p3->cq) == 0);
  p3->cq = nullptr;
  p3.reset();
  usleep(useconds_t(2 * delay / 1000 + 20000));
  CHECK(!readable_now(ch->fd));
  p1.reset();
  p2.reset();
  CHECK(ibv_destroy_comp_channel(ch) == 0);

  // 5. The process exits with an event still delayed (nothing destroyed): no crash, no hang.
  ibv_comp_channel* ch2 = ibv_create_comp_channel(d.ctx);
  CHECK(ch2);
  auto* p4 = new Pair(d, ch2, nullptr);  // left to the exit
  CHECK(p4->ok());
  CHECK(ibv_req_notify_cq(p4->cq, 0) == 0);
  CHECK(p4->post_write() == 0);
  CHECK(p4->completion());
  printf("early %d of %d\n", early, kRounds);
  fflush(stdout);
  exit(0);  // without the destructors of d
}

int peer(const char* mode) {
  std::string m = mode;
  if (m == "events") return peer_events();
  if (m == "noop") return 0;
  return 100;
}

// ---- the tests: run children, with their stdout and stderr ---------------------------------------

struct Outcome {
  int status = -1;  // exit status, 128 + signal, or -1 when it had to be killed
  std::string out;  // stdout and stderr
};

Outcome run(const char* mode, const std::vector<std::string>& env, int timeout_s = 120) {
  Outcome r;
  int pfd[2];
  if (pipe2(pfd, O_CLOEXEC)) return r;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, pfd[1], 1);
  posix_spawn_file_actions_adddup2(&fa, pfd[1], 2);
  const pid_t pid = spawn_self(mode, env, &fa);
  posix_spawn_file_actions_destroy(&fa);
  close(pfd[1]);
  if (pid < 0) {
    close(pfd[0]);
    return r;
  }
  uint64_t deadline = mono_ns() + uint64_t(timeout_s) * 1000000000ull;
  bool hung = false;
  for (;;) {
    uint64_t now = mono_ns();
    if (now >= deadline) {
      hung = true;
      break;
    }
    pollfd p{pfd[0], POLLIN, 0};
    if (poll(&p, 1, int((deadline - now) / 1000000 + 1)) <= 0) continue;
    char b[4096];
    ssize_t n = read(pfd[0], b, sizeof b);
    if (n <= 0) break;  // EOF: the child is gone
    r.out.append(b, size_t(n));
  }
  close(pfd[0]);
  if (hung) kill(pid, SIGKILL);
  int st = 0;
  waitpid(pid, &st, 0);
  r.status = hung ? -1 : WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return r;
}

std::vector<std::string> with_delay(const char* v) {
  return {std::string("SOFTHCA_EVENT_DELAY_US=") + v, "SOFTHCA_CHAOS=0", "SOFTHCA_DEFER=0",
          "SOFTHCA_LATE_SOURCE=0", "SOFTHCA_REORDER=0", "SOFTHCA_COMPLETION_DELAY_US=0"};
}

int early_rounds(const std::string& out, int* rounds) {
  int e = -1;
  size_t at = out.find("early ");
  if (at == std::string::npos || sscanf(out.c_str() + at, "early %d of %d", &e, rounds) != 2) return -1;
  return e;
}

TEST(EventDelay, SleeperAndPollerSeeTheEventOnlyAfterTheDelay) {
  Outcome r = run("events", with_delay("50000.5"));  // 50 ms: fractions allowed
  ASSERT_EQ(r.status, 0) << r.out;
  printf("50000.5 us: %s", r.out.c_str());
  int rounds = 0, early = early_rounds(r.out, &rounds);
  ASSERT_GE(early, 0) << r.out;
  // The CQE polled, the fd was not yet readable: at least once (a round fails this only if the
  // test was descheduled for the whole delay between its post and its look at the fd).
  EXPECT_LT(early, rounds) << r.out;
}

TEST(EventDelay, ShortDelay) {
  Outcome r = run("events", with_delay("54.5"));
  EXPECT_EQ(r.status, 0) << r.out;
}

TEST(EventDelay, ZeroIsTheUndelayedModel) {
  Outcome r = run("events", with_delay("0"));
  EXPECT_EQ(r.status, 0) << r.out;
  printf("0 us: %s", r.out.c_str());  // normally every round: the event is raised in the post
  Outcome unset = run("events", with_delay(""));  // empty: as unset
  EXPECT_EQ(unset.status, 0) << unset.out;
}

TEST(EventDelay, BadValuesStopTheProcessWithOneLine) {
  for (const char* bad : {"-1", "-0.5", "abc", "12us", "nan", "inf", "1e12", "10000000.5", "0x"}) {
    Outcome r = run("noop", with_delay(bad));
    EXPECT_EQ(r.status, 1) << bad << ": " << r.out;
    EXPECT_NE(r.out.find(std::string("SOFTHCA_EVENT_DELAY_US=") + bad + " rejected"), std::string::npos)
        << bad << ": " << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << bad << ": " << r.out;
  }
  for (const char* good : {"0", "12", "54.5", "10000000"}) {
    Outcome r = run("noop", with_delay(good));
    EXPECT_EQ(r.status, 0) << good << ": " << r.out;
  }
}

}  // namespace

int main(int argc, char** argv) { return softhca_test_main(argc, argv, "event_delay_test", peer); }
