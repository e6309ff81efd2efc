#include "lib/core/config.h"

#include <cstdlib>
#include <cstring>

#include <shmem.h>  // HOSHMEM_FAST_HEAP_BASE

#include "lib/base/error.h"
#include "lib/base/parse.h"

#define HOSHMEM_STRINGIFY_(x) #x
#define HOSHMEM_STRINGIFY(x) HOSHMEM_STRINGIFY_(x)

namespace hoshmem {
namespace {

struct Variable {
  const char *name;
  const char *deprecated_name;  // the SMA_ spelling, if any (the SHMEM_ one wins)
  const char *default_value;
  const char *accepted;
  const char *description;
};

constexpr Variable kVariables[] = {
    {"SHMEM_SYMMETRIC_SIZE", "SMA_SYMMETRIC_SIZE", "1G",
     "a byte count with optional K/M/G/T suffix, e.g. 512M",
     "size of the symmetric heap of each PE"},
    {"SHMEM_DEBUG", "SMA_DEBUG", "0", "0 or 1",
     "check the arguments of every call (PE range, symmetric address, bounds, alignment)"},
    {"SHMEM_INFO", "SMA_INFO", "0", "0 or 1",
     "PE 0 prints the version, the build and every variable at shmem_init"},
    {"SHMEM_VERSION", "SMA_VERSION", "0", "0 or 1", "PE 0 prints the library version at shmem_init"},
    {"HOSHMEM_ATOMICS", nullptr, "auto", "auto, sw or hw",
     "atomicity mode: sw = CPU atomics (software inter-node), hw = HCA atomics; auto = hw if an "
     "RDMA device is present"},
    {"HOSHMEM_COHERENT", nullptr, "auto", "auto, on or off",
     "all-HW mode with coherent HCA atomics: when every PE's HCA executes 8-byte fetch-add and "
     "compare-swap as PCIe atomics (coherent with CPU atomics), AMOs to this node's PEs are CPU "
     "atomics and every other HCA atomic becomes a compare-swap loop; auto = when every PE's "
     "HCA can, on = stop at shmem_init if one cannot, off = never"},
    // the inline fast path applies only to a heap at its default address
    {"HOSHMEM_HEAP_BASE", nullptr, HOSHMEM_STRINGIFY(HOSHMEM_FAST_HEAP_BASE),
     "an address (hex) or 0 for anywhere",
     "virtual address of the symmetric heap on every PE (only the default keeps the inline fast "
     "path on)"},
    {"HOSHMEM_HEAP_PAGES", nullptr, "auto", "auto, 4k, 2m or 1g",
     "page size of the symmetric heap: 2m/1g = hugetlb pages (reserved with vm.nr_hugepages), "
     "4k = ordinary pages with transparent huge pages advised; auto = 2m if enough are free"},
    {"HOSHMEM_SHARE_GLOBALS", nullptr, "1", "0 or 1",
     "make the executable's globals and statics remotely accessible"},
    {"HOSHMEM_WAIT", nullptr, "auto", "auto, spin, yield or sleep",
     "how a waiting PE waits: auto spins when every PE has a core, else yields then sleeps"},
    {"HOSHMEM_TRANSPORT", nullptr, "auto", "auto, rc, dc or ud",
     "inter-node transport (and, in all-HW mode, the one HCA loopback uses): auto = dc when "
     "every PE's device has DC and the job has at least 16 PEs, else rc; ud (all-SW mode "
     "only): puts, gets and AMOs to other nodes as UD messages, one queue pair per PE; in "
     "all-SW mode AMOs are UD messages either way"},
    {"HOSHMEM_ACC", nullptr, "auto", "auto, owner, caller or nic",
     "how one-sided accumulates (shmemx_TYPENAME_OP_accumulate) update the target: auto = in "
     "all-HW mode the HCA computes 32/64-bit integers element by element, in a one-node all-SW "
     "job CPU atomics per element, otherwise under the target's stripe locks, computed by the "
     "target's CPU (owner, all-SW mode across nodes) or else the caller; owner, caller = every "
     "type under the stripe locks, other nodes' PEs computing or the caller (owner: all-SW "
     "only); nic = auto, refused in all-SW mode"},
    {"HOSHMEM_AM", nullptr, "auto", "auto, ud, ring or off",
     "active messages to another node's CPU (all-SW mode's AMOs, owner computes accumulates): "
     "auto, ud = UD messages with a progress thread per PE; ring = one receive ring per PE "
     "written with RDMA over rc or dc, room reserved with HCA fetch-adds (every PE needs HCA "
     "atomics), a progress thread woken by writes with immediate; off = none in all-HW mode "
     "(all-SW mode refuses it)"},
    {"HOSHMEM_PROGRESS", nullptr, "pe", "pe or node",
     "who serves the UD messages that reach a node (AMOs and accumulates executed by the "
     "target's CPU, lock managers, puts and gets with HOSHMEM_TRANSPORT=ud): pe = every PE its "
     "own, on its own UD queue pair and progress thread; node = the node's first PE for all of "
     "them (one queue pair and one thread take every request; the others' threads only see "
     "answers to their own requests)"},
    {"HOSHMEM_LOCK", nullptr, "auto", "auto, mcs or hybrid",
     "shmem_set_lock and friends: mcs = a queue lock whose every step uses the job's atomics "
     "(HCA loopback included in all-HW mode); hybrid = a lock that migrates between CPU atomics "
     "on its home's node and HCA atomics for everyone, with a lock manager on the home for "
     "other nodes' PEs while it is in CPU mode; auto = hybrid in all-HW mode when every "
     "manager can be reached (one node, or messages to other nodes), else mcs"},
    {"HOSHMEM_LOCK_HOME", nullptr, "hash", "hash or pe0",
     "the PE a lock lives on (the MCS tail, the hybrid lock's words and manager): hash = chosen "
     "from the lock's address, so many locks spread over the PEs; pe0 = every lock on PE 0"},
    {"HOSHMEM_LOCK_POLICY", nullptr, "4", "eager, always or an acquisition count 1 to 65535",
     "hybrid locks: when a lock migrates to the side that asks for it: N = after N acquisitions "
     "in a row from the side that does not own its mode (hysteresis); eager = at the first "
     "(1); always = eager, and each release by the home's node flips the mode too (tests)"},
    {"HOSHMEM_DCI_COUNT", nullptr, "8", "1 to 64",
     "DC: initiators per context (the default context's and each context's own); a peer keeps "
     "one while it has operations outstanding"},
    // read by lib/bootstrap (below this layer), listed here for SHMEM_INFO
    {"HOSHMEM_PMI", nullptr, "pmi1", "pmi1 or pmi2",
     "under a PMI launcher (PMI_FD in the environment: MPICH's Hydra, srun --mpi=pmi2), the "
     "protocol version spoken to it; PMIx launchers are recognized by PMIX_NAMESPACE"},
    {"HOSHMEM_DEVICE", nullptr, "", "a device name, optionally with :port (e.g. mlx5_0:1)",
     "the RDMA device and port (default: the first active port of the device nearest to the "
     "PE's CPUs by PCI locality, else of the first device)"},
    {"HOSHMEM_IB_GID_INDEX", nullptr, "auto", "auto or 0 to 255",
     "the port's GID that sources every GRH (auto: RoCE the RoCE v2 GID of an IPv4 address, "
     "else of a routable IPv6 one, else the link-local one; InfiniBand 0)"},
    {"HOSHMEM_IB_TC", nullptr, "auto", "auto or 0 to 255",
     "traffic class of every GRH (auto: RoCE the port's configured class if the driver shows "
     "one, else 106, the class lossless RoCE setups reserve; InfiniBand 0)"},
    {"HOSHMEM_IB_SL", nullptr, "auto", "auto or 0 to 15 (RoCE: 0 to 7)",
     "service level of every queue pair and address (auto: RoCE 3, the priority lossless "
     "setups give traffic class 106; InfiniBand 0)"},
    {"HOSHMEM_PES_PER_NODE", nullptr, "0", "0 (as the launcher says) or a PE count",
     "treat each k consecutive PEs as one node (1: every PE on its own node, reached over the "
     "network); for testing inter-node paths on one machine"},
    {"HOSHMEM_RC_VERBS", nullptr, "0", "0 or 1",
     "1: drive RC queue pairs through ibv_post_send with standard atomics only, even on mlx5"},
    // the default is rc::Transport::kCacheThreshold
    {"HOSHMEM_RC_CACHE_MIN", nullptr, "64K", "a byte count (0: off)",
     "cache registrations of unregistered RMA buffers from this size up (only with the "
     "memory-release hooks in libc; SHMEM_INFO says if they are missing)"},
    // the default is rc::Transport::kDefaultAckTimeout
    {"HOSHMEM_RC_TIMEOUT", nullptr, "18", "1 to 31",
     "RC and DC: how long a queue pair waits for an acknowledgement before it sends again, "
     "4.096 us * 2^N (18: 1.07 s; 14: 67 ms); after 7 tries in a row the job stops"},
    // the default is rc::Transport::kLaneCqEntries
    {"HOSHMEM_RC_CQ_SIZE", nullptr, "4096", "entries, 16 to 4194303",
     "RC and DC: completion-queue entries asked for each context's lane (the device may give "
     "more); smaller makes tests reach a full CQ with few peers"},
    {"HOSHMEM_UD_WINDOW", nullptr, "32", "datagrams, 2 to 1024",
     "UD messages (AMOs across nodes in all-SW mode): datagrams in flight per peer, also the "
     "largest message in datagrams"},
    {"HOSHMEM_UD_RTO_US", nullptr, "1000", "microseconds, 10 to 10000000",
     "UD: the shortest retransmission timeout (a peer's is twice its measured round trip, at "
     "least this; doubles at each timeout, up to 100 ms)"},
    {"HOSHMEM_UD_GIVE_UP_MS", nullptr, "30000", "milliseconds, 100 to 3600000",
     "UD: a peer that answers nothing for this long is dead and the job stops"},
    {"HOSHMEM_UD_PROGRESS_THREAD", nullptr, "1", "0 or 1",
     "UD: a thread that sleeps until a message arrives and answers it; 0: messages are served "
     "only while the target PE is inside the library"},
    {"HOSHMEM_PUT_COPY", nullptr, "auto", "auto; x86-64: avx512, avx2 or sse2; aarch64: generic",
     "the put copy's instructions (auto: the widest this CPU has); read when the library is "
     "loaded, so it must be in the environment the program starts with"},
    {"HOSHMEM_SLEEP_TIMEOUT_US", nullptr, "0", "microseconds, 1 to 60000000, or 0 for the default",
     "how long a sleeping PE sleeps before it looks again (500, 50 with HOSHMEM_WAIT=yield): bounds "
     "the delay when a store raced its going to sleep"},
};

const Variable &variable(const char *name) {
  for (const Variable &v : kVariables)
    if (strcmp(v.name, name) == 0) return v;
  fatal("shmem_init", "internal: unknown variable %s", name);
}

// The raw text of a variable and which spelling provided it.
const char *raw(const Variable &v, const char **source) {
  if (const char *s = getenv(v.name)) {
    *source = v.name;
    return s;
  }
  if (v.deprecated_name) {
    if (const char *s = getenv(v.deprecated_name)) {
      *source = v.deprecated_name;
      return s;
    }
  }
  *source = nullptr;
  return v.default_value;
}

[[noreturn]] void reject(const Variable &v, const char *source, const char *text) {
  fatal("shmem_init", "invalid %s='%s': expected %s", source, text, v.accepted);
}

// The value of a variable through `parse` (text -> optional value); fatal when it fails.
template <class Parse>
auto parsed_var(const char *name, Parse parse) {
  const Variable &v = variable(name);
  const char *source;
  const char *text = raw(v, &source);
  auto value = parse(text);
  if (!value) reject(v, source ? source : name, text);
  return *value;
}

uint64_t size_var(const char *name) {
  return parsed_var(name, [](const char *text) {
    auto bytes = parse_size(text);
    return bytes && *bytes <= (uint64_t{1} << 44) ? bytes : std::nullopt;  // 16 TiB at most
  });
}
bool bool_var(const char *name) { return parsed_var(name, parse_bool); }
uint64_t uint_var(const char *name) { return parsed_var(name, parse_uint); }

std::string choice_var(const char *name, std::initializer_list<const char *> choices) {
  const Variable &v = variable(name);
  const char *source;
  const char *text = raw(v, &source);
  for (const char *c : choices)
    if (strcmp(c, text) == 0) return text;
  reject(v, source ? source : name, text);
}

}  // namespace

Config load_config() {
  Config c;
  const char *unused_source;
  c.symmetric_size = size_var("SHMEM_SYMMETRIC_SIZE");
  c.debug = bool_var("SHMEM_DEBUG");
  c.info = bool_var("SHMEM_INFO");
  c.version = bool_var("SHMEM_VERSION");
  c.atomics = choice_var("HOSHMEM_ATOMICS", {"auto", "sw", "hw"});
  c.coherent = choice_var("HOSHMEM_COHERENT", {"auto", "on", "off"});
  c.heap_base = uint_var("HOSHMEM_HEAP_BASE");
  c.heap_pages = choice_var("HOSHMEM_HEAP_PAGES", {"auto", "4k", "2m", "1g"});
  c.share_globals = bool_var("HOSHMEM_SHARE_GLOBALS");
  c.wait = choice_var("HOSHMEM_WAIT", {"auto", "spin", "yield", "sleep"});
  c.transport = choice_var("HOSHMEM_TRANSPORT", {"auto", "rc", "dc", "ud"});
  c.acc = choice_var("HOSHMEM_ACC", {"auto", "owner", "caller", "nic"});
  c.am = choice_var("HOSHMEM_AM", {"auto", "ud", "ring", "off"});
  c.progress = choice_var("HOSHMEM_PROGRESS", {"pe", "node"});
  c.lock = choice_var("HOSHMEM_LOCK", {"auto", "mcs", "hybrid"});
  c.lock_home = choice_var("HOSHMEM_LOCK_HOME", {"hash", "pe0"});
  c.lock_policy = parsed_var("HOSHMEM_LOCK_POLICY", [](const char *text) -> std::optional<uint64_t> {
    if (strcmp(text, "eager") == 0) return 1;
    if (strcmp(text, "always") == 0) return 0;
    auto n = parse_uint(text);
    return n && *n >= 1 && *n <= 65535 ? n : std::nullopt;
  });
  c.device = raw(variable("HOSHMEM_DEVICE"), &unused_source);  // checked when it is opened
  auto auto_or = [](uint64_t hi) {
    return [hi](const char *text) -> std::optional<int> {
      if (strcmp(text, "auto") == 0) return -1;
      auto v = parse_uint(text);
      return v && *v <= hi ? std::optional<int>(static_cast<int>(*v)) : std::nullopt;
    };
  };
  c.ib_gid_index = parsed_var("HOSHMEM_IB_GID_INDEX", auto_or(255));
  c.ib_tc = parsed_var("HOSHMEM_IB_TC", auto_or(255));
  c.ib_sl = parsed_var("HOSHMEM_IB_SL", auto_or(15));
  c.dci_count = parsed_var("HOSHMEM_DCI_COUNT", [](const char *text) {
    auto n = parse_uint(text);
    return n && *n >= 1 && *n <= 64 ? n : std::nullopt;
  });
  c.pes_per_node = parsed_var("HOSHMEM_PES_PER_NODE", [](const char *text) {
    auto k = parse_uint(text);
    return k && *k <= (1u << 30) ? k : std::nullopt;
  });
  // Read by the RC transport itself when it starts; checked here with the others.
  bool_var("HOSHMEM_RC_VERBS");
  size_var("HOSHMEM_RC_CACHE_MIN");
  auto in_range = [](uint64_t lo, uint64_t hi) {
    return [lo, hi](const char *text) {
      auto v = parse_uint(text);
      return v && *v >= lo && *v <= hi ? v : std::nullopt;
    };
  };
  parsed_var("HOSHMEM_RC_TIMEOUT", in_range(1, 31));  // read by the RC transport
  parsed_var("HOSHMEM_RC_CQ_SIZE", in_range(16, (1 << 22) - 1));  // read by the RC transport
  c.ud_window = parsed_var("HOSHMEM_UD_WINDOW", in_range(2, 1024));
  c.ud_rto_us = parsed_var("HOSHMEM_UD_RTO_US", in_range(10, 10'000'000));
  c.ud_give_up_ms = parsed_var("HOSHMEM_UD_GIVE_UP_MS", in_range(100, 3'600'000));
  c.ud_progress_thread = bool_var("HOSHMEM_UD_PROGRESS_THREAD");
  c.put_copy = choice_var("HOSHMEM_PUT_COPY", {"auto", "avx512", "avx2", "sse2", "generic"});
  c.sleep_timeout_us = parsed_var("HOSHMEM_SLEEP_TIMEOUT_US", [](const char *text) {
    auto us = parse_uint(text);
    return us && *us <= 60 * 1000 * 1000 ? us : std::nullopt;
  });
  return c;
}

void print_config(const Config &, FILE *out) {
  fprintf(out, "  %-22s %-16s %s\n", "variable", "value", "meaning");
  for (const Variable &v : kVariables) {
    const char *source;
    const char *text = raw(v, &source);
    fprintf(out, "  %-22s %-16s %s [%s%s]\n", v.name, *text ? text : "-", v.description,
            source ? "set by " : "default", source ? source : "");
  }
}

}  // namespace hoshmem
