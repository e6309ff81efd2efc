#include "tools/oshrun/job.h"

#include <fcntl.h>
#include <hwloc.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>

extern char** environ;

namespace oshrun {
namespace {

constexpr int kHandledSignals[] = {SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGQUIT};
// After the first SIGTERM, PEs get this long to exit before SIGKILL (the brief: all gone in 2 s).
constexpr auto kGracePeriod = std::chrono::milliseconds(1000);

sigset_t handled_set() {
  sigset_t set;
  sigemptyset(&set);
  for (int s : kHandledSignals) sigaddset(&set, s);
  return set;
}

std::string signal_name(int signo) {
  const char* abbrev = sigabbrev_np(signo);
  return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(signo);
}

std::string pes_text(int n) { return n == 1 ? "1 PE" : std::to_string(n) + " PEs"; }

std::string killed_suffix(int others) {
  if (others == 0) return "";
  return others == 1 ? " (killed the other PE)" : " (killed the other " + std::to_string(others) + " PEs)";
}

// Environment of the PEs: ours, minus PMIx variables of any launcher we run under (they
// would point the PEs at the wrong server), plus what PMIx_server_setup_fork gives.
// PMIX_MCA_* are user settings for the PMIx library and are kept.
std::vector<std::string> base_environment() {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string_view var = *e;
    if (var.starts_with("PMIX_") && !var.starts_with("PMIX_MCA_")) continue;
    env.emplace_back(var);
  }
  return env;
}

void set_variable(std::vector<std::string>& env, const std::string& assignment) {
  std::string name = assignment.substr(0, assignment.find('=') + 1);
  for (auto& var : env) {
    if (var.compare(0, name.size(), name) == 0) {
      var = assignment;
      return;
    }
  }
  env.push_back(assignment);
}

// An exit status is a status modulo 256, so a non-zero status that is 0 modulo 256 (e.g.
// shmem_global_exit(256)) would read as success: it becomes 255 (as in the library).
int exit_status_of(int status) { return status != 0 && (status & 0xff) == 0 ? 255 : status & 0xff; }

// Says which exit status a PE's status became, when they differ.
std::string mapped_text(int status) {
  const int code = exit_status_of(status);
  if (code == status) return "";
  return " (exit status " + std::to_string(code) + ": " + std::to_string(status) +
         ((status & 0xff) == 0 ? " is 0 modulo 256)" : " modulo 256)");
}

}  // namespace

std::vector<std::vector<int>> plan_binding(const Options& options) {
  std::vector<std::vector<int>> plan(options.num_pes);
  if (options.binding == Binding::kNone) return plan;

  hwloc_topology_t topology;
  if (hwloc_topology_init(&topology) != 0) return plan;
  if (hwloc_topology_load(topology) != 0) {
    hwloc_topology_destroy(topology);
    return plan;
  }
  // Cores this process may run on (hwloc drops disallowed ones); PUs if cores are unknown.
  hwloc_obj_type_t unit = HWLOC_OBJ_CORE;
  int units = hwloc_get_nbobjs_by_type(topology, unit);
  if (units <= 0) {
    unit = HWLOC_OBJ_PU;
    units = hwloc_get_nbobjs_by_type(topology, unit);
  }
  bool bind = units > 0 && (options.num_pes <= units || options.binding == Binding::kCore);
  if (bind && options.num_pes > units) {
    std::fprintf(stderr, "oshrun: warning: --bind-to core with %d PEs on %d cores: PEs share cores round-robin\n",
                 options.num_pes, units);
  }
  for (int pe = 0; bind && pe < options.num_pes; ++pe) {
    hwloc_obj_t obj = hwloc_get_obj_by_type(topology, unit, static_cast<unsigned>(pe % units));
    unsigned cpu;
    hwloc_bitmap_foreach_begin(cpu, obj->cpuset) { plan[pe].push_back(static_cast<int>(cpu)); }
    hwloc_bitmap_foreach_end();
  }
  hwloc_topology_destroy(topology);
  return plan;
}

void Job::block_signals() {
  sigset_t set = handled_set();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  // libpmix's server writes to client sockets without MSG_NOSIGNAL; a PE that dies mid-reply
  // would otherwise kill oshrun with SIGPIPE. PEs get the default back before exec.
  signal(SIGPIPE, SIG_IGN);
}

