// PMI-1 and PMI-2 client bootstrap, for launchers that serve the PMI wire protocol instead of
// PMIx (MPICH's Hydra, `srun --mpi=pmi2`): text commands over the socket the launcher passes in
// PMI_FD. PMI-1 commands are one line of space-separated key=value pairs; PMI-2 commands are
// key=value pairs ended by ';', preceded by their length in 6 characters.
//
// The key-value space is the job's, not each process's: keys carry the publishing rank (and the
// session). Values are text of limited length (1024 bytes under Hydra), so data is hex-encoded and
// split over several keys when long.
#include <errno.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

#include "lib/base/error.h"
#include "lib/bootstrap/bootstrap_impl.h"

namespace hoshmem {
namespace {

using Fields = std::map<std::string, std::string>;

}  // namespace

// The blocks give ranks to nodes in order and repeat until every rank has one.
std::vector<int> parse_process_mapping(const std::string &text, int size) {
  std::vector<int> blocks;  // triples
  const char *p = text.c_str();
  while (*p == ' ') ++p;
  if (strncmp(p, "(vector,", 8) != 0) return {};
  p += 8;
  while (*p == '(') {
    long v[3];
    ++p;
    for (int i = 0; i < 3; ++i) {
      char *end;
      v[i] = strtol(p, &end, 10);
      if (end == p || v[i] < 0 || v[i] > (1 << 24)) return {};
      p = end;
      if (*p != (i < 2 ? ',' : ')')) return {};
      ++p;
    }
    if (v[1] == 0 || v[2] == 0) return {};
    blocks.insert(blocks.end(), {int(v[0]), int(v[1]), int(v[2])});
    if (*p == ',') ++p;
  }
  if (*p != ')' || blocks.empty()) return {};
  std::vector<int> node(size_t(size), -1);
  int r = 0;
  while (r < size)
    for (size_t b = 0; b < blocks.size() && r < size; b += 3)
      for (int n = 0; n < blocks[b + 1] && r < size; ++n)
        for (int k = 0; k < blocks[b + 2] && r < size; ++k) node[size_t(r++)] = blocks[b] + n;
  return node;
}

namespace {

std::string hex(const uint8_t *p, size_t n) {
  static const char digits[] = "0123456789abcdef";
  std::string s(2 * n, '0');
  for (size_t i = 0; i < n; ++i) {
    s[2 * i] = digits[p[i] >> 4];
    s[2 * i + 1] = digits[p[i] & 15];
  }
  return s;
}

bool unhex(const std::string &s, std::vector<uint8_t> *out) {
  auto val = [](char c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1; };
  if (s.size() % 2) return false;
  for (size_t i = 0; i < s.size(); i += 2) {
    const int hi = val(s[i]), lo = val(s[i + 1]);
    if (hi < 0 || lo < 0) return false;
    out->push_back(uint8_t(hi << 4 | lo));
  }
  return true;
}

class PmiBootstrap final : public Bootstrap {
 public:
  explicit PmiBootstrap(int version) : v2_(version == 2) {
    const char *fd_text = getenv("PMI_FD");
    char *end = nullptr;
    const long fd = fd_text ? strtol(fd_text, &end, 10) : -1;
    if (!fd_text || *end || fd < 0)
      fatal("shmem_init", "PMI_FD is '%s': not the socket of a PMI launcher", fd_text ? fd_text : "");
    fd_ = int(fd);
    // Both versions start with the same PMI-1 line; the answer says which version is served.
    const std::string want = v2_ ? "2" : "1";
    Fields r = command1("cmd=init pmi_version=" + want + " pmi_subversion=" + (v2_ ? "0" : "1"),
                        "response_to_init");
    if (r["rc"] != "0" || r["pmi_version"] != want)
      fatal("shmem_init", "the launcher does not serve PMI-%s (it answered version %s, rc %s)%s",
            want.c_str(), r["pmi_version"].c_str(), r["rc"].c_str(),
            v2_ ? "; HOSHMEM_PMI=pmi1 asks for PMI-1" : "");
    std::string mapping;
    if (v2_) {
      // Slurm wants the job id it exported (it answers rc 3 without it), Hydra exports none.
      const char *rank = getenv("PMI_RANK"), *jobid = getenv("PMI_JOBID");
      Fields f = command2(std::string("cmd=fullinit;") + (jobid ? "pmijobid=" + std::string(jobid) + ";" : "") +
                              (rank ? "pmirank=" + std::string(rank) + ";" : "") + "threaded=FALSE;",
                          "fullinit-response");
      rank_ = number(f, "rank");
      size_ = number(f, "size");
      Fields m = command2("cmd=info-getjobattr;key=PMI_process_mapping;", "info-getjobattr-response");
      if (m["found"] == "TRUE") mapping = m["value"];
    } else {
      rank_ = env_number("PMI_RANK");
      size_ = env_number("PMI_SIZE");
      Fields maxes = command1("cmd=get_maxes", "maxes");
      value_max_ = std::min<size_t>(value_max_, size_t(std::max(number(maxes, "vallen_max"), 16)));
      kvs_ = command1("cmd=get_my_kvsname", "my_kvsname")["kvsname"];
      // A put line holds the space's name, a key (library keys stay under 64 bytes) and the value.
      value_max_ = std::min(value_max_, std::max<size_t>(64, 1000 - std::min<size_t>(kvs_.size(), 900) - 100));
      Fields m = command1("cmd=get kvsname=" + kvs_ + " key=PMI_process_mapping", "get_result");
      if (m["rc"] == "0") mapping = m["value"];
    }
    if (rank_ < 0 || size_ < 1 || rank_ >= size_)
      fatal("shmem_init", "the PMI launcher gave rank %d of %d", rank_, size_);
    find_local_ranks(mapping);
    describe_ = v2_ ? "pmi-2 (PMI_FD)" : "pmi-1 (PMI_FD)";
  }

