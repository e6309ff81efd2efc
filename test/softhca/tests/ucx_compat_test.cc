// What UCX (and any program written for real mlx5 hardware) needs of the model beyond plain verbs,
// each asserted from the mlx5 PRM / rdma-core semantics rather than from what UCX accepts:
// the kernel interfaces a device is recognised by (uverbs character device, PCI ids in sysfs),
// 128-byte CQEs, scatter-to-CQE, the 16-bit SRQ WQE counter, and the DevX objects.
#include "common.h"

#include <dlfcn.h>
#include <limits.h>
#include <net/if.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <fstream>
#include <sstream>

namespace {

uint16_t bswap16(uint16_t v) { return __builtin_bswap16(v); }

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

// What open(2), openat(2) and fopen(3) read of /sys/class/infiniband/mlx5_N/device/F.
std::string read_sysfs(const std::string& path, int how) {
  if (how == 2) {
    FILE* f = fopen(path.c_str(), "r");
    if (!f) return "(fopen failed)";
    char line[256] = "";
    if (!fgets(line, sizeof line, f)) line[0] = 0;
    fclose(f);
    return line;
  }
  int fd = how == 0 ? open(path.c_str(), O_RDONLY) : openat(AT_FDCWD, path.c_str(), O_RDONLY);
  if (fd < 0) return "(open failed)";
  char line[256] = "";
  ssize_t n = read(fd, line, sizeof line - 1);
  close(fd);
  return std::string(line, n > 0 ? size_t(n) : 0);
}

TEST(KernelShim, PciLocalityPerDevice) {
  setenv("SOFTHCA_NUM_DEVICES", "2", 1);
  // Without knobs: no NUMA node, every configured CPU local (as Linux on a machine without NUMA).
  const long cpus = sysconf(_SC_NPROCESSORS_CONF);
  const std::string all = cpus > 1 ? "0-" + std::to_string(cpus - 1) + "\n" : "0\n";
  for (int how = 0; how < 3; ++how) {
    EXPECT_EQ(read_sysfs("/sys/class/infiniband/mlx5_1/device/numa_node", how), "-1\n") << how;
    EXPECT_EQ(read_sysfs("/sys/class/infiniband/mlx5_1/device/local_cpulist", how), all) << how;
  }
  // Two nodes: each device's node, its CPUs as a list and as Linux's mask (32-bit words,
  // highest first), for all three ways of opening the file.
  setenv("SOFTHCA_DEVICE_NUMA", "0,1", 1);
  setenv("SOFTHCA_NUMA_CPUS", "0-3:4-7,40", 1);
  for (int how = 0; how < 3; ++how) {
    const std::string d0 = "/sys/class/infiniband/mlx5_0/device/", d1 = "/sys/class/infiniband/mlx5_1/device/";
    EXPECT_EQ(read_sysfs(d0 + "numa_node", how), "0\n") << how;
    EXPECT_EQ(read_sysfs(d1 + "numa_node", how), "1\n") << how;
    EXPECT_EQ(read_sysfs(d0 + "local_cpulist", how), "0-3\n") << how;
    EXPECT_EQ(read_sysfs(d1 + "local_cpulist", how), "4-7,40\n") << how;
    EXPECT_EQ(read_sysfs(d1 + "local_cpus", how), "00000100,000000f0\n") << how;
    EXPECT_EQ(read_sysfs(d0 + "vendor", how), "0x15b3\n") << how;
  }
  // The same files through the realpath of ibdev_path and its `device` link, as sysfs has them.
  char buf[PATH_MAX];
  ASSERT_NE(realpath("/sys/class/infiniband/mlx5_1", buf), nullptr);
  EXPECT_EQ(read_text(std::string(buf) + "/device/numa_node"), "1\n");
  EXPECT_EQ(read_text(std::string(buf) + "/device/local_cpus"), "00000100,000000f0\n");
  // Without a CPU list for the nodes, the configured CPUs are split between them.
  unsetenv("SOFTHCA_NUMA_CPUS");
  const std::string n0 = read_sysfs("/sys/class/infiniband/mlx5_0/device/local_cpulist", 0);
  const std::string n1 = read_sysfs("/sys/class/infiniband/mlx5_1/device/local_cpulist", 0);
  if (cpus >= 2) {
    EXPECT_EQ(n0, cpus == 2 ? "0\n" : "0-" + std::to_string(cpus / 2 - 1) + "\n");
    EXPECT_EQ(n1, cpus == 2 ? "1\n" : std::to_string(cpus / 2) + "-" + std::to_string(cpus - 1) + "\n");
  }
  // Devices that are not there, other files and other paths are the file system's.
  errno = 0;
  EXPECT_LT(open("/sys/class/infiniband/mlx5_2/device/numa_node", O_RDONLY), 0);
  EXPECT_LT(open("/sys/class/infiniband/mlx5_0/device/resource", O_RDONLY), 0);
  int fd = open("/proc/self/stat", O_RDONLY);
  EXPECT_GE(fd, 0);
  if (fd >= 0) close(fd);
  // Bad values are rejected with what is accepted (the shim runs in every program: here `cat`).
  for (const char* bad : {"SOFTHCA_DEVICE_NUMA=0,x", "SOFTHCA_DEVICE_NUMA=-2", "SOFTHCA_NUMA_CPUS=0-:1 SOFTHCA_DEVICE_NUMA=0",
                          "SOFTHCA_NUMA_CPUS=3-1 SOFTHCA_DEVICE_NUMA=0"}) {
    std::string cmd = std::string("env ") + bad + " cat /sys/class/infiniband/mlx5_0/device/numa_node 2>&1";
    FILE* p = popen(cmd.c_str(), "r");
    ASSERT_NE(p, nullptr);
    char line[256] = "";
    if (!fgets(line, sizeof line, p)) line[0] = 0;
    int st = pclose(p);
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 1) << bad;
    EXPECT_NE(strstr(line, "rejected"), nullptr) << bad << ": " << line;
  }
  unsetenv("SOFTHCA_DEVICE_NUMA");
  unsetenv("SOFTHCA_NUM_DEVICES");
}