Job::Job(const Options& options, std::string program_path, ServerEvents& events)
    : options_(options), program_path_(std::move(program_path)), events_(events), pes_(options.num_pes) {
  sigset_t set = handled_set();
  signal_fd_ = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
}

Job::~Job() {
  // Never leave PEs behind, whatever path got us here.
  for (auto& pe : pes_) {
    if (pe.life_fd >= 0) close(pe.life_fd);
    if (!pe.alive) continue;
    kill(pe.pid, SIGKILL);
    waitpid(pe.pid, nullptr, 0);
  }
  if (signal_fd_ >= 0) close(signal_fd_);
}

bool Job::launch(PmixServer& server, const std::vector<std::vector<int>>& binding, std::string& error) {
  if (signal_fd_ < 0) {
    error = std::string("signalfd failed: ") + std::strerror(errno);
    return false;
  }
  std::vector<char*> argv;
  for (const auto& arg : options_.argv) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  const std::vector<std::string> common_env = base_environment();
  const pid_t parent = getpid();
  // Prepared before fork: the child of a multi-threaded process may only make async-signal-safe calls.
  const std::string exec_failed = "oshrun: cannot execute '" + program_path_ + "': ";

  for (int rank = 0; rank < options_.num_pes; ++rank) {
    std::vector<std::string> pmix_env;
    if (!server.prepare_client(rank, pmix_env, error)) return false;
    std::vector<std::string> env = common_env;
    for (const auto& var : pmix_env) set_variable(env, var);
    std::vector<char*> envp;
    for (const auto& var : env) envp.push_back(const_cast<char*>(var.c_str()));
    envp.push_back(nullptr);
    cpu_set_t cpus;
    CPU_ZERO(&cpus);
    for (int cpu : binding[rank]) CPU_SET(cpu, &cpus);
    const bool bind = !binding[rank].empty();
    int life[2];
    if (pipe2(life, O_CLOEXEC) != 0) {
      error = std::string("pipe failed: ") + std::strerror(errno);
      return false;
    }

    pid_t pid = fork();
    if (pid < 0) {
      error = std::string("fork failed: ") + std::strerror(errno);
      close(life[0]);
      close(life[1]);
      return false;
    }
    if (pid == 0) {
      // Die with oshrun even if it is SIGKILLed, so no PE outlives its launcher.
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(127);
      sigset_t none;
      sigemptyset(&none);
      sigprocmask(SIG_SETMASK, &none, nullptr);
      signal(SIGPIPE, SIG_DFL);
      if (rank > 0) {  // like mpirun: only the first PE reads oshrun's stdin
        int null_fd = open("/dev/null", O_RDONLY);
        if (null_fd >= 0) dup2(null_fd, STDIN_FILENO);
      }
      if (bind) sched_setaffinity(0, sizeof cpus, &cpus);
      fcntl(life[1], F_SETFD, 0);  // the PE keeps its end across exec, and never writes to it
      execve(program_path_.c_str(), argv.data(), envp.data());
      const char* reason = strerrordesc_np(errno);
      [[maybe_unused]] ssize_t n = write(STDERR_FILENO, exec_failed.data(), exec_failed.size());
      n = write(STDERR_FILENO, reason, std::strlen(reason));
      n = write(STDERR_FILENO, "\n", 1);
      _exit(127);
    }
    close(life[1]);
    pes_[rank] = {pid, true, life[0], 0};
  }
  return true;
}

int Job::live_count(int except) const {
  int n = 0;
  for (int r = 0; r < static_cast<int>(pes_.size()); ++r) n += pes_[r].alive && r != except;
  return n;
}

void Job::signal_all(int signo) {
  for (const auto& pe : pes_)
    if (pe.alive) kill(pe.pid, signo);
}

void Job::fail(int status, const std::string& line, int signo) {
  failed_ = true;
  exit_status_ = status;
  std::fprintf(stderr, "%s\n", line.c_str());
  std::fflush(stderr);
  signal_all(signo);
  kill_deadline_ = Clock::now() + kGracePeriod;
}

