// libsofthca_kernel.so: the kernel interfaces a real mlx5 HCA has and the model (a pair of
// user-space libraries) has not, shown to programs that look for them before they use verbs.
// Loaded with LD_PRELOAD (with-softhca does), it interposes on libc's stat, access, realpath and
// open/fopen entry points and changes nothing else:
//
//  * /dev/infiniband/uverbsN (N < SOFTHCA_NUM_DEVICES): the uverbs character device each
//    ibv_device names in dev_name. stat() reports a character device with the kernel's numbers
//    (major 231, minor 192 + N, mode 0666 as the rdma udev rules make it) and access() grants
//    read and write. Nothing is opened: the model needs no file descriptor.
//  * /sys/class/infiniband/mlx5_N (the ibdev_path the model gives each device, as rdma-core
//    does): realpath() resolves it, as sysfs would, into the PCI device's directory of a small
//    sysfs-like tree, <dir>/devices/pci0000:00/0000:NN:00.0/infiniband/mlx5_N, whose PCI
//    directory holds `vendor` (0x15b3, Mellanox's PCI vendor id; the IB vendor id the verbs
//    report is 0x02c9, as on real ConnectX) and `device` (the PCI device id, which on ConnectX
//    equals the verbs vendor_part_id: 0x101b for ConnectX-6), and the device's locality as
//    Linux gives it: `numa_node`, `local_cpus` (a hex mask in 32-bit words, highest first) and
//    `local_cpulist` ("0-3,8"). mlx5_N/device links to the PCI directory, as in sysfs.
//  * /sys/class/infiniband/mlx5_N/device/F, F one of those five files: open(), open64(),
//    openat(), openat64(), fopen() and fopen64() open the tree's file instead (what hwloc's
//    ibverbs helper and UCX read; numa_node and local_cpus are read without a realpath first).
//  * /sys/class/infiniband/mlx5_N/ports/P/...: the same calls open, read-only, the port's
//    gids/I (the kernel's text: 8 groups of 4 hex digits), gid_attrs/types/I ("IB/RoCE v1",
//    "RoCE v2"), gid_attrs/ndevs/I (RoCE only: the port's netdev, softhca<N>p<P>) and link_layer,
//    for the indices of the port's GID table; every other path under ports/ is absent. UCX reads
//    the types to choose a RoCE GID (v2 over v1) and the netdev for its LAG level. The values
//    are the model's (softhca_port_gid in its libibverbs, loaded if the process has none yet):
//    the GIDs derive from the process's fabric identity, so the text is the process's own, in an
//    anonymous memory file, not in the tree.
//
// Locality: without knobs every device has numa_node -1 and all CPUs local (a machine without
// NUMA). SOFTHCA_DEVICE_NUMA=0,1 puts mlx5_0 on node 0 and mlx5_1 on node 1 (devices beyond the
// list: -1); a node's CPUs are SOFTHCA_NUMA_CPUS's entry for it (cpulists separated by ':',
// "0-3:4-7": node 0 has CPUs 0-3, node 1 CPUs 4-7; a node without an entry has none), or by
// default the configured CPUs split into as many consecutive blocks as there are nodes.
//
// The tree is written under $TMPDIR (or /tmp), softhca-sysfs.<uid> (with the locality knobs set,
// softhca-sysfs.<uid>.<hash of their values>: runs with other values do not share it), and is
// the same for every process with the same knobs. Paths of other devices, and every other path,
// go to libc unchanged.
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <string>
#include <vector>

