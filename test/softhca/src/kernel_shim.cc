// libsofthca_kernel.so: the kernel interfaces a real mlx5 HCA has and the model (a pair of
// user-space libraries) has not, shown to programs that look for them before they use verbs.
// Loaded with LD_PRELOAD (with-softhca does), it interposes on four libc entry points and
// changes nothing else:
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
//    equals the verbs vendor_part_id: 0x101b for ConnectX-6). The tree is written once per user
//    under $TMPDIR (or /tmp) and is the same for every process.
//
// Paths of other devices, and every other path, go to libc unchanged.
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <string>

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

std::string tree_root() {
  const char* t = getenv("TMPDIR");
  return std::string(t && *t ? t : "/tmp") + "/softhca-sysfs." + std::to_string(getuid());
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
  char buf[16];
  snprintf(buf, sizeof buf, "0x%04x\n", kPciVendorMellanox);
  write_file(pci + "/vendor", buf);
  snprintf(buf, sizeof buf, "0x%04x\n", kPciDeviceConnectX6);
  write_file(pci + "/device", buf);
  return ibdev;
}

template <typename F>
F next(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
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

}  // extern "C"