// --- per-port GID files: ports/P/gids/I, gid_attrs/types/I, gid_attrs/ndevs/I, link_layer ---

// The kernel's text for a GID (%pI6): 8 groups of 4 hex digits.
std::string gid_text(const ibv_gid& g) {
  char s[48];
  for (int i = 0; i < 8; ++i) snprintf(s + i * 5, 6, "%02x%02x:", g.raw[2 * i], g.raw[2 * i + 1]);
  s[39] = '\n';
  return std::string(s, 40);
}

// errno of opening `path` read-only the three ways (0: opened).
int open_errno(const std::string& path) {
  int err = 0;
  errno = 0;
  int fd = open(path.c_str(), O_RDONLY);
  if (fd >= 0) close(fd);
  else err = errno;
  errno = 0;
  FILE* f = fopen(path.c_str(), "r");
  if (f) fclose(f);
  else if (errno != err) return -1;  // the ways disagree
  return err;
}

// Run in a child per SOFTHCA_LINK (the link is fixed when the model starts): every port's files
// against what the verbs say of the port in this process, one line per difference.
std::string port_file_problems() {
  std::string out;
  auto problem = [&](const std::string& what, const std::string& got, const std::string& want) {
    out += what + ": got '" + got + "', want '" + want + "'\n";
  };
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (!list || n < 2) return "fewer than 2 devices\n";
  std::vector<std::string> ndevs;
  for (int d = 0; d < n; ++d) {
    ibv_context* ctx = ibv_open_device(list[d]);
    if (!ctx) return "ibv_open_device failed\n";
    ibv_device_attr da{};
    ibv_query_device(ctx, &da);
    const std::string ports = "/sys/class/infiniband/" + std::string(ibv_get_device_name(list[d])) + "/ports/";
    for (int p = 1; p <= da.phys_port_cnt; ++p) {
      ibv_port_attr pa{};
      ibv_query_port(ctx, uint8_t(p), &pa);
      const bool eth = pa.link_layer == IBV_LINK_LAYER_ETHERNET;
      const std::string dir = ports + std::to_string(p) + "/";
      for (int how = 0; how < 3; ++how) {
        const std::string ll = read_sysfs(dir + "link_layer", how);
        if (ll != (eth ? "Ethernet\n" : "InfiniBand\n")) problem(dir + "link_layer", ll, eth ? "Ethernet" : "InfiniBand");
      }
      std::string ndev;
      for (int i = 0; i < pa.gid_tbl_len; ++i) {
        ibv_gid_entry e{};
        if (ibv_query_gid_ex(ctx, uint32_t(p), uint32_t(i), &e, 0)) {
          out += "ibv_query_gid_ex failed\n";
          continue;
        }
        ibv_gid g{};
        ibv_query_gid(ctx, uint8_t(p), i, &g);
        if (memcmp(&g, &e.gid, sizeof g)) out += "ibv_query_gid and ibv_query_gid_ex differ\n";
        const std::string idx = std::to_string(i);
        const std::string type = e.gid_type == IBV_GID_TYPE_ROCE_V2 ? "RoCE v2\n" : "IB/RoCE v1\n";
        for (int how = 0; how < 3; ++how) {
          if (std::string t = read_sysfs(dir + "gids/" + idx, how); t != gid_text(e.gid))
            problem(dir + "gids/" + idx + " how " + std::to_string(how), t, gid_text(e.gid));
          if (std::string t = read_sysfs(dir + "gid_attrs/types/" + idx, how); t != type)
            problem(dir + "gid_attrs/types/" + idx, t, type);
        }
        const std::string nd = dir + "gid_attrs/ndevs/" + idx;
        if (eth) {  // a RoCE GID's netdev: one per port, not an interface of the host
          const std::string name = read_sysfs(nd, 2);
          if (name.size() < 2 || name.back() != '\n') problem(nd, name, "a netdev name");
          if (i == 0) ndev = name;
          else if (name != ndev) problem(nd, name, ndev);
          if (name.size() >= 2 && if_nametoindex(name.substr(0, name.size() - 1).c_str()) != 0)
            problem(nd, name, "no host interface's name");
        } else if (int err = open_errno(nd); err != ENOENT) {  // InfiniBand GIDs have no netdev
          problem(nd + " errno", std::to_string(err), "ENOENT");
        }
      }
      if (eth) {
        if (std::find(ndevs.begin(), ndevs.end(), ndev) != ndevs.end()) problem(dir + " netdev", ndev, "one per port");
        ndevs.push_back(ndev);
      }
      // Past the table, a port that is not there, malformed names: no file.
      const std::string past = std::to_string(pa.gid_tbl_len);
      for (const std::string& f : {dir + "gids/" + past, dir + "gid_attrs/types/" + past,
                                   dir + "gid_attrs/ndevs/" + past, dir + "gids/01", dir + "gids/x",
                                   ports + std::to_string(da.phys_port_cnt + 1) + "/gids/0", dir + "lid_x"})
        if (int err = open_errno(f); err != ENOENT) problem(f + " errno", std::to_string(err), "ENOENT");
      // Read-only, as sysfs's 0444 files.
      errno = 0;
      if (open((dir + "gids/0").c_str(), O_RDWR) >= 0 || errno != EACCES) problem(dir + "gids/0 O_RDWR", strerror(errno), "EACCES");
      errno = 0;
      if (fopen((dir + "gids/0").c_str(), "w") || errno != EACCES) problem(dir + "gids/0 \"w\"", strerror(errno), "EACCES");
    }
    ibv_close_device(ctx);
  }
  ibv_free_device_list(list);
  return out;
}