namespace {

constexpr unsigned kPciVendorMellanox = 0x15b3;
constexpr unsigned kPciDeviceConnectX6 = 0x101b;  // = verbs vendor_part_id 4123
constexpr unsigned kUverbsMajor = 231, kUverbsMinorBase = 192;

int num_devices() {
  const char* s = getenv("SOFTHCA_NUM_DEVICES");
  int n = s && *s ? atoi(s) : 1;
  return n < 0 ? 0 : n > 8 ? 8 : n;
}

// "<prefix><N>" with N a model device: returns N, else -1.
int model_index(const char* path, const char* prefix) {
  if (!path) return -1;
  size_t len = strlen(prefix);
  if (strncmp(path, prefix, len) != 0) return -1;
  const char* p = path + len;
  if (*p < '0' || *p > '9') return -1;
  char* end = nullptr;
  long n = strtol(p, &end, 10);
  if (*end != '\0' && strcmp(end, "/") != 0) return -1;
  return n < num_devices() ? static_cast<int>(n) : -1;
}

int uverbs_index(const char* path) { return model_index(path, "/dev/infiniband/uverbs"); }
int ibdev_index(const char* path) { return model_index(path, "/sys/class/infiniband/mlx5_"); }

// --- locality ----------------------------------------------------------------------------

[[noreturn]] void reject(const char* name, const char* value, const char* accepted) {
  fprintf(stderr, "softhca: %s=%s rejected: %s\n", name, value, accepted);
  exit(1);
}

// "0-3,8" (or empty) into CPU numbers; false if malformed.
bool parse_cpulist(const std::string& text, std::vector<int>* cpus) {
  const char* p = text.c_str();
  while (*p) {
    char* end = nullptr;
    long lo = strtol(p, &end, 10), hi = lo;
    if (end == p || *p == '-' || *p == '+' || *p == ' ') return false;
    if (*end == '-') {
      p = end + 1;
      hi = strtol(p, &end, 10);
      if (end == p || *p == '-' || *p == '+' || *p == ' ' || hi < lo) return false;
    }
    if (hi >= 4096) return false;
    for (long c = lo; c <= hi; ++c) cpus->push_back(static_cast<int>(c));
    p = end;
    if (*p == ',' && p[1]) ++p;
    else if (*p) return false;
  }
  return true;
}

int configured_cpus() {
  long n = sysconf(_SC_NPROCESSORS_CONF);
  return n < 1 ? 1 : static_cast<int>(n);
}

// A device's NUMA node (-1: none) and the CPUs local to it, from the knobs (read at every call,
// as SOFTHCA_NUM_DEVICES is).
struct Locality {
  int numa_node = -1;
  std::vector<int> cpus;
};

Locality device_locality(int index) {
  std::vector<int> nodes;  // SOFTHCA_DEVICE_NUMA: one per device
  if (const char* e = getenv("SOFTHCA_DEVICE_NUMA"); e && *e) {
    for (const char* p = e;;) {
      char* end = nullptr;
      long n = strtol(p, &end, 10);
      if (end == p || n < -1 || n > 63 || (*end && *end != ','))
        reject("SOFTHCA_DEVICE_NUMA", e, "expected NUMA nodes (-1..63) separated by commas");
      nodes.push_back(static_cast<int>(n));
      if (!*end) break;
      p = end + 1;
    }
  }
  Locality l;
  const int all = configured_cpus();
  if (index < static_cast<int>(nodes.size())) l.numa_node = nodes[static_cast<size_t>(index)];
  if (l.numa_node < 0) {  // no NUMA node: every CPU is local, as Linux says then
    for (int c = 0; c < all; ++c) l.cpus.push_back(c);
    return l;
  }
  if (const char* e = getenv("SOFTHCA_NUMA_CPUS"); e && *e) {
    std::string text = e;
    size_t start = 0;
    for (int node = 0;; ++node) {
      const size_t colon = text.find(':', start);
      std::vector<int> cpus;
      if (!parse_cpulist(text.substr(start, colon == std::string::npos ? colon : colon - start), &cpus))
        reject("SOFTHCA_NUMA_CPUS", e, "expected a CPU list (e.g. 0-3,8) per NUMA node, separated by ':'");
      if (node == l.numa_node) l.cpus = cpus;
      if (colon == std::string::npos) break;
      start = colon + 1;
    }
    return l;  // a node without an entry has no CPUs
  }
  int blocks = 1;  // the configured CPUs in consecutive blocks, one per node
  for (int n : nodes) blocks = n + 1 > blocks ? n + 1 : blocks;
  for (int c = 0; c < all; ++c)
    if (c * blocks / all == l.numa_node) l.cpus.push_back(c);
  return l;
}

// Linux's formats: local_cpus a hex mask in 32-bit words, highest first, separated by commas;
// local_cpulist ranges, "0-3,8".
std::string cpu_mask(const std::vector<int>& cpus) {
  int bits = configured_cpus();
  for (int c : cpus) bits = c + 1 > bits ? c + 1 : bits;
  std::vector<uint32_t> words(static_cast<size_t>((bits + 31) / 32), 0);
  for (int c : cpus) words[static_cast<size_t>(c / 32)] |= 1u << (c % 32);
  std::string s;
  char word[16];
  for (size_t w = words.size(); w-- > 0;) {
    snprintf(word, sizeof word, "%s%08x", s.empty() ? "" : ",", words[w]);
    s += word;
  }
  return s;
}

std::string cpu_list(const std::vector<int>& cpus) {
  std::string s;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    s += (s.empty() ? "" : ",") + std::to_string(cpus[i]);
    if (j > i) s += "-" + std::to_string(cpus[j]);
    i = j + 1;
  }
  return s;
}

