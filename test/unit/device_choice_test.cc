// The choice of the nearest RDMA device (lib/transport/ib/device_choice.h): devices' localities
// and the PE's CPUs in, the order Device::open tries them and what SHMEM_INFO says out.
#include "lib/transport/ib/device_choice.h"

#include <gtest/gtest.h>

namespace hoshmem::ib {
namespace {

DeviceLocality on(int node, std::vector<int> cpus) { return {std::move(cpus), node}; }

std::vector<size_t> order_of(const DeviceOrder &o) {
  std::vector<size_t> v;
  for (size_t k = 0; k < o.size(); ++k) v.push_back(o[k]);
  return v;
}

TEST(DeviceChoice, CpuListText) {
  EXPECT_EQ(cpu_list_text({}), "");
  EXPECT_EQ(cpu_list_text({1}), "1");
  EXPECT_EQ(cpu_list_text({0, 1, 2, 3, 8, 10, 11}), "0-3,8,10-11");
}

TEST(DeviceChoice, ListOrderSaysFirstActivePort) {
  DeviceOrder o(3);
  EXPECT_EQ(order_of(o), (std::vector<size_t>{0, 1, 2}));
  EXPECT_EQ(o.why(0), "first active port");
}

TEST(DeviceChoice, NearestToTheBoundCpusFirst) {
  // Two NUMA nodes, one device on each (the model's SOFTHCA_DEVICE_NUMA=0,1 on 2 CPUs).
  const std::vector<DeviceLocality> two = {on(0, {0}), on(1, {1})};
  DeviceOrder on_cpu1(two, {1});
  EXPECT_EQ(order_of(on_cpu1), (std::vector<size_t>{1, 0}));
  EXPECT_EQ(on_cpu1.why(1), "nearest to the PE's CPUs 1 (NUMA node 1)");
  DeviceOrder on_cpu0(two, {0});
  EXPECT_EQ(order_of(on_cpu0), (std::vector<size_t>{0, 1}));
  EXPECT_EQ(on_cpu0.why(0), "nearest to the PE's CPUs 0 (NUMA node 0)");
  // Bound across both nodes: the device with more of the PE's CPUs wins.
  const std::vector<DeviceLocality> big = {on(0, {0, 1, 2, 3}), on(1, {4, 5, 6, 7})};
  DeviceOrder mostly_node1(big, {3, 4, 5});
  EXPECT_EQ(order_of(mostly_node1), (std::vector<size_t>{1, 0}));
  EXPECT_EQ(mostly_node1.why(1), "nearest to the PE's CPUs 3-5 (NUMA node 1)");
  // No NUMA node known: still nearest, without the node.
  DeviceOrder no_node({on(-1, {0, 1}), on(-1, {2, 3})}, {2});
  EXPECT_EQ(no_node[0], 1u);
  EXPECT_EQ(no_node.why(1), "nearest to the PE's CPUs 2");
}

TEST(DeviceChoice, TiesKeepListOrder) {
  // Not bound (every CPU): both devices as near, the first one wins.
  DeviceOrder unbound({on(0, {0}), on(1, {1})}, {0, 1});
  EXPECT_EQ(order_of(unbound), (std::vector<size_t>{0, 1}));
  EXPECT_EQ(unbound.why(0), "first active port (every device as near to the PE's CPUs 0-1)");
  // Two of three devices as near: the first of them, saying so.
  DeviceOrder two_near({on(0, {0, 1}), on(1, {2, 3}), on(1, {2, 3})}, {2, 3});
  EXPECT_EQ(order_of(two_near), (std::vector<size_t>{1, 2, 0}));
  EXPECT_EQ(two_near.why(1), "nearest to the PE's CPUs 2-3 (NUMA node 1; first of 2 as near)");
  // Devices local to every CPU (no NUMA): all as near.
  DeviceOrder flat({on(-1, {0, 1}), on(-1, {0, 1})}, {1});
  EXPECT_EQ(order_of(flat), (std::vector<size_t>{0, 1}));
  EXPECT_EQ(flat.why(0), "first active port (every device as near to the PE's CPUs 1)");
}

TEST(DeviceChoice, UnknownLocalityIsListOrder) {
  DeviceOrder unknown({{}, {}}, {1});
  EXPECT_EQ(order_of(unknown), (std::vector<size_t>{0, 1}));
  EXPECT_EQ(unknown.why(0), "first active port (device locality unknown)");
  // One device known and near, one unknown: the known one first.
  DeviceOrder half({{}, on(1, {1})}, {1});
  EXPECT_EQ(order_of(half), (std::vector<size_t>{1, 0}));
  EXPECT_EQ(half.why(1), "nearest to the PE's CPUs 1 (NUMA node 1)");
  // The PE's CPUs unknown.
  DeviceOrder no_cpus({on(0, {0}), on(1, {1})}, {});
  EXPECT_EQ(order_of(no_cpus), (std::vector<size_t>{0, 1}));
  EXPECT_EQ(no_cpus.why(0), "first active port (the PE's CPUs are unknown)");
  // A CPU of no device (a device on a node without CPUs: empty list = unknown).
  DeviceOrder far({on(0, {0}), on(1, {1})}, {5});
  EXPECT_EQ(order_of(far), (std::vector<size_t>{0, 1}));
  EXPECT_EQ(far.why(0), "first active port (no device is local to the PE's CPUs 5)");
}

TEST(DeviceChoice, NearerDeviceWithoutActivePort) {
  // Device 1 is nearest; Device::open found no active port on it and took device 2, then 0.
  DeviceOrder o({on(0, {0, 1}), on(1, {1, 2}), on(2, {2, 3})}, {1, 2});
  EXPECT_EQ(order_of(o), (std::vector<size_t>{1, 0, 2}));
  EXPECT_EQ(o.why(0), "nearest with an active port to the PE's CPUs 1-2 (NUMA node 0; first of 2 as near)");
  DeviceOrder p({on(0, {0}), on(1, {1})}, {1});
  EXPECT_EQ(p.why(0), "first active port (no device local to the PE's CPUs 1 has one)");
}

}  // namespace
}  // namespace hoshmem::ib
