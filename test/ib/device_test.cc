// The device layer (lib/transport/ib/device.h) over the software HCA: device and port choice from
// HOSHMEM_DEVICE's syntax (and why, as SHMEM_INFO says it), the errors for a device or port that
// is not there, and the atomic capabilities read by QUERY_HCA_CAP (masked atomics, operand sizes,
// DC, the 8-byte reply mode the model is started with), and what reply_value makes of a reply in
// each mode.
#include "lib/transport/ib/device.h"

#include <endian.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#include "test/ib/softhca_main.h"

namespace hoshmem::ib {
namespace {

bool host_endian_run() {
  const char *e = getenv("SOFTHCA_ATOMIC_ENDIAN");
  return e && !strcmp(e, "host");
}

TEST(Device, SpecSyntax) {
  auto any = parse_device_spec("");
  ASSERT_TRUE(any);
  EXPECT_TRUE(any->name.empty());
  EXPECT_EQ(any->port, 0);
  auto named = parse_device_spec("mlx5_1:2");
  ASSERT_TRUE(named);
  EXPECT_EQ(named->name, "mlx5_1");
  EXPECT_EQ(named->port, 2);
  EXPECT_EQ(parse_device_spec("mlx5_0")->port, 0);
  for (const char *bad : {":1", "mlx5_0:", "mlx5_0:0", "mlx5_0:x", "mlx5_0:1:2", "mlx5_0:300"})
    EXPECT_FALSE(parse_device_spec(bad)) << bad;
}

bool masked_run() {
  const char *e = getenv("SOFTHCA_MASKED_ATOMICS");
  return !e || strcmp(e, "0") != 0;
}

TEST(Device, DefaultIsFirstActivePortWithItsCaps) {
  Device d;
  std::string why;
  ASSERT_TRUE(d.open({}, &why)) << why;
  EXPECT_STREQ(d.name(), "mlx5_0");
  EXPECT_EQ(d.port(), 1);
  // The model without its kernel shim has no sysfs: two devices of unknown locality, or one.
  EXPECT_TRUE(d.choice() == "first active port (device locality unknown)" ||
              d.choice() == "first active port") << d.choice();
  EXPECT_NE(d.describe().find("; chosen: " + d.choice() + "; "), std::string::npos) << d.describe();
  EXPECT_TRUE(d.mlx5());
  EXPECT_NE(d.pd(), nullptr);
  const AtomicCaps &c = d.atomics();
  EXPECT_TRUE(c.from_devx);
  EXPECT_TRUE(c.standard);
  EXPECT_EQ(c.masked, masked_run());
  EXPECT_EQ(c.masked_sizes_rc, masked_run() ? 4 | 8 : 0);
  EXPECT_EQ(c.masked_sizes_dc, masked_run() ? 4 | 8 : 0);
  EXPECT_TRUE(c.dc);
  EXPECT_EQ(c.reply8_host_endian, host_endian_run());
  EXPECT_EQ(c.pci_fetch_add, 0);  // the model's atomics are not coherent with the CPU's
  EXPECT_NE(d.describe().find(masked_run() ? "standard and masked" : "compare-swap loops"),
            std::string::npos)
      << d.describe();
}

TEST(Device, ReplyValueFollowsTheMode) {
  AtomicCaps big, host;
  host.reply8_host_endian = true;
  const uint64_t v8 = 0x1122334455667788ull;
  const uint64_t be8 = htobe64(v8);
  EXPECT_EQ(big.reply_value(&be8, 8), v8);
  EXPECT_EQ(host.reply_value(&v8, 8), v8);
  const uint32_t be4 = htobe32(0x55667788u);  // 4-byte replies: big-endian in both modes
  EXPECT_EQ(big.reply_value(&be4, 4), 0x55667788u);
  EXPECT_EQ(host.reply_value(&be4, 4), 0x55667788u);
}

TEST(Device, NamedDeviceAndPort) {
  // run with --devices=2 --ports=2
  Device d;
  std::string why;
  ASSERT_TRUE(d.open(*parse_device_spec("mlx5_1:2"), &why)) << why;
  EXPECT_STREQ(d.name(), "mlx5_1");
  EXPECT_EQ(d.port(), 2);
  EXPECT_EQ(d.choice(), "HOSHMEM_DEVICE");
  Device other;
  ASSERT_TRUE(other.open(*parse_device_spec("mlx5_1"), &why)) << why;
  EXPECT_EQ(other.port(), 1);
  EXPECT_NE(other.port_attr().lid, d.port_attr().lid);
}

TEST(Device, MissingDeviceOrPortSaysWhichExist) {
  Device d;
  std::string why;
  EXPECT_FALSE(d.open(*parse_device_spec("mlx5_9"), &why));
  EXPECT_NE(why.find("no device named mlx5_9"), std::string::npos) << why;
  EXPECT_NE(why.find("mlx5_0"), std::string::npos) << why;
  Device e;
  why.clear();
  EXPECT_FALSE(e.open(*parse_device_spec("mlx5_0:3"), &why));
  EXPECT_NE(why.find("no port 3"), std::string::npos) << why;
}

}  // namespace
}  // namespace hoshmem::ib

int main(int argc, char **argv) { return softhca_test_main(argc, argv, "ib-device-test"); }
