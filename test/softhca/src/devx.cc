// softhca DevX resources that exist without DevX objects: the asynchronous event channel, user
// memory (umem) registration and UAR allocation, with rdma-core 44's and the kernel's semantics.
//  * Event channel: a file descriptor that becomes readable when an event is queued; reads
//    return one event (8-byte cookie, then the event data unless created with OMIT_EV_DATA), as
//    mlx5dv_devx_get_event reads them. Flags other than OMIT_EV_DATA: EINVAL. The model has no
//    DevX objects yet, so nothing can be subscribed (mlx5dv_devx_subscribe_devx_event stays
//    EOPNOTSUPP) and no event is ever queued.
//  * umem: pinned as the kernel's ib_umem_get pins (unmapped, or read-only with a write access:
//    EFAULT; RLIMIT_MEMLOCK without CAP_IPC_LOCK: ENOMEM); each gets a distinct umem_id.
//  * UAR: a page of its own per allocation (BlueFlame type) or one shared page per context
//    (NC type), the doorbell register at offset 0x800 of the page as rdma-core hands out;
//    other flags EOPNOTSUPP. Nothing uses a DevX UAR yet: stores to it have no effect.
#include <infiniband/mlx5dv.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <mutex>

extern "C" {
bool softhca_is_softhca_device(ibv_device* d);
int softhca_pin_umem(const void* addr, size_t len, unsigned access);
void softhca_unpin_umem(const void* addr, size_t len);
}

namespace {

struct EventChannel {
  mlx5dv_devx_event_channel dv;  // first: the pointer handed out
  int wfd;                       // where the model would queue events
  bool omit_data;
};

struct Umem {
  mlx5dv_devx_umem dv;  // first
  void* addr;
  size_t size;
};

struct Uar {
  mlx5dv_devx_uar dv;  // first
  ibv_context* ctx;
  bool shared;
};

std::atomic<uint32_t> g_next_umem_id{0x1000};
std::atomic<uint32_t> g_next_uar_page{0x100};
std::mutex g_nc_mu;
std::map<ibv_context*, Uar*> g_nc_uars;  // the NC singleton of each context

Uar* new_uar(ibv_context* c, bool shared) {
  void* page = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (page == MAP_FAILED) {
    errno = ENOMEM;
    return nullptr;
  }
  auto* u = new Uar{};
  u->ctx = c;
  u->shared = shared;
  u->dv.base_addr = page;
  u->dv.reg_addr = static_cast<uint8_t*>(page) + 0x800;  // MLX5_BF_OFFSET
  u->dv.page_id = g_next_uar_page.fetch_add(1);
  u->dv.mmap_off = off_t(u->dv.page_id) * 4096;
  u->dv.comp_mask = 0;
  return u;
}

}  // namespace

extern "C" {

mlx5dv_devx_event_channel* mlx5dv_devx_create_event_channel(
    ibv_context* c, enum mlx5dv_devx_create_event_channel_flags flags) {
  if (!c || !softhca_is_softhca_device(c->device)) {
    errno = EOPNOTSUPP;
    return nullptr;
  }
  if (flags & ~uint32_t(MLX5DV_DEVX_CREATE_EVENT_CHANNEL_FLAGS_OMIT_EV_DATA)) {
    errno = EINVAL;
    return nullptr;
  }
  int p[2];
  if (pipe2(p, O_CLOEXEC)) return nullptr;
  auto* ch = new EventChannel{};
  ch->dv.fd = p[0];
  ch->wfd = p[1];
  ch->omit_data = flags & MLX5DV_DEVX_CREATE_EVENT_CHANNEL_FLAGS_OMIT_EV_DATA;
  return &ch->dv;
}

void mlx5dv_devx_destroy_event_channel(mlx5dv_devx_event_channel* dv) {
  if (!dv) return;
  auto* ch = reinterpret_cast<EventChannel*>(dv);
  close(ch->dv.fd);
  close(ch->wfd);
  delete ch;
}

ssize_t mlx5dv_devx_get_event(mlx5dv_devx_event_channel* dv, mlx5dv_devx_async_event_hdr* data,
                              size_t len) {
  ssize_t n = read(dv->fd, data, len);
  if (n < 0) return -1;
  if (size_t(n) < sizeof(*data)) {  // the cookie is always there
    errno = EINVAL;
    return -1;
  }
  return n;
}

mlx5dv_devx_umem* mlx5dv_devx_umem_reg(ibv_context* c, void* addr, size_t size, uint32_t access) {
  if (!c || !softhca_is_softhca_device(c->device)) {
    errno = EOPNOTSUPP;
    return nullptr;
  }
  if (int e = softhca_pin_umem(addr, size, access)) {
    errno = e;
    return nullptr;
  }
  auto* u = new Umem{};
  u->dv.umem_id = g_next_umem_id.fetch_add(1);
  u->addr = addr;
  u->size = size;
  return &u->dv;
}

int mlx5dv_devx_umem_dereg(mlx5dv_devx_umem* dv) {
  auto* u = reinterpret_cast<Umem*>(dv);
  softhca_unpin_umem(u->addr, u->size);
  delete u;
  return 0;
}

mlx5dv_devx_uar* mlx5dv_devx_alloc_uar(ibv_context* c, uint32_t flags) {
  if (!c || !softhca_is_softhca_device(c->device) ||
      (flags & ~uint32_t(MLX5DV_UAR_ALLOC_TYPE_NC))) {
    errno = EOPNOTSUPP;
    return nullptr;
  }
  if (flags & MLX5DV_UAR_ALLOC_TYPE_NC) {  // one per context, as rdma-core's singleton
    std::lock_guard<std::mutex> g(g_nc_mu);
    Uar*& u = g_nc_uars[c];
    if (!u) u = new_uar(c, true);
    return u ? &u->dv : nullptr;
  }
  Uar* u = new_uar(c, false);
  return u ? &u->dv : nullptr;
}

void mlx5dv_devx_free_uar(mlx5dv_devx_uar* dv) {
  if (!dv) return;
  auto* u = reinterpret_cast<Uar*>(dv);
  if (u->shared) return;  // the context's NC page stays, as rdma-core's singleton does
  munmap(u->dv.base_addr, 4096);
  delete u;
}

}  // extern "C"