  // As for PMIx: no finalize message unless shmem_finalize, so that a process that exits
  // without it looks dead to the launcher.
  ~PmiBootstrap() override = default;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const std::vector<int> &local_ranks() const override { return local_; }
  const char *launcher() const override { return describe_.c_str(); }
  void begin_session() override { ++session_; }

  // Chunk 0: "<total length>:<hex>"; chunks 1.. under "<key>#<i>".
  void put(const char *key, const void *data, size_t len) override {
    const auto *p = static_cast<const uint8_t *>(data);
    const std::string head = std::to_string(len) + ":";
    const size_t per = (value_max_ - 1) / 2, first = (value_max_ - 1 - head.size()) / 2;
    put_text(job_key(key, rank_), head + hex(p, std::min(len, first)));
    size_t i = 1;
    for (size_t off = first; off < len; off += per, ++i)
      put_text(job_key(key, rank_) + "#" + std::to_string(i), hex(p + off, std::min(per, len - off)));
  }

  void exchange() override { barrier(); }

  std::vector<uint8_t> get(int rank, const char *key) override {
    std::string text;
    if (!get_text(rank, job_key(key, rank), &text))
      fatal("shmem_init", "PE %d published no '%s' through the PMI launcher", rank, key);
    const size_t colon = text.find(':');
    const size_t len = colon == std::string::npos ? 0 : strtoul(text.c_str(), nullptr, 10);
    std::vector<uint8_t> out;
    out.reserve(len);
    bool ok = colon != std::string::npos && unhex(text.substr(colon + 1), &out);
    for (int i = 1; ok && out.size() < len; ++i)
      ok = get_text(rank, job_key(key, rank) + "#" + std::to_string(i), &text) && unhex(text, &out);
    if (!ok || out.size() != len)
      fatal("shmem_init", "the value '%s' of PE %d from the PMI launcher is malformed", key, rank);
    return out;
  }

  // PMI-1's barrier_in/barrier_out is one. PMI-2's kvs-fence is one under Slurm (and a put is
  // visible to others only after it) but not under Hydra (answered at once; a get is held until
  // its key is put). So a PMI-2 barrier is built from keys and two fences, which works both ways:
  // each rank but 0 puts its key; fence; rank 0 waits for them all and puts the release; fence;
  // the others wait for the release. Every rank's earlier puts are committed by the first fence.
  void barrier() override {
    if (!v2_) {
      command1("cmd=barrier_in", "barrier_out");
      return;
    }
    const std::string tag = "hoshmem-barrier." + std::to_string(barriers_++) + ".";
    if (rank_ != 0) put_text(tag + std::to_string(rank_), "1");
    fence();
    if (rank_ == 0) {
      for (int r = 1; r < size_; ++r) wait_text(r, tag + std::to_string(r));
      put_text(tag + "done", "1");
    }
    fence();
    if (rank_ != 0) wait_text(0, tag + "done");
  }

