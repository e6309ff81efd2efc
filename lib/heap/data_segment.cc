#include "lib/heap/data_segment.h"

#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "lib/base/error.h"
#include "lib/transport/shm/shm_file.h"

namespace hoshmem {
namespace {

struct Search {
  uintptr_t start = 0, end = 0, relro_end = 0;
  bool done = false;
};

int visit_executable(dl_phdr_info *info, size_t, void *arg) {
  auto *s = static_cast<Search *>(arg);
  if (s->done) return 1;
  s->done = true;  // the first object reported is the executable itself
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr) &ph = info->dlpi_phdr[i];
    uintptr_t lo = info->dlpi_addr + ph.p_vaddr, hi = lo + ph.p_memsz;
    if (ph.p_type == PT_LOAD && (ph.p_flags & PF_W)) {
      s->start = s->start ? std::min(s->start, lo) : lo;
      s->end = std::max(s->end, hi);
    } else if (ph.p_type == PT_GNU_RELRO) {
      s->relro_end = hi;
    }
  }
  return 1;
}

bool page_is_zero(const char *p, size_t page) {
  static const char zeros[4096] = {};
  for (size_t off = 0; off < page; off += sizeof zeros)
    if (memcmp(p + off, zeros, std::min(sizeof zeros, page - off)) != 0) return false;
  return true;
}

DataSegment g_shared;

}  // namespace

DataSegment find_data_segment() {
  Search s;
  dl_iterate_phdr(visit_executable, &s);
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  DataSegment seg;
  if (!s.end) return seg;
  uintptr_t start = s.start & ~(page - 1);
  // RELRO pages are made read-only after relocation; the linker page-aligns their end.
  if (s.relro_end > start && s.relro_end < s.end) start = (s.relro_end + page - 1) & ~(page - 1);
  uintptr_t end = (s.end + page - 1) & ~(page - 1);
  if (end <= start) return seg;
  seg.base = start;
  seg.size = end - start;
  return seg;
}

DataSegment share_data_segment() {
  if (g_shared.fd >= 0) return g_shared;
  DataSegment seg = find_data_segment();
  if (!seg.size) return seg;
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  seg.fd = shm::create_file("hoshmem-data", seg.size);
  // Copy the current contents, skipping zero pages (they read back as zero from the new file).
  auto *base = reinterpret_cast<const char *>(seg.base);
  for (size_t off = 0; off < seg.size; off += page) {
    if (page_is_zero(base + off, page)) continue;
    if (pwrite(seg.fd, base + off, page, static_cast<off_t>(off)) != static_cast<ssize_t>(page))
      fatal("shmem_init", "cannot copy the data segment into shared memory: %s",
            strerror(errno));
  }
  shm::map_file(seg.fd, seg.size, reinterpret_cast<void *>(seg.base));
  g_shared = seg;
  return seg;
}

}  // namespace hoshmem
