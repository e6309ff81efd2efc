// lib/transport/ib: the nearest device (device_choice.h).
//
// A device's locality is hwloc's. hwloc_ibv_get_device_cpuset() (hwloc/openfabrics-verbs.h)
// reads /sys/class/infiniband/<device>/device/local_cpus with hwloc_linux_read_path_as_cpumask()
// and, where sysfs has no locality, answers with the whole machine. We call that reader
// ourselves: the helper wants a loaded topology only for its fallback (and loading one dlopens
// hwloc's plugins, libxml2, OpenCL and libpciaccess among them, into every PE: 8-19 ms on a
// 2-core machine), and the fallback would make "unknown" look like "near every CPU". The NUMA
// node, for SHMEM_INFO only, is sysfs's numa_node beside local_cpus (hwloc has it only with I/O
// discovery). The PE's CPUs are the calling thread's affinity (sched_getaffinity), which a
// launcher's binding sets.
#include "lib/transport/ib/device_choice.h"

#include <hwloc.h>
#include <hwloc/linux.h>
#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <iterator>

namespace hoshmem::ib {
namespace {

DeviceLocality read_locality(const char *device) {
  const std::string dir = std::string("/sys/class/infiniband/") + device + "/device/";
  DeviceLocality l;
  hwloc_bitmap_t set = hwloc_bitmap_alloc();
  if (set && hwloc_linux_read_path_as_cpumask((dir + "local_cpus").c_str(), set) == 0) {
    for (int cpu = hwloc_bitmap_first(set); cpu >= 0; cpu = hwloc_bitmap_next(set, cpu))
      l.cpus.push_back(cpu);
  }
  hwloc_bitmap_free(set);
  if (FILE *f = fopen((dir + "numa_node").c_str(), "re")) {
    if (fscanf(f, "%d", &l.numa_node) != 1) l.numa_node = -1;
    fclose(f);
  }
  return l;
}

std::vector<int> thread_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  return cpus;
}

}  // namespace

std::string cpu_list_text(const std::vector<int> &cpus) {
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

DeviceOrder::DeviceOrder(size_t count) {
  for (size_t i = 0; i < count; ++i) order_.push_back(i);
}

DeviceOrder::DeviceOrder(std::vector<DeviceLocality> devices, std::vector<int> bound)
    : DeviceOrder(devices.size()) {
  devices_ = std::move(devices);
  bound_ = std::move(bound);
  for (const DeviceLocality &d : devices_) {
    std::vector<int> both;
    std::set_intersection(d.cpus.begin(), d.cpus.end(), bound_.begin(), bound_.end(),
                          std::back_inserter(both));
    near_.push_back(d.cpus.empty() ? -1 : static_cast<int>(both.size()));
  }
  std::stable_sort(order_.begin(), order_.end(), [&](size_t a, size_t b) {
    return std::max(near_[a], 0) > std::max(near_[b], 0);
  });
}

DeviceOrder DeviceOrder::of(ibv_device **list, int count) {
  if (count < 2) return DeviceOrder(static_cast<size_t>(std::max(count, 0)));
  std::vector<DeviceLocality> devices;
  for (int i = 0; i < count; ++i) devices.push_back(read_locality(ibv_get_device_name(list[i])));
  return DeviceOrder(std::move(devices), thread_cpus());
}

std::string DeviceOrder::why(size_t index) const {
  if (devices_.empty()) return "first active port";
  if (bound_.empty()) return "first active port (the PE's CPUs are unknown)";
  const int best = *std::max_element(near_.begin(), near_.end());
  if (best < 0) return "first active port (device locality unknown)";
  const std::string cpus = "the PE's CPUs " + cpu_list_text(bound_);
  if (best == 0) return "first active port (no device is local to " + cpus + ")";
  const int mine = near_[index];
  if (mine <= 0) return "first active port (no device local to " + cpus + " has one)";
  const long as_near = std::count(near_.begin(), near_.end(), mine);
  if (mine == best && as_near == static_cast<long>(near_.size()))
    return "first active port (every device as near to " + cpus + ")";
  std::string why = mine == best ? "nearest to " : "nearest with an active port to ";
  why += cpus;
  std::string notes;
  if (devices_[index].numa_node >= 0) notes = "NUMA node " + std::to_string(devices_[index].numa_node);
  if (as_near > 1) notes += (notes.empty() ? "" : "; ") + std::string("first of ") +
                            std::to_string(as_near) + " as near";
  return notes.empty() ? why : why + " (" + notes + ")";
}

}  // namespace hoshmem::ib
