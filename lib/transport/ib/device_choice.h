// lib/transport/ib: which RDMA device a PE opens when HOSHMEM_DEVICE names none and the machine
// has several: the one nearest to the CPUs the PE is bound to, by the devices' PCI locality (the
// CPUs Linux lists as local to each device); the first active port when that says nothing.
#pragma once

#include <infiniband/verbs.h>

#include <cstddef>
#include <string>
#include <vector>

namespace hoshmem::ib {

// Where a device sits.
struct DeviceLocality {
  std::vector<int> cpus;  // the CPUs local to it, ascending; empty: unknown
  int numa_node = -1;     // its NUMA node; -1: unknown or none
};

// The order in which Device::open tries the devices for an active port, and why it took the one
// it took.
class DeviceOrder {
 public:
  // List order, nothing to say about locality (one device, or HOSHMEM_DEVICE names one).
  explicit DeviceOrder(size_t count);
  // Nearest first: the device with most of the PE's CPUs (`bound`, ascending) local to it, then
  // the next; equally near ones, and those of unknown locality, in list order.
  DeviceOrder(std::vector<DeviceLocality> devices, std::vector<int> bound);
  // `list`'s devices by their locality in sysfs and the calling thread's CPU affinity; list
  // order for fewer than two devices (nothing is read then).
  static DeviceOrder of(ibv_device **list, int count);

  size_t size() const { return order_.size(); }
  size_t operator[](size_t k) const { return order_[k]; }  // the k-th device to try
  // For SHMEM_INFO: why device `index` was chosen, being the first in this order with an
  // active port ("nearest to the PE's CPUs 1 (NUMA node 1)", "first active port (...)").
  std::string why(size_t index) const;

 private:
  std::vector<DeviceLocality> devices_;  // empty: list order
  std::vector<int> bound_;
  std::vector<int> near_;  // per device: how many of `bound_` are local to it (-1: unknown)
  std::vector<size_t> order_;
};

// "0-3,8"
std::string cpu_list_text(const std::vector<int> &cpus);

}  // namespace hoshmem::ib
