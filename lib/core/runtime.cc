#include "lib/core/runtime.h"

#include <sched.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "lib/atomics/wide.h"
#include "lib/base/parse.h"
#include "lib/core/accumulate.h"
#include "lib/core/hybrid_lock.h"
#include "lib/core/messages.h"
#include "lib/core/rdma.h"
#include "lib/core/team.h"
#include "lib/core/version.h"
#include "lib/transport/net/peer.h"
#include "lib/transport/shm/put_copy.h"

namespace hoshmem {

Runtime rt;

namespace {

void abort_job(int status, const char *message) {
  if (rt.boot) rt.boot->abort(status, message);
  _exit(status);
}

constexpr const char *kCpusKey = "hoshmem.cpus";
constexpr int kPeerLostGraceMs = 5000;  // see set_peer_lost_grace

// True when the PEs of this node cannot each have a CPU of their own: more PEs than the CPUs they
// may run on together, or two PEs bound to the same single CPU. Spinning would then only steal
// time from the PE being waited for.
bool node_is_oversubscribed(Bootstrap &boot) {
  cpu_set_t all, singles;
  CPU_ZERO(&all);
  CPU_ZERO(&singles);
  bool shared_single = false;
  for (int pe : boot.local_ranks()) {
    std::vector<uint8_t> bytes = boot.get(pe, kCpusKey);
    cpu_set_t mask;
    CPU_ZERO(&mask);
    memcpy(&mask, bytes.data(), std::min(bytes.size(), sizeof mask));
    if (CPU_COUNT(&mask) == 1) {
      cpu_set_t both;
      CPU_AND(&both, &mask, &singles);
      shared_single = shared_single || CPU_COUNT(&both) > 0;
      CPU_OR(&singles, &singles, &mask);
    }
    CPU_OR(&all, &all, &mask);
  }
  const int cpus = std::min(CPU_COUNT(&all), get_nprocs());
  return shared_single || static_cast<int>(boot.local_ranks().size()) > cpus;
}

// At process exit. A PE that returns from main (or exits) with status 0 while still initialized
// finalizes implicitly, as other OpenSHMEM libraries do, so programs that omit shmem_finalize
// run unchanged. A non-zero exit does not: that PE stays "exited without finalize" for the
// launcher, which tears the job down at once instead of letting the other PEs wait for it. Only a
// finalized PE disconnects from the launcher cleanly.
//
// exit() runs its handlers in the reverse order of their registration, the destructors of
// function-local statics (ours, libstdc++'s, the verbs provider's) among them. A static first
// constructed after this handler was registered is destroyed before it runs. So the handler is
// registered at the end of the first init, after everything init creates, and the state the
// finalize needs lives in `rt` (constructed when the library is loaded, destroyed after).
void finish_at_exit(int status, void *) {
  if (status == 0)
    while (rt.initialized) runtime_finalize();
  if (rt.boot && !rt.initialized) rt.boot->finalize();
}

WaitPolicy choose_wait_policy(const std::string &how, bool oversubscribed) {
  WaitPolicy p;
  if (how == "spin" || (how == "auto" && !oversubscribed)) return p;
  p.spin_iterations = 0;
  if (how == "sleep") p.yield_iterations = 0;
  if (how == "yield") p.sleep_timeout_ns = 50 * 1000;
  return p;
}

}  // namespace

const char *runtime_build_string() {
  return "hoshmem " HOSHMEM_VERSION ", built with g++ " __VERSION__;
}

void runtime_init(int requested, int *provided, const char *routine) {
  std::lock_guard<std::recursive_mutex> guard(rt.setup_mutex);
  if (requested < SHMEM_THREAD_SINGLE || requested > SHMEM_THREAD_MULTIPLE)
    fatal(routine, "requested thread level %d is not SHMEM_THREAD_SINGLE, _FUNNELED, _SERIALIZED "
          "or _MULTIPLE (%d-%d)", requested, SHMEM_THREAD_SINGLE, SHMEM_THREAD_MULTIPLE);
  // Every level is provided as requested, and used: below MULTIPLE no lock that only concurrent
  // threads need is taken (ThreadLock). A later (counted) init keeps the first one's level.
  if (rt.init_count == 0) rt.thread_level = requested;
  if (provided) *provided = rt.thread_level;
  if (rt.init_count++ > 0) return;  // 1.6: init is counted; only the first one sets up

  set_abort_hook(abort_job);
  // The launcher connection outlives a finalize: a job that initializes again (1.6) keeps it,
  // and it is closed at exit, which is where the launcher expects a finalized PE to disconnect.
  if (!rt.boot) {
    rt.boot = make_bootstrap();
  } else {
    rt.boot->begin_session();
  }
  Bootstrap &boot = *rt.boot;
  set_error_identity(boot.rank());
  // A launcher tears the job down within about a second of a PE's death and names it; a PE that
  // finds a peer silent first waits that long, so the line users see names the dead PE.
  set_peer_lost_grace(boot.size() > 1 ? kPeerLostGraceMs : 0);
  rt.config = load_config();
  rt.me = boot.rank();
  rt.npes = boot.size();
  rt.debug = rt.config.debug;
  bool copy_forced = false;
  const char *copy = shm::put_copy_in_use(&copy_forced);
  if (rt.config.put_copy != "auto" && rt.config.put_copy != copy)
    fatal(routine,
          "HOSHMEM_PUT_COPY=%s cannot be used: %s (the puts use %s)", rt.config.put_copy.c_str(),
          copy_forced ? "the variable changed after the library was loaded"
                      : "this CPU lacks its instructions, or the variable was set after start",
          copy);

  boot.group_nodes(static_cast<int>(rt.config.pes_per_node));
  const int local = static_cast<int>(boot.node_ranks().size());
  const bool spans_nodes = local != rt.npes;
  // Whether this PE can do HCA atomics goes out with the memory records (one exchange). Across
  // nodes the device is opened in any mode (RMA goes over RC), and so is UD: all-SW mode's AMOs
  // travel as messages (lib/core/messages.h).
  std::string no_hca, no_ud;
  rdma_probe(boot, spans_nodes, &no_hca);
  const bool ring = rt.config.am == "ring";  // messages through the receive rings, not UD
  if (ring && spans_nodes && rt.config.progress == "node")
    fatal(routine, "HOSHMEM_PROGRESS=node has a node's first PE serve its node's UD messages, and "
          "HOSHMEM_AM=ring gives every PE a ring of its own (use HOSHMEM_AM=ud, or "
          "HOSHMEM_PROGRESS=pe)");
  if (spans_nodes && !ring) messages_probe(boot, &no_ud);

  cpu_set_t my_cpus;
  CPU_ZERO(&my_cpus);
  sched_getaffinity(0, sizeof my_cpus, &my_cpus);
  boot.put(kCpusKey, &my_cpus, sizeof my_cpus);  // exchanged with the memory records below

  HeapConfig heap;
  heap.heap_size = rt.config.symmetric_size;
  heap.base_hint = rt.config.heap_base;
  heap.pages = rt.config.heap_pages == "4k"   ? HeapPages::k4K
               : rt.config.heap_pages == "2m" ? HeapPages::k2M
               : rt.config.heap_pages == "1g" ? HeapPages::k1G
                                              : HeapPages::kAuto;
  heap.share_globals = rt.config.share_globals;
  heap.shared_state = fast_path_state();
  heap.shared_state_bytes = fast_path_state_bytes();
  rt.memory.setup(boot, heap);
  rt.space = rt.memory.space();

  // The atomicity mode, the same on every PE: all-HW needs HCA atomics on all of them.
  int lacking = -1;
  for (int pe = 0; pe < rt.npes; ++pe)
    if (!rdma_capable(boot, pe, lacking < 0 ? &no_hca : nullptr) && lacking < 0) lacking = pe;
  const char *why = nullptr;
  auto mode = atomics::choose_mode({rt.config.atomics, lacking < 0}, &why);
  if (lacking >= 0 && rt.config.atomics == "hw")
    fatal(routine, "HOSHMEM_ATOMICS=hw, but PE %d cannot do HCA atomics: %s", lacking,
          no_hca.c_str());
  if (!mode) fatal(routine, "%s", why);
  rt.mode = *mode;
  if (rt.mode == atomics::AtomicityMode::AllHardware) {
    // The transport HCA atomics travel on (loopback on this node included).
    const std::string &t = rt.config.transport;
    if (t == "ud")
      fatal(routine, "HOSHMEM_TRANSPORT=ud cannot carry all-HW mode's atomics: UD has no RDMA "
            "atomics (use rc or dc, or HOSHMEM_ATOMICS=sw)");
  }
  // Coherent HCA atomics, a refinement of all-HW mode (HOSHMEM_COHERENT).
  const int incoherent = rdma_first_incoherent();
  rt.coherent = false;
  if (rt.mode != atomics::AtomicityMode::AllHardware) {
    if (rt.config.coherent == "on")
      fatal(routine, "HOSHMEM_COHERENT=on: coherent HCA atomics are a form of all-HW mode, and "
            "this job is all-SW");
  } else if (rt.config.coherent == "off") {
    rt.coherent_reason = "HOSHMEM_COHERENT=off";
  } else if (incoherent >= 0) {
    if (rt.config.coherent == "on")
      fatal(routine, "HOSHMEM_COHERENT=on, but PE %d's HCA does not execute 8-byte fetch-add and "
            "compare-swap as PCIe atomics (coherent with CPU atomics)", incoherent);
    rt.coherent_reason = "PE " + std::to_string(incoherent) + "'s HCA has no coherent (PCIe) "
                         "8-byte fetch-add and compare-swap";
  } else {
    rt.coherent = true;
    rt.coherent_reason = rt.config.coherent == "on"
                             ? "HOSHMEM_COHERENT=on"
                             : "auto: every PE's HCA executes 8-byte fetch-add and compare-swap "
                               "as PCIe atomics";
  }
  rt.spans_nodes = spans_nodes;
  if (rt.config.atomics != "auto")
    rt.mode_reason = "HOSHMEM_ATOMICS=" + rt.config.atomics;
  else if (rt.mode == atomics::AtomicityMode::AllHardware)
    rt.mode_reason = "auto: every PE has an RDMA device with atomics";
  else
    rt.mode_reason = "auto: PE " + std::to_string(lacking) + " cannot do HCA atomics: " + no_hca;
  rt.wait = choose_wait_policy(rt.config.wait, node_is_oversubscribed(boot));
  rt.wait.data_sleep = fast_path_data_sleep;
  if (rt.config.sleep_timeout_us) rt.wait.sleep_timeout_ns = rt.config.sleep_timeout_us * 1000;
  // Writes by RDMA from another node ring no doorbell: poll, then back off.
  if (spans_nodes) rt.wait.first_sleep_ns = std::min(10 * 1000L, rt.wait.sleep_timeout_ns);

  std::vector<shm::ControlBlock *> &controls = rt.controls;
  controls.assign(rt.npes, nullptr);
  rt.cpu_atomics_table = std::make_unique<bool[]>(rt.npes);
  for (int pe = 0; pe < rt.npes; ++pe) {
    controls[pe] = rt.memory.control(pe);
    rt.cpu_atomics_table[pe] =
        controls[pe] != nullptr && (rt.mode == atomics::AtomicityMode::AllSoftware || rt.coherent);
  }
  rt.control = controls.data();
  peer::routes = peer::Routes{rt.control, rt.memory.own_file(), shm::kControlBytes,
                              rt.space.heap.base, rt.space.data.base, rt.space.heap.size,
                              rt.space.data.size, rt.space.heap.mapped, rt.space.data.mapped,
                              nullptr};
  if (rt.mode == atomics::AtomicityMode::AllHardware) {
    rt.remote_atomics = rdma_start(boot);
    // UD messages reach other nodes' CPUs (owner computes); their AMO backend is not used.
    // With auto, a job UD cannot carry (mixed MTUs) goes without: owner computes is then off.
    rt.messages_in_hw = false;
    rt.messages_why_not = spans_nodes ? "HOSHMEM_AM=off" : "every PE on this node";
    if (spans_nodes && ring)
      rt.messages_in_hw = messages_start_ring() != nullptr;
    else if (spans_nodes && rt.config.am != "off")
      rt.messages_in_hw = messages_start(boot, false,
                                         rt.config.am == "auto" ? &rt.messages_why_not : nullptr);
    if (rt.messages_in_hw) {
      rt.wait.serve = messages_source();
      rt.wait.serve_thread = messages_thread();
    } else {
      messages_stop();
    }
  } else if (spans_nodes) {
    if (rt.config.am == "off")
      fatal(routine, "HOSHMEM_AM=off: all-SW mode's AMOs to other nodes are UD messages (use "
                     "auto, or HOSHMEM_ATOMICS=hw)");
    // Puts, gets and the library's messages over RC (or DC), or over UD with
    // HOSHMEM_TRANSPORT=ud.
    rt.rma_over_ud = rt.config.transport == "ud";
    if (ring) {
      // The rings' room is reserved with HCA fetch-adds on counters no CPU atomic touches.
      if (rt.rma_over_ud)
        fatal(routine, "HOSHMEM_AM=ring needs RDMA (rc or dc), and HOSHMEM_TRANSPORT=ud has none");
      if (lacking >= 0)
        fatal(routine, "HOSHMEM_AM=ring needs HCA atomics on every PE, and PE %d has none: %s",
              lacking, no_hca.c_str());
      rdma_start(boot);
      rt.remote_atomics = messages_start_ring();
    } else {
      rt.remote_atomics = messages_start(boot, rt.rma_over_ud);  // first: checks every PE has UD
      if (!rt.rma_over_ud) rdma_start(boot);
    }
    rt.wait.serve = messages_source();
    rt.wait.serve_thread = messages_thread();
  } else {
    rdma_stop();
  }
  rt.cpu_atomics_ok = rt.cpu_atomics_table.get();
  acc::accumulate_init();
  hybrid_lock::setup(routine);
  rt.barrier.setup(rt.me, controls, &rt.wait);
  create_predefined_teams();

  rt.initialized = true;
  publish_fast_path();
  rt.barrier.run();
  if (!rt.exit_hook_set) {  // last: see finish_at_exit
    on_exit(finish_at_exit, nullptr);
    rt.exit_hook_set = true;
  }

  if (rt.me == 0 && rt.config.info) runtime_print_info(stdout);
  else if (rt.me == 0 && rt.config.version) printf("%s\n", runtime_build_string());
  fflush(stdout);
}

void runtime_finalize() {
  std::lock_guard<std::recursive_mutex> guard(rt.setup_mutex);
  if (!rt.initialized) return;
  std::atomic_thread_fence(std::memory_order_seq_cst);  // quiet
  if (rt.remote_atomics) rt.remote_atomics->quiet();
  rt.barrier.run(rt.debug ? "shmem_finalize" : nullptr);
  if (--rt.init_count > 0) return;  // not the last finalize: it acts as barrier_all
  retract_fast_path();
  rt.initialized = false;
  if (rt.config.info) hybrid_lock::print_stats();
  destroy_all_teams();
  if (rt.remote_atomics) {
    // The last writes to other PEs (the barrier's, the teams') must be acknowledged before any
    // PE destroys the queue pairs they travel on: a write to a destroyed QP fails at the sender.
    rt.remote_atomics->quiet();
    rt.boot->barrier();
    messages_closing();
  }
  rt.remote_atomics = nullptr;
  rt.wait.serve = nullptr;
  rt.wait.serve_thread = nullptr;
  messages_stop();
  rdma_stop();  // before the memory it registered goes
  rt.memory.teardown();
  rt.space = SymmetricSpace{};
  rt.control = nullptr;
  peer::routes = peer::Routes{};
  rt.cpu_atomics_ok = nullptr;
  rt.npes = 0;
  rt.rma_over_ud = false;
  rt.messages_in_hw = false;
  set_abort_hook(nullptr);
}

void runtime_print_info(FILE *out) {
  char size[32];
  fprintf(out, "hoshmem: OpenSHMEM %d.%d, %s\n", SHMEM_MAJOR_VERSION, SHMEM_MINOR_VERSION,
          runtime_build_string());
  const int here = rt.boot ? static_cast<int>(rt.boot->node_ranks().size()) : 1;
  fprintf(out, "  PEs: %d, %d on this node%s, launcher: %s\n", rt.npes, here,
          rt.config.pes_per_node ? " (HOSHMEM_PES_PER_NODE)" : "",
          rt.boot ? rt.boot->launcher() : "-");
  fprintf(out, "  atomicity mode: %s (%s; %s)\n", atomics::mode_name(rt.mode),
          rt.coherent ? "coherent: CPU atomics on this node's PEs, the HCA's coherent 8-byte "
                        "fetch-add and compare-swap for other nodes, every other operation a "
                        "compare-swap loop on them"
          : rt.mode == atomics::AtomicityMode::AllHardware
              ? "every AMO by the HCA, to this node's PEs through loopback"
          : rt.spans_nodes
              ? "CPU atomics: on shared memory on this node, by the target PE for other nodes"
              : "CPU atomics on shared memory",
          rt.mode_reason.c_str());
  fprintf(out, "  RDMA device: %s\n", rdma_description().c_str());
  if (rt.mode == atomics::AtomicityMode::AllHardware)
    fprintf(out, "  coherent atomics: %s (%s)\n", rt.coherent ? "on" : "off",
            rt.coherent_reason.c_str());
  if (rt.mode != atomics::AtomicityMode::AllHardware && rt.rma_over_ud)
    fprintf(out, "  transport: %s; shared memory on this node\n", messages_description().c_str());
  else if (rt.mode != atomics::AtomicityMode::AllHardware && rt.spans_nodes)
    fprintf(out, "  transport: %s (puts and gets to other nodes over %s; shared memory on this "
            "node; %s) and %s\n", rdma_transport_name(), rdma_queues(),
            rdma_transport_reason().c_str(), messages_description().c_str());
  else if (rt.mode != atomics::AtomicityMode::AllHardware)
    fprintf(out, "  transport: none needed (every PE on this node: shared memory)\n");
  else
    fprintf(out, "  transport: %s (%s over %s%s; %s)\n", rdma_transport_name(),
            rt.spans_nodes ? "RMA to other nodes and every AMO" : "HCA atomics", rdma_queues(),
            rt.spans_nodes ? "; shared memory for puts and gets on this node" : "",
            rdma_transport_reason().c_str());
  if (rt.messages_in_hw)
    fprintf(out, "  active messages: %s (HOSHMEM_AM: to other nodes' CPUs, owner computes)\n",
            messages_description().c_str());
  else if (rt.mode == atomics::AtomicityMode::AllHardware && rt.spans_nodes)
    fprintf(out, "  active messages: none (%s)\n", rt.messages_why_not.c_str());
  if (rt.mode == atomics::AtomicityMode::AllHardware || (rt.spans_nodes && !rt.rma_over_ud)) {
    fprintf(out, "  posting: %s\n", rdma_post_path());
    fprintf(out, "  ack timeout: %s\n", rdma_ack_timeout().c_str());
    fprintf(out, "  registration cache: %s\n", rdma_cache_description().c_str());
    fprintf(out, "  network state: %s\n", rdma_footprint().c_str());
  }
  fprintf(out, "  accumulate: %s\n", acc::accumulate_rule().c_str());
  fprintf(out, "  locks: %s\n", hybrid_lock::description().c_str());
  fprintf(out, "  wide masked atomics: %s\n", atomics::wide_rule(rt.remote_atomics).c_str());
  fprintf(out, "  symmetric heap: %s at %p (%s on every PE)\n",
          format_size(rt.memory.heap_size(), size, sizeof size), rt.memory.heap_base(),
          rt.memory.same_address_everywhere() ? "same address" : "different addresses");
  const size_t page = rt.memory.page_size();
  fprintf(out, "  heap pages: %s (%s); hugetlb pages on %d of %d PEs of this node\n",
          page >= (size_t{1} << 30) ? "1 GiB" : page >= (size_t{2} << 20) ? "2 MiB" : "4 KiB",
          rt.memory.pages_reason().c_str(), rt.memory.node_pes_huge(), rt.memory.node_pes());
  fprintf(out, "  globals: %zu bytes of .data/.bss %s\n", rt.space.data.size,
          rt.space.data.size ? "remotely accessible" : "not shared (HOSHMEM_SHARE_GLOBALS=0)");
  const char *fast_off = fast_path_status();
  bool copy_forced = false;
  const char *copy = shm::put_copy_in_use(&copy_forced);
  fprintf(out, "  put copy: %s (%s)\n", copy,
          copy_forced ? "forced by HOSHMEM_PUT_COPY" : "the widest this CPU runs");
  fprintf(out, "  inline fast path: %s%s%s\n", fast_off ? "off (" : "on", fast_off ? fast_off : "",
          fast_off ? ")" : "");
  static const char *const kLevels[] = {"SINGLE", "FUNNELED", "SERIALIZED", "MULTIPLE"};
  fprintf(out, "  thread level: SHMEM_THREAD_%s%s\n", kLevels[rt.thread_level & 3],
          rt.thread_level == SHMEM_THREAD_MULTIPLE ? "" : " (no locks for concurrent threads)");
  fprintf(out, "  environment:\n");
  print_config(rt.config, out);
}

// --- error reports of the data path ---

void report_bad_pe(int pe, const char *routine) {
  if (!rt.initialized) fatal(routine, "called before shmem_init");
  fatal(routine, "PE %d is out of range [0, %d)", pe, rt.npes);
}

void report_not_symmetric(const void *addr, int pe, const char *routine) {
  if (!rt.initialized) fatal(routine, "called before shmem_init");
  fatal(routine, "address %p (target PE %d) is not symmetric: not in the symmetric heap nor in "
        "the executable's globals", addr, pe);
}

void report_out_of_bounds(const void *addr, size_t len, size_t room, const char *routine, int pe) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(addr);
  const char *segment = a - rt.space.heap.base < rt.space.heap.size ? "symmetric heap"
                        : a - rt.space.data.base < rt.space.data.size ? "global variables"
                                                                      : "symmetric segment";
  if (pe < 0)
    fatal(routine, "%zu bytes at %p run %zu bytes past the end of the %s", len, addr,
          len - room, segment);
  fatal(routine, "%zu bytes at %p run %zu bytes past the end of PE %d's %s", len, addr,
        len - room, pe, segment);
}

void report_misaligned(const void *addr, size_t alignment, const char *routine) {
  fatal(routine, "address %p is not aligned to %zu bytes", addr, alignment);
}

void check_off_node(const void *sym, size_t len, int pe, const char *routine) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(sym);
  size_t room;
  if (uintptr_t off = a - rt.space.heap.base; off < rt.space.heap.size)
    room = rt.space.heap.size - off;
  else if (uintptr_t off = a - rt.space.data.base; off < rt.space.data.size)
    room = rt.space.data.size - off;
  else
    report_not_symmetric(sym, pe, routine);
  if (len > room) report_out_of_bounds(sym, len, room, routine, pe);
}

void report_null(const char *what, const char *routine) {
  fatal(routine, "%s is NULL with a nonzero length", what);
}

}  // namespace hoshmem