// --- the sysfs-like tree --------------------------------------------------------------------

std::string tree_root() {
  const char* t = getenv("TMPDIR");
  std::string root = std::string(t && *t ? t : "/tmp") + "/softhca-sysfs." + std::to_string(getuid());
  const char* numa = getenv("SOFTHCA_DEVICE_NUMA");
  const char* cpus = getenv("SOFTHCA_NUMA_CPUS");
  if ((numa && *numa) || (cpus && *cpus)) {  // a tree per locality configuration
    const std::string key = std::string(numa ? numa : "") + ";" + (cpus ? cpus : "");
    uint64_t h = 1469598103934665603ull;  // FNV-1a
    for (char c : key) h = (h ^ static_cast<uint8_t>(c)) * 1099511628211ull;
    char tag[24];
    snprintf(tag, sizeof tag, ".%016llx", static_cast<unsigned long long>(h));
    root += tag;
  }
  return root;
}

std::string pci_dir(int index) {
  char bdf[32];
  snprintf(bdf, sizeof bdf, "0000:%02x:00.0", index + 1);
  return tree_root() + "/devices/pci0000:00/" + bdf;
}

void write_file(const std::string& path, const std::string& text) {
  std::string tmp = path + ".tmp." + std::to_string(getpid());
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return;
  ssize_t w = write(fd, text.data(), text.size());
  close(fd);
  if (w == static_cast<ssize_t>(text.size())) rename(tmp.c_str(), path.c_str());
  else unlink(tmp.c_str());
}

void mkdirs(const std::string& path) {
  for (size_t i = 1; i <= path.size(); ++i)
    if (i == path.size() || path[i] == '/') mkdir(path.substr(0, i).c_str(), 0755);
}

// Creates (idempotently, safe against concurrent processes) the device's tree; returns the
// resolved path of its ibdev directory.
std::string ensure_tree(int index) {
  std::string pci = pci_dir(index);
  std::string ibdev = pci + "/infiniband/mlx5_" + std::to_string(index);
  mkdirs(ibdev);
  [[maybe_unused]] int linked = symlink("../..", (ibdev + "/device").c_str());  // EEXIST later
  char buf[16];
  snprintf(buf, sizeof buf, "0x%04x\n", kPciVendorMellanox);
  write_file(pci + "/vendor", buf);
  snprintf(buf, sizeof buf, "0x%04x\n", kPciDeviceConnectX6);
  write_file(pci + "/device", buf);
  const Locality l = device_locality(index);
  write_file(pci + "/numa_node", std::to_string(l.numa_node) + "\n");
  write_file(pci + "/local_cpus", cpu_mask(l.cpus) + "\n");
  write_file(pci + "/local_cpulist", cpu_list(l.cpus) + "\n");
  return ibdev;
}

// /sys/class/infiniband/mlx5_N/device/F, N a model device and F a file of its PCI directory in
// the tree: that file's path in the tree (written now); else "".
std::string sysfs_file(const char* path) {
  static const char prefix[] = "/sys/class/infiniband/mlx5_", device[] = "/device/";
  if (!path || strncmp(path, prefix, sizeof prefix - 1) != 0) return "";
  const char* p = path + sizeof prefix - 1;
  if (*p < '0' || *p > '9') return "";
  char* end = nullptr;
  const long n = strtol(p, &end, 10);
  if (n >= num_devices() || strncmp(end, device, sizeof device - 1) != 0) return "";
  const std::string file = end + sizeof device - 1;
  for (const char* f : {"vendor", "device", "numa_node", "local_cpus", "local_cpulist"}) {
    if (file != f) continue;
    ensure_tree(static_cast<int>(n));
    return pci_dir(static_cast<int>(n)) + "/" + file;
  }
  return "";
}