// The link's GID table as the kernel lists it: one InfiniBand GID, or on RoCE the link-local
// and IPv4-mapped addresses, each RoCE v1 then v2.
TEST(KernelShim, PortGidFilesPerLink) {
  for (const char* link : {"ib", "ib-grh", "roce"}) {
    Child c("port-files", {std::string("SOFTHCA_LINK=") + link, "SOFTHCA_NUM_DEVICES=2",
                           "SOFTHCA_NUM_PORTS=2", "SOFTHCA_NODE=port-files"});
    ASSERT_NE(c.out, nullptr);
    std::string all;
    char line[512];
    while (fgets(line, sizeof line, c.out)) all += line;
    EXPECT_EQ(c.wait(), 0) << link;
    const std::string roce =
        "types IB/RoCE v1|RoCE v2|IB/RoCE v1|RoCE v2|\n"
        "gids fe80:0000:0000:0000:|fe80:0000:0000:0000:|0000:0000:0000:0000:0000:ffff:0a4d:|"
        "0000:0000:0000:0000:0000:ffff:0a4d:|\n"
        "ndevs softhca0p1|softhca0p1|softhca0p1|softhca0p1|\n"
        "cat gids/3 the same\n";
    const std::string ib = "types IB/RoCE v1|\ngids fe80:0000:0000:0000:|\nndevs -|\ncat gids/0 the same\n";
    EXPECT_EQ(all, std::string(!strcmp(link, "roce") ? roce : ib) + "done\n") << link;
  }
}

// --- CQs: 128-byte CQEs, scatter-to-CQE of up to 64 bytes, IGNORE_OVERRUN -------------------

constexpr int kAll = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                     IBV_ACCESS_REMOTE_ATOMIC;

ibv_cq* dv_cq(Dev& d, int cqe_size, int entries = 16, uint32_t flags = 0) {
  ibv_cq_init_attr_ex a{};
  a.cqe = uint32_t(entries);
  if (flags) {
    a.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS;
    a.flags = flags;
  }
  mlx5dv_cq_init_attr dv{};
  dv.comp_mask = MLX5DV_CQ_INIT_ATTR_MASK_CQE_SIZE;
  dv.cqe_size = uint16_t(cqe_size);
  ibv_cq_ex* cq = mlx5dv_create_cq(d.ctx, &a, &dv);
  return cq ? ibv_cq_ex_to_cq(cq) : nullptr;
}

// A CQ read the way a program polling CQEs itself reads it (rdma-core's layout: entry n at
// buf + n * cqe_size, its 64-byte CQE in the entry's last 64 bytes).
struct RawCq {
  ibv_cq* cq = nullptr;
  mlx5dv_cq dv{};
  uint32_t ci = 0;
  explicit RawCq(ibv_cq* c) : cq(c) {
    mlx5dv_obj o{};
    o.cq.in = cq;
    o.cq.out = &dv;
    if (!cq || mlx5dv_init_obj(&o, MLX5DV_OBJ_CQ)) cq = nullptr;
  }
  uint8_t* entry(uint32_t n) const {
    return static_cast<uint8_t*>(dv.buf) + size_t(n & (dv.cqe_cnt - 1)) * dv.cqe_size;
  }
  mlx5_cqe64* cqe(uint32_t n) const {
    return reinterpret_cast<mlx5_cqe64*>(entry(n) + dv.cqe_size - 64);
  }
  // The next entry (copied, whole), or an entry whose CQE is invalid after a bounded wait.
  std::vector<uint8_t> next() {
    mlx5_cqe64* c = cqe(ci);
    for (int i = 0; i < 500000; ++i) {
      uint8_t own = __atomic_load_n(&c->op_own, __ATOMIC_ACQUIRE);
      if ((own >> 4) != MLX5_CQE_INVALID && (own & 1) == ((ci / dv.cqe_cnt) & 1)) {
        std::vector<uint8_t> copy(entry(ci), entry(ci) + dv.cqe_size);
        ci++;
        __atomic_store_n(&dv.dbrec[0], bswap32(ci & 0xffffff), __ATOMIC_RELEASE);
        return copy;
      }
      if (i > 1000) usleep(20);
    }
    ADD_FAILURE() << "no CQE";
    std::vector<uint8_t> none(dv.cqe_size, 0);
    none.back() = MLX5_CQE_INVALID << 4;
    return none;
  }
};

