#include "wqe_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>

namespace softhca {
namespace {

constexpr unsigned kMaxLines = 100000;  // per process: a forgotten knob cannot fill the disk

struct Log {
  std::string prefix;
  std::mutex mu;
  int fd = -1;
  unsigned lines = 0;
};

Log& log() {
  static Log* l = [] {
    auto* p = new Log;  // never destroyed: WQEs may execute during exit
    if (const char* e = getenv("SOFTHCA_WQE_LOG"); e && *e) p->prefix = e;
    return p;
  }();
  return *l;
}

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::kRc: return "RC";
    case Kind::kUd: return "UD";
    case Kind::kDci: return "DCI";
    case Kind::kDct: return "DCT";
  }
  return "?";
}

}  // namespace

bool wqe_log_on() {
  static const bool on = !log().prefix.empty();
  return on;
}

void wqe_log(const Qp* qp, uint32_t start, const uint8_t* bytes, uint32_t len) {
  Log& l = log();
  std::lock_guard<std::mutex> g(l.mu);
  if (l.lines >= kMaxLines) return;
  if (l.fd < 0) {
    std::string path = l.prefix + "." + std::to_string(getpid());
    l.fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (l.fd < 0) {
      fprintf(stderr, "softhca: SOFTHCA_WQE_LOG: cannot open %s\n", path.c_str());
      l.lines = kMaxLines;
      return;
    }
  }
  std::string line(64 + 2 * size_t{len}, '\0');
  int n = snprintf(line.data(), 64, "wqe %s %06x %u ", kind_name(qp->kind),
                   qp->qpx.qp_base.qp_num, start & 0xffff);
  static const char kHex[] = "0123456789abcdef";
  size_t at = size_t(n);
  for (uint32_t i = 0; i < len; ++i) {
    line[at++] = kHex[bytes[i] >> 4];
    line[at++] = kHex[bytes[i] & 15];
  }
  line[at++] = '\n';
  line.resize(at);
  if (write(l.fd, line.data(), line.size()) < 0) l.lines = kMaxLines;
  l.lines++;
}

}  // namespace softhca