template <typename F>
F next(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}

// --- per-port files: GIDs, their types and netdevs ------------------------------------------

// The model's softhca_port_gid (verbs.cc): GID `index` of a port as ibv_query_gid gives it and
// its IBV_GID_TYPE_*; `out` null for the type alone. The GIDs derive from the process's fabric
// identity (RoCE: its routing LID, known once it joined the fabric; IB: its GUID), so only the
// model's libibverbs can tell them: found where the process has it, else loaded now (the shim is
// preloaded before any libibverbs, and UCX's may be in a library dlopen'ed RTLD_LOCAL).
using PortGidFn = int (*)(int dev, int port, int index, uint8_t* out, int* type);

PortGidFn model_port_gid() {
  static std::atomic<PortGidFn> cached{nullptr};
  if (PortGidFn f = cached.load(std::memory_order_acquire)) return f;
  void* sym = dlsym(RTLD_DEFAULT, "softhca_port_gid");
  if (!sym) {
    void* lib = dlopen("libibverbs.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (!lib) lib = dlopen("libibverbs.so.1", RTLD_LAZY | RTLD_LOCAL);  // kept loaded
    if (lib) sym = dlsym(lib, "softhca_port_gid");
  }
  auto f = reinterpret_cast<PortGidFn>(sym);
  if (f) cached.store(f, std::memory_order_release);
  return f;  // null: no model here (rdma-core's libibverbs, or none)
}

// A sysfs file name that is a decimal number, as the kernel writes it ("0", "12"; not "01").
bool parse_index(const char* s, int* out) {
  if (*s < '0' || *s > '9' || (s[0] == '0' && s[1]) || strlen(s) > 4) return false;
  for (const char* p = s; *p; ++p)
    if (*p < '0' || *p > '9') return false;
  *out = atoi(s);
  return true;
}

// The netdev of a model RoCE port, a name no host interface has: UCX reads
// /sys/class/net/<it>/bonding/ad_num_ports (absent: no LAG) and, with UCX_IB_ROCE_LOCAL_SUBNET=y,
// looks it up with getifaddrs (absent: no subnet mask, every peer local).
std::string netdev_name(int dev, int port) {
  return "softhca" + std::to_string(dev) + "p" + std::to_string(port);
}

enum class PortPath { kOther, kAbsent, kFile };

// /sys/class/infiniband/mlx5_N/ports/P/..., N a model device: kFile with the file's content in
// `text` for the files presented (gids/I, gid_attrs/types/I, gid_attrs/ndevs/I, link_layer),
// kAbsent for every other path under ports/ (never a real device's file of the same name);
// kOther for paths outside it.
PortPath port_file(const char* path, std::string* text) {
  static const char prefix[] = "/sys/class/infiniband/mlx5_", ports[] = "/ports";
  if (!path || strncmp(path, prefix, sizeof prefix - 1) != 0) return PortPath::kOther;
  const char* p = path + sizeof prefix - 1;
  if (*p < '0' || *p > '9') return PortPath::kOther;
  char* end = nullptr;
  const long dev = strtol(p, &end, 10);
  if (dev >= num_devices() || strncmp(end, ports, sizeof ports - 1) != 0) return PortPath::kOther;
  p = end + sizeof ports - 1;
  if (*p != '/' && *p != '\0') return PortPath::kOther;  // "ports" exactly
  if (*p++ != '/' || *p < '1' || *p > '9') return PortPath::kAbsent;
  const long port = strtol(p, &end, 10);
  if (*end != '/') return PortPath::kAbsent;
  const std::string file = end + 1;
  int index = 0;
  enum { kGid, kType, kNdev, kLinkLayer } what;
  if (file.rfind("gids/", 0) == 0 && parse_index(file.c_str() + 5, &index)) what = kGid;
  else if (file.rfind("gid_attrs/types/", 0) == 0 && parse_index(file.c_str() + 16, &index)) what = kType;
  else if (file.rfind("gid_attrs/ndevs/", 0) == 0 && parse_index(file.c_str() + 16, &index)) what = kNdev;
  else if (file == "link_layer") what = kLinkLayer;
  else return PortPath::kAbsent;
  PortGidFn gid_of = model_port_gid();
  uint8_t gid[16];
  int type = 0;
  if (!gid_of || port > 255 ||
      gid_of(int(dev), int(port), index, what == kGid ? gid : nullptr, &type) != 0)
    return PortPath::kAbsent;  // no model, or no such port or GID table entry
  constexpr int kTypeIb = 0, kTypeRoceV2 = 2;  // IBV_GID_TYPE_IB, IBV_GID_TYPE_ROCE_V2
  switch (what) {
    case kGid: {  // the kernel's %pI6: 8 groups of 4 hex digits
      char s[48];
      for (int g = 0; g < 8; ++g) snprintf(s + g * 5, 6, "%02x%02x:", gid[2 * g], gid[2 * g + 1]);
      s[39] = '\n';
      text->assign(s, 40);
      break;
    }
    case kType:  // the kernel's names; an InfiniBand GID is "IB/RoCE v1" too
      *text = type == kTypeRoceV2 ? "RoCE v2\n" : "IB/RoCE v1\n";
      break;
    case kNdev:  // InfiniBand GIDs have no netdev (the kernel's read fails)
      if (type == kTypeIb) return PortPath::kAbsent;
      *text = netdev_name(int(dev), int(port)) + "\n";
      break;
    case kLinkLayer:
      *text = type == kTypeIb ? "InfiniBand\n" : "Ethernet\n";
      break;
  }
  return PortPath::kFile;
}

// A read-only descriptor reading `text` from its start (an anonymous memory file: the content is
// this process's, as the GIDs are), close-on-exec if `flags` asks.
int text_fd(const std::string& text, int flags) {
  int mem = memfd_create("softhca-sysfs", MFD_CLOEXEC);
  if (mem < 0) return -1;
  if (write(mem, text.data(), text.size()) != ssize_t(text.size())) {
    close(mem);
    errno = EIO;
    return -1;
  }
  char self[48];
  snprintf(self, sizeof self, "/proc/self/fd/%d", mem);
  static auto real_open = next<int (*)(const char*, int, ...)>("open");
  int fd = real_open(self, O_RDONLY | (flags & O_CLOEXEC));  // a read-only file description
  if (fd >= 0) {
    close(mem);
    return fd;
  }
  lseek(mem, 0, SEEK_SET);  // no /proc: the memory file itself
  if (!(flags & O_CLOEXEC)) fcntl(mem, F_SETFD, 0);
  return mem;
}

// open(2) of a model port's file: true with *fd the result (-1 and errno: EACCES for writing, as
// sysfs's 0444 files; ENOENT for files not presented), false for other paths.
bool open_port_file(const char* path, int flags, int* fd) {
  std::string text;
  switch (port_file(path, &text)) {
    case PortPath::kOther:
      return false;
    case PortPath::kAbsent:
      errno = ENOENT;
      *fd = -1;
      return true;
    case PortPath::kFile:
      break;
  }
  if ((flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC)) {
    errno = EACCES;
    *fd = -1;
  } else if (flags & O_DIRECTORY) {
    errno = ENOTDIR;
    *fd = -1;
  } else {
    *fd = text_fd(text, flags);
  }
  return true;
}

// fopen(3) of a model port's file: as open_port_file, for a stream ("r", "re" only).
bool fopen_port_file(const char* path, const char* how, FILE** f) {
  int flags = O_RDONLY;
  if (!how || how[0] != 'r' || strchr(how, '+')) flags = O_WRONLY;
  else if (strchr(how, 'e')) flags |= O_CLOEXEC;
  int fd = -1;
  if (!open_port_file(path, flags, &fd)) return false;
  *f = fd < 0 ? nullptr : fdopen(fd, "r");
  if (fd >= 0 && !*f) close(fd);
  return true;
}

void fill_uverbs_stat(struct stat* st, int index) {
  memset(st, 0, sizeof *st);
  st->st_mode = S_IFCHR | 0666;
  st->st_rdev = makedev(kUverbsMajor, kUverbsMinorBase + index);
  st->st_nlink = 1;
  st->st_blksize = 4096;
}

char* resolve_ibdev(int index, char* resolved) {
  std::string p = ensure_tree(index);
  if (p.size() >= PATH_MAX) {
    errno = ENAMETOOLONG;
    return nullptr;
  }
  char* out = resolved ? resolved : static_cast<char*>(malloc(PATH_MAX));
  if (!out) return nullptr;
  memcpy(out, p.c_str(), p.size() + 1);
  return out;
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) int stat(const char* path, struct stat* st) {
  int i = uverbs_index(path);
  if (i >= 0) {
    fill_uverbs_stat(st, i);
    return 0;
  }
  static auto real = next<int (*)(const char*, struct stat*)>("stat");
  return real(path, st);
}

__attribute__((visibility("default"))) int stat64(const char* path, struct stat64* st) {
  int i = uverbs_index(path);
  if (i >= 0) {
    fill_uverbs_stat(reinterpret_cast<struct stat*>(st), i);  // same layout on x86-64 / LP64
    return 0;
  }
  static auto real = next<int (*)(const char*, struct stat64*)>("stat64");
  return real(path, st);
}

__attribute__((visibility("default"))) int access(const char* path, int mode) {
  if (uverbs_index(path) >= 0) {
    if (mode & X_OK) {
      errno = EACCES;
      return -1;
    }
    return 0;
  }
  static auto real = next<int (*)(const char*, int)>("access");
  return real(path, mode);
}

__attribute__((visibility("default"))) char* realpath(const char* path, char* resolved) {
  int i = ibdev_index(path);
  if (i >= 0) return resolve_ibdev(i, resolved);
  static auto real = next<char* (*)(const char*, char*)>("realpath");
  return real(path, resolved);
}

__attribute__((visibility("default"))) char* __realpath_chk(const char* path, char* resolved,
                                                            size_t resolvedlen) {
  int i = ibdev_index(path);
  if (i >= 0) {
    if (resolved && resolvedlen < PATH_MAX) abort();  // as glibc's fortified check does
    return resolve_ibdev(i, resolved);
  }
  static auto real = next<char* (*)(const char*, char*, size_t)>("__realpath_chk");
  return real(path, resolved, resolvedlen);
}

// open(2) and its relatives: a model device's sysfs file opens the tree's instead. The mode
// argument is read only where open(2) has one (O_CREAT, O_TMPFILE).
#define SOFTHCA_REDIRECT_OPEN(flags)                          \
  mode_t mode = 0;                                            \
  if ((flags) & (O_CREAT | O_TMPFILE)) {                      \
    va_list ap;                                               \
    va_start(ap, flags);                                      \
    mode = va_arg(ap, mode_t);                                \
    va_end(ap);                                               \
  }                                                           \
  if (int port_fd; open_port_file(path, flags, &port_fd))     \
    return port_fd;                                           \
  const std::string redirected = sysfs_file(path);            \
  if (!redirected.empty()) path = redirected.c_str();

__attribute__((visibility("default"))) int open(const char* path, int flags, ...) {
  SOFTHCA_REDIRECT_OPEN(flags)
  static auto real = next<int (*)(const char*, int, ...)>("open");
  return real(path, flags, mode);
}

__attribute__((visibility("default"))) int open64(const char* path, int flags, ...) {
  SOFTHCA_REDIRECT_OPEN(flags)
  static auto real = next<int (*)(const char*, int, ...)>("open64");
  return real(path, flags, mode);
}

__attribute__((visibility("default"))) int openat(int dir, const char* path, int flags, ...) {
  SOFTHCA_REDIRECT_OPEN(flags)
  static auto real = next<int (*)(int, const char*, int, ...)>("openat");
  return real(dir, path, flags, mode);
}

__attribute__((visibility("default"))) int openat64(int dir, const char* path, int flags, ...) {
  SOFTHCA_REDIRECT_OPEN(flags)
  static auto real = next<int (*)(int, const char*, int, ...)>("openat64");
  return real(dir, path, flags, mode);
}

__attribute__((visibility("default"))) FILE* fopen(const char* path, const char* how) {
  if (FILE* f; fopen_port_file(path, how, &f)) return f;
  const std::string redirected = sysfs_file(path);
  static auto real = next<FILE* (*)(const char*, const char*)>("fopen");
  return real(redirected.empty() ? path : redirected.c_str(), how);
}

__attribute__((visibility("default"))) FILE* fopen64(const char* path, const char* how) {
  if (FILE* f; fopen_port_file(path, how, &f)) return f;
  const std::string redirected = sysfs_file(path);
  static auto real = next<FILE* (*)(const char*, const char*)>("fopen64");
  return real(redirected.empty() ? path : redirected.c_str(), how);
}

}  // extern "C"