  // The launcher ends every process of the job and reports the status. The message must not
  // carry the protocol's separators.
  [[noreturn]] void abort(int status, const char *message) override {
    fflush(nullptr);
    std::string m = message ? message : "";
    for (char &c : m)
      if (c == ';' || c == '=' || c == '\n') c = ' ';
    wait_output_read();
    std::unique_lock<std::mutex> g(mu_, std::try_to_lock);  // another thread may be mid-command
    if (v2_)
      send_all(framed("cmd=abort;isworldabort=TRUE;msg=" + m + ";"));
    else
      send_all("cmd=abort exitcode=" + std::to_string(status) + "\n");
    _exit(status);
  }

  // Hydra forwards a process's output from the pipes it reads, and kills the job as soon as an
  // abort arrives: the one line saying why would be lost if it were still in the pipe. Waits
  // (at most a second) until the launcher has read stdout and stderr.
  static void wait_output_read() {
    for (int i = 0; i < 1000; ++i) {
      int out = 0, err = 0;
      if ((ioctl(1, FIONREAD, &out) != 0 || out == 0) && (ioctl(2, FIONREAD, &err) != 0 || err == 0))
        return;
      usleep(1000);
    }
  }

  void finalize() override {
    if (finalized_) return;
    finalized_ = true;
    if (v2_)
      command2("cmd=finalize;", "finalize-response");
    else
      command1("cmd=finalize", "finalize_ack");
  }

 private:
  std::string job_key(const char *key, int rank) const {
    return std::string(key) + "." + std::to_string(session_) + "." + std::to_string(rank);
  }

  void put_text(const std::string &key, const std::string &value) {
    if (v2_)
      check(command2("cmd=kvs-put;key=" + key + ";value=" + value + ";", "kvs-put-response"), "kvs-put");
    else
      check(command1("cmd=put kvsname=" + kvs_ + " key=" + key + " value=" + value, "put_result"), "put");
  }

  void fence() { check(command2("cmd=kvs-fence;", "kvs-fence-response"), "kvs-fence"); }

  // A key another rank is about to put: asked again until it is there (a rank that died ends
  // the job through the launcher).
  void wait_text(int rank, const std::string &key) {
    std::string value;
    for (useconds_t pause = 1000; !get_text(rank, key, &value); pause = std::min<useconds_t>(2 * pause, 20000))
      usleep(pause);
  }

  bool get_text(int rank, const std::string &key, std::string *value) {
    Fields f = v2_ ? command2("cmd=kvs-get;jobid=;srcid=" + std::to_string(rank) + ";key=" + key + ";",
                              "kvs-get-response")
                   : command1("cmd=get kvsname=" + kvs_ + " key=" + key, "get_result");
    if (v2_ ? f["found"] != "TRUE" : f["rc"] != "0") return false;
    *value = f["value"];
    return true;
  }

  // Ranks on this node: from the launcher's process mapping, or else from every rank's host
  // (boot id and host name) exchanged through the key-value space.
  void find_local_ranks(const std::string &mapping) {
    std::vector<int> node = parse_process_mapping(mapping, size_);
    if (node.empty()) {
      char host[256] = {};
      gethostname(host, sizeof host - 1);
      std::string id = host;
      if (FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r")) {
        char boot[64] = {};
        if (fgets(boot, sizeof boot, f)) id += std::string("/") + boot;
        fclose(f);
      }
      put("hoshmem-host", id.data(), id.size());
      barrier();
      std::map<std::vector<uint8_t>, int> ids;
      node.resize(size_t(size_));
      for (int r = 0; r < size_; ++r) node[size_t(r)] = ids.emplace(get(r, "hoshmem-host"), int(ids.size())).first->second;
    }
    for (int r = 0; r < size_; ++r)
      if (node[size_t(r)] == node[size_t(rank_)]) local_.push_back(r);
  }

  void check(Fields f, const char *what) {
    if (f["rc"] != "0")
      fatal("shmem_init", "PMI %s failed: rc %s %s", what, f["rc"].c_str(), f["msg"].c_str());
  }