void Job::check_abort() {
  if (abort_seen_) return;
  auto request = events_.first_abort();
  if (!request) return;
  abort_seen_ = true;
  // A PE that died before this abort may be its cause (the aborting PE's fence failed because
  // of it): its pipe hang-up is already visible. Report such a death first, if it is one.
  note_deaths(0);
  std::vector<std::pair<int, int>> earlier;
  for (int r = 0; r < static_cast<int>(pes_.size()); ++r) {
    int wait_status;
    if (r != request->rank && pes_[r].alive && pes_[r].death_order && wait_for_exit(r, wait_status))
      earlier.emplace_back(r, wait_status);
  }
  handle_exits(std::move(earlier));
  if (failed_) return;
  // shmem_global_exit passes its own name as the message (older libraries: nothing), with the
  // program's status in parentheses when the library had to map it (256 -> 255); fatal library
  // errors pass the error text.
  std::string message = request->message;
  for (char& c : message)
    if (c == '\n' || c == '\r') c = ' ';
  const bool global_exit = message.empty() || message.find("shmem_global_exit") != std::string::npos;
  int status = request->status;
  int passed;
  char paren;
  if (global_exit && std::sscanf(message.c_str(), "shmem_global_exit(%d%c", &passed, &paren) == 2 &&
      paren == ')' && exit_status_of(passed) == exit_status_of(status))
    status = passed;
  std::string pe = "oshrun: PE " + std::to_string(request->rank);
  std::string line = global_exit ? pe + " called shmem_global_exit(" + std::to_string(status) + ")" + mapped_text(status)
                                 : pe + " aborted the job with status " + std::to_string(status) + mapped_text(status) +
                                       ": " + message;
  line += killed_suffix(live_count(request->rank));
  fail(exit_status_of(status), line, SIGTERM);  // the aborting PE too, if it lingers
}

void Job::on_pe_exit(int rank, int wait_status) {
  pes_[rank].alive = false;
  check_abort();  // an abort recorded before this exit must win over the exit itself
  if (failed_) return;
  std::string pe = "oshrun: PE " + std::to_string(rank);
  if (WIFSIGNALED(wait_status)) {
    int signo = WTERMSIG(wait_status);
    fail(128 + signo, pe + " died from " + signal_name(signo) + killed_suffix(live_count(rank)), SIGTERM);
  } else if (WEXITSTATUS(wait_status) != 0) {
    int code = WEXITSTATUS(wait_status);
    fail(code, pe + " exited with status " + std::to_string(code) + killed_suffix(live_count(rank)), SIGTERM);
  } else if (events_.connected(rank) && !events_.finalized(rank)) {
    fail(1, pe + " exited without calling shmem_finalize" + killed_suffix(live_count(rank)), SIGTERM);
  } else if (!events_.connected(rank)) {
    if (early_exit_rank_ < 0) early_exit_rank_ = rank;
    check_early_exit();
  }
}

// A PE that exited with status 0 before connecting (before shmem_init) is fine in a job of
// programs that never use SHMEM, but if any other PE connects, that one would wait for it in the
// PMIx fence forever: fail as soon as both are known, in whichever order they happen.
void Job::check_early_exit() {
  if (failed_ || early_exit_rank_ < 0) return;
  for (int r = 0; r < static_cast<int>(pes_.size()); ++r) {
    if (r == early_exit_rank_ || !events_.connected(r)) continue;
    fail(1,
         "oshrun: PE " + std::to_string(early_exit_rank_) +
             " exited (status 0) before shmem_init while other PEs were starting" + killed_suffix(live_count(-1)),
         SIGTERM);
    return;
  }
}

// Gives a PE that is known to be dying a moment to become a zombie.
bool Job::wait_for_exit(int rank, int& wait_status) {
  for (int i = 0; i < 200; ++i) {  // at most ~200 ms
    if (waitpid(pes_[rank].pid, &wait_status, WNOHANG) == pes_[rank].pid) return true;
    usleep(1000);
  }
  return false;
}

