// What UCX (and any program written for real mlx5 hardware) needs of the model beyond plain verbs,
// each asserted from the mlx5 PRM / rdma-core semantics rather than from what UCX accepts:
// the kernel interfaces a device is recognised by (uverbs character device, PCI ids in sysfs),
// 128-byte CQEs, scatter-to-CQE, the 16-bit SRQ WQE counter, and the DevX objects.
#include "common.h"

#include <dlfcn.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <fstream>
#include <sstream>

namespace {

std::string read_text(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// --- kernel interfaces (src/kernel_shim.cc, preloaded) ---------------------------------------

TEST(KernelShim, UverbsCharacterDevicePerModelDevice) {
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  ASSERT_NE(list, nullptr);
  ASSERT_GE(n, 1);
  // The path programs build from dev_name, as the kernel names the device's uverbs node.
  std::string path = std::string("/dev/infiniband/") + list[0]->dev_name;
  ibv_free_device_list(list);
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0) << path;
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  EXPECT_EQ(major(st.st_rdev), 231u);  // the kernel's uverbs major
  EXPECT_EQ(minor(st.st_rdev), 192u);  // first uverbs minor
  EXPECT_EQ(access(path.c_str(), R_OK | W_OK), 0);
  // One node per model device: with one device there is no uverbs1; with two there is.
  setenv("SOFTHCA_NUM_DEVICES", "1", 1);
  errno = 0;
  EXPECT_NE(stat("/dev/infiniband/uverbs1", &st), 0);
  EXPECT_NE(access("/dev/infiniband/uverbs1", R_OK), 0);
  setenv("SOFTHCA_NUM_DEVICES", "2", 1);
  ASSERT_EQ(stat("/dev/infiniband/uverbs1", &st), 0);
  EXPECT_EQ(minor(st.st_rdev), 193u);
  unsetenv("SOFTHCA_NUM_DEVICES");
  // Names that are not uverbs nodes of the model pass through to the real file system.
  EXPECT_NE(stat("/dev/infiniband/uverbs0x", &st), 0);
  EXPECT_EQ(stat("/", &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
}

TEST(KernelShim, SysfsPciIdsMatchTheVerbsIdentity) {
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  ASSERT_NE(list, nullptr);
  ASSERT_GE(n, 1);
  char buf[PATH_MAX];
  // As sysfs: ibdev_path resolves to <pci device>/infiniband/<ibdev>.
  char* real = realpath(list[0]->ibdev_path, buf);
  std::string name = ibv_get_device_name(list[0]);
  ibv_context* ctx = ibv_open_device(list[0]);
  ibv_free_device_list(list);
  ASSERT_NE(real, nullptr);
  ASSERT_NE(ctx, nullptr);
  std::string r = real;
  std::string tail = "/infiniband/" + name;
  ASSERT_GE(r.size(), tail.size());
  EXPECT_EQ(r.substr(r.size() - tail.size()), tail);
  struct stat st {};
  EXPECT_EQ(stat(r.c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  std::string pci = r.substr(0, r.size() - tail.size());
  // Mellanox's PCI vendor id (the IB vendor id is 0x02c9), PCI device id = vendor_part_id.
  ibv_device_attr attr{};
  ASSERT_EQ(ibv_query_device(ctx, &attr), 0);
  EXPECT_EQ(std::stoul(read_text(pci + "/vendor"), nullptr, 0), 0x15b3u);
  EXPECT_EQ(attr.vendor_id, 0x02c9u);
  EXPECT_EQ(std::stoul(read_text(pci + "/device"), nullptr, 0), attr.vendor_part_id);
  // The fortified variant (what programs built with _FORTIFY_SOURCE call) resolves alike.
  char* (*chk)(const char*, char*, size_t) =
      reinterpret_cast<char* (*)(const char*, char*, size_t)>(dlsym(RTLD_DEFAULT, "__realpath_chk"));
  ASSERT_NE(chk, nullptr);
  char buf2[PATH_MAX];
  ASSERT_NE(chk(("/sys/class/infiniband/" + name).c_str(), buf2, sizeof buf2), nullptr);
  EXPECT_EQ(std::string(buf2), r);
  ibv_close_device(ctx);
}

}  // namespace

int main(int argc, char** argv) {
  if (!getenv("SOFTHCA_SELECTED")) {
    char buf[4096];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    std::string self = n > 0 ? std::string(buf, size_t(n)) : std::string(argv[0]);
    std::string dir = getenv("TEST_SRCDIR") ? std::string(getenv("TEST_SRCDIR")) + "/hoshmem/test/softhca/softlib"
                                            : self + ".runfiles/hoshmem/test/softhca/softlib";
    setenv("LD_PRELOAD", (dir + "/libsofthca_kernel.so").c_str(), 1);
  }
  return softhca_test_main(argc, argv, "ucx-compat-test", [](const char*) { return 64; });
}