  int number(Fields &f, const char *key) {
    const std::string &s = f[key];
    char *end = nullptr;
    const long v = strtol(s.c_str(), &end, 10);
    if (s.empty() || *end) fatal("shmem_init", "the PMI launcher sent no number for '%s'", key);
    return int(v);
  }

  int env_number(const char *name) {
    const char *s = getenv(name);
    char *end = nullptr;
    const long v = s ? strtol(s, &end, 10) : -1;
    if (!s || *end) fatal("shmem_init", "%s is '%s' under a PMI-1 launcher: not a number", name, s ? s : "");
    return int(v);
  }

  static std::string framed(const std::string &body) {
    char len[8];
    snprintf(len, sizeof len, "%-6zu", body.size());
    return len + body;
  }

  void send_all(const std::string &s) {
    for (size_t off = 0; off < s.size();) {
      const ssize_t n = ::send(fd_, s.data() + off, s.size() - off, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) lost();
      off += size_t(n);
    }
  }

  void recv_exact(char *p, size_t n) {
    for (size_t off = 0; off < n;) {
      const ssize_t r = ::recv(fd_, p + off, n - off, 0);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) lost();
      off += size_t(r);
    }
  }

  [[noreturn]] void lost() {
    fatal("shmem_init", "the PMI launcher closed its connection (PMI_FD %d): %s", fd_,
          errno ? strerror(errno) : "end of file");
  }

  // One PMI-1 command and its one-line answer, which must be `expect`.
  Fields command1(const std::string &line, const char *expect) {
    std::lock_guard<std::mutex> g(mu_);
    send_all(line + "\n");
    std::string in;
    for (char c = 0; c != '\n';) {
      recv_exact(&c, 1);
      if (c != '\n') in += c;
    }
    Fields f;
    size_t pos = 0;
    while (pos < in.size()) {
      size_t end = in.find(' ', pos);
      if (end == std::string::npos) end = in.size();
      const std::string word = in.substr(pos, end - pos);
      const size_t eq = word.find('=');
      if (eq != std::string::npos) f[word.substr(0, eq)] = word.substr(eq + 1);
      pos = end + 1;
    }
    expect_cmd(f, expect, in);
    return f;
  }

  // One PMI-2 command and its answer ("value" may hold ';' written as ";;").
  Fields command2(const std::string &body, const char *expect) {
    std::lock_guard<std::mutex> g(mu_);
    send_all(framed(body));
    char len[7] = {};
    recv_exact(len, 6);
    char *end = nullptr;
    const long n = strtol(len, &end, 10);
    if (n <= 0 || n > (1 << 20)) fatal("shmem_init", "the PMI-2 launcher sent a frame of length '%s'", len);
    std::string in(size_t(n), '\0');
    recv_exact(in.data(), in.size());
    Fields f;
    std::string key, val;
    bool in_val = false;
    for (size_t i = 0; i < in.size(); ++i) {
      const char c = in[i];
      if (c == ';' && i + 1 < in.size() && in[i + 1] == ';') {
        (in_val ? val : key) += ';';
        ++i;
      } else if (c == ';') {
        f[key] = val;
        key.clear();
        val.clear();
        in_val = false;
      } else if (c == '=' && !in_val) {
        in_val = true;
      } else {
        (in_val ? val : key) += c;
      }
    }
    expect_cmd(f, expect, in);
    return f;
  }

  void expect_cmd(Fields &f, const char *expect, const std::string &in) {
    if (f["cmd"] != expect)
      fatal("shmem_init", "the PMI launcher answered '%.80s' where '%s' was due", in.c_str(), expect);
  }

  const bool v2_;
  int fd_ = -1;
  int rank_ = -1, size_ = 0, session_ = 0, barriers_ = 0;
  // Text per value: below PMI-2's 1024 and what PMI-1 servers say, with room in a PMI-1 line
  // (Hydra reads 1024 bytes per line, key and key-value space name included).
  size_t value_max_ = 768;
  bool finalized_ = false;
  std::string kvs_;  // PMI-1: the job's key-value space
  std::vector<int> local_;
  std::string describe_;
  std::mutex mu_;
};

}  // namespace

std::unique_ptr<Bootstrap> make_pmi_bootstrap(int version) {
  return std::make_unique<PmiBootstrap>(version);
}

}  // namespace hoshmem