// Records, in the order seen, which PEs' life pipes hung up (i.e. which PEs are dying).
void Job::note_deaths(int timeout_ms) {
  std::vector<pollfd> fds;
  std::vector<int> ranks;
  for (int r = 0; r < static_cast<int>(pes_.size()); ++r) {
    if (pes_[r].life_fd < 0) continue;
    fds.push_back({pes_[r].life_fd, POLLIN, 0});
    ranks.push_back(r);
  }
  if (fds.empty() || poll(fds.data(), fds.size(), timeout_ms) <= 0) return;
  for (size_t i = 0; i < fds.size(); ++i) {
    if (!fds[i].revents) continue;
    Pe& pe = pes_[ranks[i]];
    pe.death_order = ++deaths_seen_;
    close(pe.life_fd);
    pe.life_fd = -1;
  }
}

void Job::reap() {
  std::vector<std::pair<int, int>> exited;  // (rank, wait status)
  for (;;) {
    int wait_status;
    pid_t pid = waitpid(-1, &wait_status, WNOHANG);
    if (pid <= 0) break;
    for (int r = 0; r < static_cast<int>(pes_.size()); ++r)
      if (pes_[r].alive && pes_[r].pid == pid) exited.emplace_back(r, wait_status);
  }
  handle_exits(std::move(exited));
}

// When one PE dies, PMIx fails the fences the others wait in, and they may exit with an error
// before oshrun looks. waitpid returns zombies in fork order, not in death order, so exits
// are handled in the order their life pipes hung up: the PE that died first is blamed.
void Job::handle_exits(std::vector<std::pair<int, int>> exited) {
  note_deaths(0);
  auto order = [&](int rank) { return pes_[rank].death_order ? pes_[rank].death_order : LONG_MAX; };
  // A PE that died earlier but is not a zombie yet (the kernel is still tearing it down) goes
  // first too: wait for it briefly.
  long latest = 0;
  for (const auto& e : exited) latest = std::max(latest, order(e.first));
  for (int r = 0; r < static_cast<int>(pes_.size()); ++r) {
    int wait_status;
    bool listed = std::any_of(exited.begin(), exited.end(), [&](const auto& e) { return e.first == r; });
    if (!listed && pes_[r].alive && pes_[r].death_order && pes_[r].death_order < latest &&
        wait_for_exit(r, wait_status))
      exited.emplace_back(r, wait_status);
  }
  std::stable_sort(exited.begin(), exited.end(),
                   [&](const auto& a, const auto& b) { return order(a.first) < order(b.first); });
  for (auto [rank, wait_status] : exited) on_pe_exit(rank, wait_status);
}

void Job::on_signal(int signo) {
  if (signo == SIGCHLD) {
    reap();
    return;
  }
  if (failed_) {  // a second interrupt: stop waiting politely
    signal_all(SIGKILL);
    killed_ = true;
    return;
  }
  fail(128 + signo, "oshrun: received " + signal_name(signo) + ", stopping " + pes_text(live_count(-1)), signo);
}

int Job::wait() {
  reap();  // PEs that exited before we started waiting
  while (live_count(-1) > 0) {
    check_abort();
    check_early_exit();
    int timeout_ms = -1;
    if (failed_ && !killed_) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(kill_deadline_ - Clock::now());
      timeout_ms = static_cast<int>(std::max<long>(0, left.count()));
    }
    std::vector<pollfd> fds = {{signal_fd_, POLLIN, 0}, {events_.wake_fd(), POLLIN, 0}};
    for (const auto& pe : pes_)
      if (pe.life_fd >= 0) fds.push_back({pe.life_fd, POLLIN, 0});
    int ready = poll(fds.data(), fds.size(), timeout_ms);
    if (ready < 0 && errno != EINTR) break;
    note_deaths(0);  // first, so deaths are ordered before the exits they caused
    if (fds[1].revents & POLLIN) events_.drain_wakeups();
    if (fds[0].revents & POLLIN) {
      signalfd_siginfo info;
      while (read(signal_fd_, &info, sizeof info) == sizeof info) on_signal(static_cast<int>(info.ssi_signo));
    }
    reap();  // SIGCHLDs coalesce; reaping on every wakeup is cheap and never misses one
    if (failed_ && !killed_ && Clock::now() >= kill_deadline_) {
      signal_all(SIGKILL);
      killed_ = true;
    }
  }
  return exit_status_;
}

}  // namespace oshrun
