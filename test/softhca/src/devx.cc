// softhca DevX entry points of libmlx5: the asynchronous event channel, user memory (umem)
// registration, UAR allocation and the DevX objects, with rdma-core 44's and the kernel's
// semantics. The objects themselves (QP, DCI, DCT) live in the model (src/devx_obj.cc).
//  * Event channel: a file descriptor that becomes readable when an event is queued; reads
//    return one event (8-byte cookie, then the 64-byte EQE unless created with OMIT_EV_DATA), as
//    mlx5dv_devx_get_event reads them. Flags other than OMIT_EV_DATA: EINVAL. Objects may be
//    subscribed to LAST_WQE_REACHED (see devx_obj.cc); other events EINVAL.
//  * umem: pinned as the kernel's ib_umem_get pins (unmapped, or read-only with a write access:
//    EFAULT; RLIMIT_MEMLOCK without CAP_IPC_LOCK: ENOMEM); each gets a distinct umem_id, which
//    CREATE_QP names; deregistering one an object still uses: EBUSY.
//  * UAR: a page of its own per allocation (BlueFlame type) or one shared page per context
//    (NC type), the doorbell register at offset 0x800 of the page as rdma-core hands out;
//    other flags EOPNOTSUPP. A store to the register rings the DevX QPs created on the page.
#include <infiniband/mlx5dv.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
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
int softhca_umem_add(void* addr, size_t size, uint32_t* id);
int softhca_umem_remove(uint32_t id);
void softhca_uar_add(uint32_t page_id, void* page);
void softhca_uar_remove(uint32_t page_id);
void* softhca_devx_obj_create(ibv_context* c, const void* in, size_t inlen, void* out,
                              size_t outlen, int* err);
int softhca_devx_obj_destroy(void* handle);
int softhca_devx_obj_cmd(void* handle, const void* in, size_t inlen, void* out, size_t outlen,
                         int query);
int softhca_devx_qp_cmd(ibv_qp* qp, const void* in, size_t inlen, void* out, size_t outlen,
                        int query);
int softhca_devx_subscribe(void* handle, int wfd, int omit, uint64_t cookie, const uint16_t* ev,
                           size_t n);
void softhca_devx_unsubscribe_fd(int wfd);
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
  softhca_uar_add(u->dv.page_id, page);
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
  int p[2];  // a datagram-like pair: one read returns one event, as the kernel's channel does
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, p)) return nullptr;
  shutdown(p[0], SHUT_WR);
  auto* ch = new EventChannel{};
  ch->dv.fd = p[0];
  ch->wfd = p[1];
  ch->omit_data = flags & MLX5DV_DEVX_CREATE_EVENT_CHANNEL_FLAGS_OMIT_EV_DATA;
  return &ch->dv;
}

void mlx5dv_devx_destroy_event_channel(mlx5dv_devx_event_channel* dv) {
  if (!dv) return;
  auto* ch = reinterpret_cast<EventChannel*>(dv);
  softhca_devx_unsubscribe_fd(ch->wfd);
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
  softhca_umem_add(addr, size, &u->dv.umem_id);
  u->addr = addr;
  u->size = size;
  return &u->dv;
}

int mlx5dv_devx_umem_dereg(mlx5dv_devx_umem* dv) {
  auto* u = reinterpret_cast<Umem*>(dv);
  if (int e = softhca_umem_remove(u->dv.umem_id)) {
    errno = e;
    return e;
  }
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
  softhca_uar_remove(u->dv.page_id);
  munmap(u->dv.base_addr, 4096);
  delete u;
}

mlx5dv_devx_obj* mlx5dv_devx_obj_create(ibv_context* c, const void* in, size_t inlen, void* out,
                                        size_t outlen) {
  if (!c || !softhca_is_softhca_device(c->device)) {
    errno = EOPNOTSUPP;
    return nullptr;
  }
  int e = 0;
  void* o = softhca_devx_obj_create(c, in, inlen, out, outlen, &e);
  if (!o) errno = e;
  return static_cast<mlx5dv_devx_obj*>(o);
}

int mlx5dv_devx_obj_destroy(mlx5dv_devx_obj* obj) {
  int e = softhca_devx_obj_destroy(obj);
  if (e) errno = e;
  return e;
}

int mlx5dv_devx_obj_modify(mlx5dv_devx_obj* obj, const void* in, size_t inlen, void* out,
                           size_t outlen) {
  int e = softhca_devx_obj_cmd(obj, in, inlen, out, outlen, 0);
  if (e) errno = e;
  return e;
}

int mlx5dv_devx_obj_query(mlx5dv_devx_obj* obj, const void* in, size_t inlen, void* out,
                          size_t outlen) {
  int e = softhca_devx_obj_cmd(obj, in, inlen, out, outlen, 1);
  if (e) errno = e;
  return e;
}

int mlx5dv_devx_qp_modify(ibv_qp* qp, const void* in, size_t inlen, void* out, size_t outlen) {
  int e = softhca_is_softhca_device(qp->context->device)
              ? softhca_devx_qp_cmd(qp, in, inlen, out, outlen, 0)
              : EOPNOTSUPP;
  if (e) errno = e;
  return e;
}

int mlx5dv_devx_qp_query(ibv_qp* qp, const void* in, size_t inlen, void* out, size_t outlen) {
  int e = softhca_is_softhca_device(qp->context->device)
              ? softhca_devx_qp_cmd(qp, in, inlen, out, outlen, 1)
              : EOPNOTSUPP;
  if (e) errno = e;
  return e;
}

int mlx5dv_devx_subscribe_devx_event(mlx5dv_devx_event_channel* dv, mlx5dv_devx_obj* obj,
                                     uint16_t events_sz, uint16_t events_num[], uint64_t cookie) {
  auto* ch = reinterpret_cast<EventChannel*>(dv);
  int e = softhca_devx_subscribe(obj, ch->wfd, ch->omit_data, cookie, events_num,
                                 events_sz / sizeof(uint16_t));
  if (e) errno = e;
  return e;
}

}  // extern "C"