const mlx5_cqe64& cqe_of(const std::vector<uint8_t>& e) {
  return *reinterpret_cast<const mlx5_cqe64*>(e.data() + e.size() - 64);
}

ibv_qp* rc_qp(Dev& d, ibv_cq* scq, ibv_cq* rcq, bool sig_all) {
  ibv_qp_init_attr_ex a{};
  a.qp_type = IBV_QPT_RC;
  a.send_cq = scq;
  a.recv_cq = rcq;
  a.cap.max_send_wr = a.cap.max_recv_wr = 16;
  a.cap.max_send_sge = a.cap.max_recv_sge = 2;
  a.sq_sig_all = sig_all;
  a.pd = d.pd;
  a.comp_mask = IBV_QP_INIT_ATTR_PD;
  mlx5dv_qp_init_attr dv{};
  ibv_qp* qp = mlx5dv_create_qp(d.ctx, &a, &dv);
  if (!qp) return nullptr;
  ibv_qp_attr m{};
  m.qp_state = IBV_QPS_INIT;
  m.port_num = 1;
  m.qp_access_flags = kAll;
  if (ibv_modify_qp(qp, &m, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
    return nullptr;
  return qp;
}

struct RcPair {
  ibv_qp *a = nullptr, *b = nullptr;
  RcPair(Dev& d, ibv_cq* a_scq, ibv_cq* a_rcq, ibv_cq* b_scq, ibv_cq* b_rcq, bool a_sig_all) {
    a = rc_qp(d, a_scq, a_rcq, a_sig_all);
    b = rc_qp(d, b_scq, b_rcq, false);
    if (!a || !b || connect_rc(a, b->qp_num, lid_of(d)) || connect_rc(b, a->qp_num, lid_of(d)))
      a = b = nullptr;
  }
};

TEST(Cqe128, CreationChecksAndLayout) {
  Dev d;
  ASSERT_NE(d.ctx, nullptr);
  // Only 64 and 128 are CQE sizes (rdma-core: EINVAL otherwise).
  errno = 0;
  EXPECT_EQ(dv_cq(d, 256), nullptr);
  EXPECT_EQ(errno, EINVAL);
  errno = 0;
  EXPECT_EQ(dv_cq(d, 32), nullptr);
  EXPECT_EQ(errno, EINVAL);
  // Creation flags: SINGLE_THREADED and IGNORE_OVERRUN only.
  errno = 0;
  EXPECT_EQ(dv_cq(d, 64, 16, 1u << 5), nullptr);
  EXPECT_EQ(errno, EINVAL);
  ibv_cq* ok = dv_cq(d, 128, 16, IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN | IBV_CREATE_CQ_ATTR_SINGLE_THREADED);
  ASSERT_NE(ok, nullptr);
  ibv_destroy_cq(ok);
  // A 128-byte CQ: mlx5dv_init_obj reports the size, every entry's CQE (its second half) starts
  // invalid, and a completion is written there, owner bit by pass.
  RawCq r(dv_cq(d, 128, 3));
  ASSERT_NE(r.cq, nullptr);
  EXPECT_EQ(r.dv.cqe_size, 128u);
  ASSERT_EQ(r.dv.cqe_cnt, 4u);
  for (uint32_t i = 0; i < r.dv.cqe_cnt; ++i) EXPECT_EQ(r.cqe(i)->op_own >> 4, MLX5_CQE_INVALID);
  // The doorbell record follows the ring (rdma-core allocates it apart; the model puts it after
  // 4 * 128 bytes, so a 64-byte stride would have hit it).
  ibv_cq* other = ibv_create_cq(d.ctx, 16, nullptr, nullptr, 0);
  RcPair p(d, r.cq, other, other, other, false);
  ASSERT_TRUE(p.a);
  static uint64_t src = 7, dst = 0;
  ibv_mr* ms = ibv_reg_mr(d.pd, &src, 8, kAll);
  ibv_mr* md = ibv_reg_mr(d.pd, &dst, 8, kAll);
  for (uint32_t n = 0; n < 2 * r.dv.cqe_cnt + 1; ++n) {  // more than two passes round the ring
    ibv_sge s{uint64_t(uintptr_t(&src)), 8, ms->lkey};
    ibv_send_wr wr{}, *bad;
    wr.wr_id = n;
    wr.sg_list = &s;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = uintptr_t(&dst);
    wr.wr.rdma.rkey = md->rkey;
    ASSERT_EQ(ibv_post_send(p.a, &wr, &bad), 0);
    auto e = r.next();
    const mlx5_cqe64& c = cqe_of(e);
    EXPECT_EQ(c.op_own >> 4, MLX5_CQE_REQ) << n;
    EXPECT_EQ(c.op_own & 1, (n / r.dv.cqe_cnt) & 1) << n;
    EXPECT_EQ(bswap16(c.wqe_counter), uint16_t(n)) << n;
    EXPECT_EQ(bswap32(c.sop_drop_qpn) & 0xffffff, p.a->qp_num) << n;
    EXPECT_EQ(bswap32(c.sop_drop_qpn) >> 24, uint32_t(MLX5_OPCODE_RDMA_WRITE)) << n;
  }
  ibv_destroy_qp(p.a);
  ibv_destroy_qp(p.b);
  ibv_dereg_mr(ms);
  ibv_dereg_mr(md);
  ibv_destroy_cq(r.cq);
  ibv_destroy_cq(other);
}

// MLX5_CQE_SIZE selects the CQE size of CQs created without mlx5dv (rdma-core's variable).
TEST(Cqe128, EnvironmentVariableSelectsSize) {
  Dev d;
  setenv("MLX5_CQE_SIZE", "128", 1);
  RawCq r(ibv_create_cq(d.ctx, 8, nullptr, nullptr, 0));
  setenv("MLX5_CQE_SIZE", "100", 1);
  errno = 0;
  ibv_cq* bad = ibv_create_cq(d.ctx, 8, nullptr, nullptr, 0);
  int bad_errno = errno;
  unsetenv("MLX5_CQE_SIZE");
  RawCq plain(ibv_create_cq(d.ctx, 8, nullptr, nullptr, 0));
  ASSERT_NE(r.cq, nullptr);
  EXPECT_EQ(r.dv.cqe_size, 128u);
  EXPECT_EQ(bad, nullptr);
  EXPECT_EQ(bad_errno, EINVAL);
  ASSERT_NE(plain.cq, nullptr);
  EXPECT_EQ(plain.dv.cqe_size, 64u);
  ibv_destroy_cq(r.cq);
  ibv_destroy_cq(plain.cq);
}

void post_recv(ibv_qp* q, void* buf, uint32_t len, uint32_t lkey) {
  ibv_sge rs{uint64_t(uintptr_t(buf)), len, lkey};
  ibv_recv_wr rw{}, *rbad;
  rw.wr_id = 5;
  rw.sg_list = &rs;
  rw.num_sge = 1;
  ASSERT_EQ(ibv_post_recv(q, &rw, &rbad), 0);
}

void post_send(ibv_qp* q, void* buf, uint32_t len, uint32_t lkey) {
  ibv_sge s{uint64_t(uintptr_t(buf)), len, lkey};
  ibv_send_wr wr{}, *bad;
  wr.sg_list = &s;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_SEND;
  wr.send_flags = IBV_SEND_SIGNALED;
  ASSERT_EQ(ibv_post_send(q, &wr, &bad), 0);
}

// Responder scatter with a 128-byte receive CQ: up to 64 bytes in the entry's first half
// (MLX5_INLINE_SCATTER_64), the CQE in the second half whole (source QP valid); 65 bytes go to
// memory; the same 48 bytes into a 64-byte CQ go to memory (its limit is 32).
TEST(Cqe128, ReceiveOfUpTo64BytesScattersToTheFirstHalf) {
  Dev d;
  RawCq r128(dv_cq(d, 128)), r64(dv_cq(d, 64));
  ibv_cq* other = ibv_create_cq(d.ctx, 16, nullptr, nullptr, 0);
  ibv_cq* polled = dv_cq(d, 128);
  ASSERT_TRUE(r128.cq && r64.cq && other && polled);
  static uint8_t msg[128], rbuf[128];
  for (int i = 0; i < 128; ++i) msg[i] = uint8_t(i * 7 + 1);
  ibv_mr* ms = ibv_reg_mr(d.pd, msg, sizeof msg, kAll);
  ibv_mr* mr = ibv_reg_mr(d.pd, rbuf, sizeof rbuf, kAll);
  RcPair p(d, other, other, other, r128.cq, false);
  ASSERT_TRUE(p.a);
  for (uint32_t len : {48u, 64u, 20u}) {
    memset(rbuf, 0xee, sizeof rbuf);
    post_recv(p.b, rbuf, sizeof rbuf, mr->lkey);
    post_send(p.a, msg, len, ms->lkey);
    auto e = r128.next();
    const mlx5_cqe64& c = cqe_of(e);
    EXPECT_EQ(c.op_own >> 4, MLX5_CQE_RESP_SEND) << len;
    EXPECT_TRUE(c.op_own & MLX5_INLINE_SCATTER_64) << len;
    EXPECT_FALSE(c.op_own & MLX5_INLINE_SCATTER_32) << len;
    EXPECT_EQ(bswap32(c.byte_cnt), len);
    EXPECT_EQ(memcmp(e.data(), msg, len), 0) << len;    // data in the first half ...
    EXPECT_EQ(rbuf[0], 0xeeu) << len;                   // ... not in memory
    EXPECT_EQ(bswap32(c.flags_rqpn) & 0xffffff, p.a->qp_num) << len;  // CQE intact
    EXPECT_EQ(wait_wc(other).status, IBV_WC_SUCCESS);
  }
  memset(rbuf, 0xee, sizeof rbuf);
  post_recv(p.b, rbuf, sizeof rbuf, mr->lkey);
  post_send(p.a, msg, 65, ms->lkey);
  auto e = r128.next();
  EXPECT_FALSE(cqe_of(e).op_own & (MLX5_INLINE_SCATTER_32 | MLX5_INLINE_SCATTER_64));
  EXPECT_EQ(memcmp(rbuf, msg, 65), 0);
  EXPECT_EQ(wait_wc(other).status, IBV_WC_SUCCESS);
  // 64-byte receive CQ: 48 bytes go to memory.
  RcPair q(d, other, other, other, r64.cq, false);
  ASSERT_TRUE(q.a);
  memset(rbuf, 0xee, sizeof rbuf);
  post_recv(q.b, rbuf, sizeof rbuf, mr->lkey);
  post_send(q.a, msg, 48, ms->lkey);
  e = r64.next();
  EXPECT_FALSE(cqe_of(e).op_own & (MLX5_INLINE_SCATTER_32 | MLX5_INLINE_SCATTER_64));
  EXPECT_EQ(memcmp(rbuf, msg, 48), 0);
  EXPECT_EQ(wait_wc(other).status, IBV_WC_SUCCESS);
  // Through ibv_poll_cq the driver copies the first half's data into the receive buffer.
  RcPair s(d, other, other, other, polled, false);
  ASSERT_TRUE(s.a);
  memset(rbuf, 0xee, sizeof rbuf);
  post_recv(s.b, rbuf, sizeof rbuf, mr->lkey);
  post_send(s.a, msg, 60, ms->lkey);
  ibv_wc wc = wait_wc(polled);
  EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
  EXPECT_EQ(wc.byte_len, 60u);
  EXPECT_EQ(wc.src_qp, s.a->qp_num);
  EXPECT_EQ(memcmp(rbuf, msg, 60), 0);
  EXPECT_EQ(rbuf[60], 0xeeu);
  EXPECT_EQ(wait_wc(other).status, IBV_WC_SUCCESS);
}

// Requester scatter (sq_sig_all) with a 128-byte send CQ: a read of up to 64 bytes and an atomic
// result land in the entry's first half (atomic results big-endian, as off the wire).
TEST(Cqe128, ReadAndAtomicResultsInTheFirstHalf) {
  Dev d;
  RawCq s128(dv_cq(d, 128));
  ibv_cq* other = ibv_create_cq(d.ctx, 16, nullptr, nullptr, 0);
  ibv_cq* polled = dv_cq(d, 128);
  ASSERT_TRUE(s128.cq && other && polled);
  static uint8_t remote[128], local[128];
  static uint64_t counter = 0x1122334455667788ull;
  for (int i = 0; i < 128; ++i) remote[i] = uint8_t(0x80 + i);
  ibv_mr* mrr = ibv_reg_mr(d.pd, remote, sizeof remote, kAll);
  ibv_mr* mrl = ibv_reg_mr(d.pd, local, sizeof local, kAll);
  ibv_mr* mrc = ibv_reg_mr(d.pd, &counter, 8, kAll);
  auto read = [&](ibv_qp* q, uint32_t len) {
    ibv_sge s{uint64_t(uintptr_t(local)), len, mrl->lkey};
    ibv_send_wr wr{}, *bad;
    wr.sg_list = &s;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_READ;
    wr.wr.rdma.remote_addr = uintptr_t(remote);
    wr.wr.rdma.rkey = mrr->rkey;
    ASSERT_EQ(ibv_post_send(q, &wr, &bad), 0);
  };
  RcPair p(d, s128.cq, other, other, other, true);
  ASSERT_TRUE(p.a);
  memset(local, 0, sizeof local);
  read(p.a, 56);
  auto e = s128.next();
  EXPECT_EQ(cqe_of(e).op_own >> 4, MLX5_CQE_REQ);
  EXPECT_TRUE(cqe_of(e).op_own & MLX5_INLINE_SCATTER_64);
  EXPECT_EQ(memcmp(e.data(), remote, 56), 0);
  EXPECT_EQ(local[0], 0u);
  read(p.a, 72);  // beyond 64: memory
  e = s128.next();
  EXPECT_FALSE(cqe_of(e).op_own & (MLX5_INLINE_SCATTER_32 | MLX5_INLINE_SCATTER_64));
  EXPECT_EQ(memcmp(local, remote, 72), 0);
  ibv_sge s{uint64_t(uintptr_t(local)), 8, mrl->lkey};
  ibv_send_wr wr{}, *bad;
  wr.sg_list = &s;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
  wr.wr.atomic.remote_addr = uintptr_t(&counter);
  wr.wr.atomic.rkey = mrc->rkey;
  wr.wr.atomic.compare_add = 1;
  ASSERT_EQ(ibv_post_send(p.a, &wr, &bad), 0);
  e = s128.next();
  EXPECT_TRUE(cqe_of(e).op_own & MLX5_INLINE_SCATTER_64);
  uint64_t v;
  memcpy(&v, e.data(), 8);
  EXPECT_EQ(bswap64(v), 0x1122334455667788ull);
  EXPECT_EQ(counter, 0x1122334455667789ull);
  // Through ibv_poll_cq the read data reaches the local buffer.
  RcPair q(d, polled, other, other, other, true);
  ASSERT_TRUE(q.a);
  memset(local, 0, sizeof local);
  read(q.a, 40);
  ibv_wc wc = wait_wc(polled);
  EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
  EXPECT_EQ(memcmp(local, remote, 40), 0);
  EXPECT_EQ(local[40], 0u);
}

// IGNORE_OVERRUN: the HCA does not look at the consumer index, so a consumer that never
// updates it (UCX's mlx5 transports) still gets every completion: entries are written over
// in ring order, owner bit by pass. Without the flag a full CQ takes no more entries.
TEST(Cqe128, IgnoreOverrunWritesPastTheConsumerIndex) {
  Dev d;
  ibv_cq* other = ibv_create_cq(d.ctx, 16, nullptr, nullptr, 0);
  static uint64_t src = 1, dst = 0;
  ibv_mr* ms = ibv_reg_mr(d.pd, &src, 8, kAll);
  ibv_mr* md = ibv_reg_mr(d.pd, &dst, 8, kAll);
  for (bool ignore : {true, false}) {
    RawCq r(dv_cq(d, 64, 3, ignore ? IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN : 0));
    ASSERT_NE(r.cq, nullptr);
    ASSERT_EQ(r.dv.cqe_cnt, 4u);
    RcPair p(d, r.cq, other, other, other, false);
    ASSERT_TRUE(p.a);
    const uint32_t n = r.dv.cqe_cnt + 2;  // two beyond a full ring, consumer index still 0
    for (uint32_t i = 0; i < n; ++i) {
      ibv_sge s{uint64_t(uintptr_t(&src)), 8, ms->lkey};
      ibv_send_wr wr{}, *bad;
      wr.sg_list = &s;
      wr.num_sge = 1;
      wr.opcode = IBV_WR_RDMA_WRITE;
      wr.send_flags = IBV_SEND_SIGNALED;
      wr.wr.rdma.remote_addr = uintptr_t(&dst);
      wr.wr.rdma.rkey = md->rkey;
      ASSERT_EQ(ibv_post_send(p.a, &wr, &bad), 0);
    }
    // Entry 1 is written at pass 0 (WQE 1) and, past the ring, at pass 1 (WQE 5).
    mlx5_cqe64* c = r.cqe(1);
    uint16_t want = ignore ? uint16_t(n - 1) : 1;
    uint8_t owner = ignore ? 1 : 0;
    for (int i = 0; i < 200000 && !(bswap16(c->wqe_counter) == want && (c->op_own & 1) == owner); ++i)
      usleep(10);
    EXPECT_EQ(bswap16(c->wqe_counter), want) << "ignore_overrun " << ignore;
    EXPECT_EQ(c->op_own & 1, owner) << "ignore_overrun " << ignore;
    EXPECT_EQ(c->op_own >> 4, MLX5_CQE_REQ);
    EXPECT_EQ(bswap16(r.cqe(2)->wqe_counter), 2u);  // not reached by the second pass
    ibv_destroy_qp(p.a);
    ibv_destroy_qp(p.b);
    ibv_destroy_cq(r.cq);
  }
}

// --- DevX resources: event channel, umem, UAR ----------------------------------------------

ibv_context* devx_ctx() {
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (!list || n < 1) return nullptr;
  mlx5dv_context_attr a{};
  a.flags = MLX5DV_CONTEXT_FLAGS_DEVX;
  ibv_context* c = mlx5dv_open_device(list[0], &a);
  ibv_free_device_list(list);
  return c;
}

// As the kernel's async event FD: flags 0 or OMIT_EV_DATA, a descriptor that polls readable
// only when an event is queued (none here), reads that fail with EAGAIN when made non-blocking,
// closed by destroy.
TEST(Devx, EventChannel) {
  ibv_context* c = devx_ctx();
  ASSERT_NE(c, nullptr);
  errno = 0;
  EXPECT_EQ(mlx5dv_devx_create_event_channel(c, mlx5dv_devx_create_event_channel_flags(2)), nullptr);
  EXPECT_EQ(errno, EINVAL);
  for (auto flags : {mlx5dv_devx_create_event_channel_flags(0),
                     MLX5DV_DEVX_CREATE_EVENT_CHANNEL_FLAGS_OMIT_EV_DATA}) {
    mlx5dv_devx_event_channel* ch = mlx5dv_devx_create_event_channel(c, flags);
    ASSERT_NE(ch, nullptr);
    int fd = ch->fd;
    ASSERT_GE(fd, 0);
    pollfd p{fd, POLLIN, 0};
    EXPECT_EQ(poll(&p, 1, 0), 0);  // nothing queued
    ASSERT_EQ(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK), 0);
    uint8_t buf[64];
    errno = 0;
    EXPECT_EQ(mlx5dv_devx_get_event(ch, reinterpret_cast<mlx5dv_devx_async_event_hdr*>(buf), sizeof buf), -1);
    EXPECT_EQ(errno, EAGAIN);
    mlx5dv_devx_destroy_event_channel(ch);
    EXPECT_EQ(fcntl(fd, F_GETFD), -1);  // closed
  }
  ibv_close_device(c);
}

// As ib_umem_get pins: mapped, and writable for a write access (EFAULT otherwise); distinct ids.
TEST(Devx, UmemRegistrationPinsAsTheKernel) {
  ibv_context* c = devx_ctx();
  ASSERT_NE(c, nullptr);
  const size_t pg = size_t(sysconf(_SC_PAGESIZE));
  void* rw = mmap(nullptr, 2 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  void* ro = mmap(nullptr, pg, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  void* gone = mmap(nullptr, pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_TRUE(rw != MAP_FAILED && ro != MAP_FAILED && gone != MAP_FAILED);
  munmap(gone, pg);
  const uint32_t w = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
  mlx5dv_devx_umem* a = mlx5dv_devx_umem_reg(c, rw, pg, w);
  mlx5dv_devx_umem* b = mlx5dv_devx_umem_reg(c, static_cast<uint8_t*>(rw) + pg, pg, w);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_NE(a->umem_id, b->umem_id);
  errno = 0;
  EXPECT_EQ(mlx5dv_devx_umem_reg(c, gone, pg, 0), nullptr);
  EXPECT_EQ(errno, EFAULT);
  errno = 0;
  EXPECT_EQ(mlx5dv_devx_umem_reg(c, ro, pg, IBV_ACCESS_LOCAL_WRITE), nullptr);
  EXPECT_EQ(errno, EFAULT);
  mlx5dv_devx_umem* r = mlx5dv_devx_umem_reg(c, ro, pg, IBV_ACCESS_REMOTE_READ);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(mlx5dv_devx_umem_dereg(r), 0);
  EXPECT_EQ(mlx5dv_devx_umem_dereg(a), 0);
  EXPECT_EQ(mlx5dv_devx_umem_dereg(b), 0);
  munmap(rw, 2 * pg);
  munmap(ro, pg);
  ibv_close_device(c);
}

// UARs as rdma-core hands them out: the register at offset 0x800 of a page-aligned base, a page
// (and page id) per BlueFlame allocation, one NC page per context; other flags EOPNOTSUPP.
TEST(Devx, UarAllocation) {
  ibv_context* c = devx_ctx();
  ASSERT_NE(c, nullptr);
  mlx5dv_devx_uar* a = mlx5dv_devx_alloc_uar(c, MLX5DV_UAR_ALLOC_TYPE_BF);
  mlx5dv_devx_uar* b = mlx5dv_devx_alloc_uar(c, MLX5DV_UAR_ALLOC_TYPE_BF);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(uintptr_t(a->base_addr) % 4096, 0u);
  EXPECT_EQ(static_cast<uint8_t*>(a->reg_addr) - static_cast<uint8_t*>(a->base_addr), 0x800);
  EXPECT_NE(a->base_addr, b->base_addr);
  EXPECT_NE(a->page_id, b->page_id);
  mlx5dv_devx_uar* n1 = mlx5dv_devx_alloc_uar(c, MLX5DV_UAR_ALLOC_TYPE_NC);
  mlx5dv_devx_uar* n2 = mlx5dv_devx_alloc_uar(c, MLX5DV_UAR_ALLOC_TYPE_NC);
  ASSERT_NE(n1, nullptr);
  EXPECT_EQ(n1, n2);
  errno = 0;
  EXPECT_EQ(mlx5dv_devx_alloc_uar(c, 4), nullptr);
  EXPECT_EQ(errno, EOPNOTSUPP);
  mlx5dv_devx_free_uar(a);
  mlx5dv_devx_free_uar(b);
  mlx5dv_devx_free_uar(n1);
  ibv_close_device(c);
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
  return softhca_test_main(argc, argv, "ucx-compat-test", [](const char* mode) {
    if (strcmp(mode, "port-files") != 0) return 64;
    // Every port's files against the verbs, then mlx5_0 port 1's table in short: each entry's
    // type, the GID's first bytes, the netdev ("-": none); and `cat` (a process without verbs
    // of its own: the shim loads the model) on the same SOFTHCA_NODE reads the same last GID.
    printf("%s", port_file_problems().c_str());
    const std::string dir = "/sys/class/infiniband/mlx5_0/ports/1/";
    std::string types = "types ", gids = "gids ", ndevs = "ndevs ", last;
    for (int i = 0; i < 8; ++i) {
      const std::string t = read_sysfs(dir + "gid_attrs/types/" + std::to_string(i), 0);
      if (t.empty() || t[0] == '(') break;
      const std::string g = read_sysfs(dir + "gids/" + std::to_string(i), 1);
      const std::string nd = read_sysfs(dir + "gid_attrs/ndevs/" + std::to_string(i), 2);
      types += t.substr(0, t.size() - 1) + "|";
      const bool v4 = g.rfind("0000:0000:0000:0000:0000:ffff:", 0) == 0;
      gids += g.substr(0, v4 ? 35 : 20) + "|";
      ndevs += (nd[0] == '(' ? std::string("-") : nd.substr(0, nd.size() - 1)) + "|";
      last = g;
    }
    printf("%s\n%s\n%s\n", types.c_str(), gids.c_str(), ndevs.c_str());
    const std::string file = "gids/" + std::to_string(types == "types IB/RoCE v1|" ? 0 : 3);
    fflush(stdout);
    FILE* p = popen(("cat " + dir + file).c_str(), "r");
    char line[128] = "";
    if (!p || !fgets(line, sizeof line, p)) line[0] = 0;
    if (p) pclose(p);
    printf("cat %s %s\n", file.c_str(), !last.empty() && line == last ? "the same" : ("differs: " + std::string(line) + " vs " + last).c_str());
    printf("done\n");
    return 0;
  });
}
