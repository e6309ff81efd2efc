// The PMI client against a scripted one-rank PMI server on a socketpair, in both protocol
// versions: values longer than the server's limit go in chunks, a launcher without a process
// mapping still gives the local ranks, PMI-2 barriers are made of keys. (Hydra itself runs the
// client in test/shmem's hydra_* tests.)
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <string>
#include <thread>

#include "lib/bootstrap/bootstrap_impl.h"

namespace {

// Reads "k=v" fields separated by `sep` (PMI-1: ' ', PMI-2: ';').
std::map<std::string, std::string> fields(const std::string &in, char sep) {
  std::map<std::string, std::string> f;
  size_t pos = 0;
  while (pos < in.size()) {
    size_t end = in.find(sep, pos);
    if (end == std::string::npos) end = in.size();
    const std::string w = in.substr(pos, end - pos);
    const size_t eq = w.find('=');
    if (eq != std::string::npos) f[w.substr(0, eq)] = w.substr(eq + 1);
    pos = end + 1;
  }
  return f;
}

class FakeServer {
 public:
  explicit FakeServer(int version) : v2_(version == 2) {
    int sv[2];
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    client_fd = sv[0];
    fd_ = sv[1];
    thread_ = std::thread([this] { serve(); });
  }
  ~FakeServer() {
    close(client_fd);
    thread_.join();
    close(fd_);
  }
  int client_fd;
  std::map<std::string, std::string> kvs;  // what the client put
  size_t longest_value = 0;
  bool finalized = false;

 private:
  bool read_line(std::string *line) {
    line->clear();
    for (char c;;) {
      if (read(fd_, &c, 1) != 1) return false;
      if (c == '\n') return true;
      *line += c;
    }
  }
  bool read_frame(std::string *body) {
    char len[7] = {};
    for (size_t got = 0; got < 6;) {
      const ssize_t n = read(fd_, len + got, 6 - got);
      if (n <= 0) return false;
      got += size_t(n);
    }
    body->assign(size_t(atoi(len)), '\0');
    for (size_t got = 0; got < body->size();) {
      const ssize_t n = read(fd_, body->data() + got, body->size() - got);
      if (n <= 0) return false;
      got += size_t(n);
    }
    return true;
  }
  void send_text(const std::string &s) { ASSERT_EQ(write(fd_, s.data(), s.size()), ssize_t(s.size())); }
  void reply(const std::string &body) {
    if (!v2_) return send_text(body + "\n");
    char len[8];
    snprintf(len, sizeof len, "%-6zu", body.size());
    send_text(len + body);
  }
  void serve() {
    std::string in;
    if (!read_line(&in)) return;  // both versions start with a PMI-1 line
    auto f = fields(in, ' ');
    EXPECT_EQ(f["pmi_version"], v2_ ? "2" : "1");
    send_text(std::string("cmd=response_to_init pmi_version=") + (v2_ ? "2" : "1") + " rc=0\n");
    if (v2_) return serve2();
    while (read_line(&in)) {
      f = fields(in, ' ');
      const std::string cmd = f["cmd"];
      if (cmd == "get_maxes") {
        reply("cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=40");
      } else if (cmd == "get_my_kvsname") {
        reply("cmd=my_kvsname kvsname=kvs_test");
      } else if (cmd == "put") {
        longest_value = std::max(longest_value, f["value"].size());
        kvs[f["key"]] = f["value"];
        reply("cmd=put_result rc=0 msg=success");
      } else if (cmd == "get") {
        auto it = kvs.find(f["key"]);  // no PMI_process_mapping: the client must cope
        reply(it == kvs.end() ? "cmd=get_result rc=-1 msg=not_found" : "cmd=get_result rc=0 value=" + it->second);
      } else if (cmd == "barrier_in") {
        reply("cmd=barrier_out");
      } else if (cmd == "finalize") {
        finalized = true;
        reply("cmd=finalize_ack");
      } else {
        ADD_FAILURE() << "unexpected PMI-1 command: " << in;
        return;
      }
    }
  }
  void serve2() {
    std::string in;
    while (read_frame(&in)) {
      auto f = fields(in, ';');
      const std::string cmd = f["cmd"];
      if (cmd == "fullinit") {
        reply("cmd=fullinit-response;pmi-version=2;pmi-subversion=0;rank=0;size=1;appnum=0;rc=0;");
      } else if (cmd == "info-getjobattr") {
        reply(f["key"] == "PMI_process_mapping" ? "cmd=info-getjobattr-response;found=TRUE;value=(vector,(0,1,1));rc=0;"
                                                : "cmd=info-getjobattr-response;found=FALSE;rc=0;");
      } else if (cmd == "kvs-put") {
        longest_value = std::max(longest_value, f["value"].size());
        kvs[f["key"]] = f["value"];
        reply("cmd=kvs-put-response;rc=0;");
      } else if (cmd == "kvs-get") {
        auto it = kvs.find(f["key"]);
        reply(it == kvs.end() ? "cmd=kvs-get-response;found=FALSE;rc=0;"
                              : "cmd=kvs-get-response;found=TRUE;value=" + it->second + ";rc=0;");
      } else if (cmd == "kvs-fence") {
        reply("cmd=kvs-fence-response;rc=0;");
      } else if (cmd == "finalize") {
        finalized = true;
        reply("cmd=finalize-response;rc=0;");
      } else {
        ADD_FAILURE() << "unexpected PMI-2 command: " << in;
        return;
      }
    }
  }
  const bool v2_;
  int fd_;
  std::thread thread_;
};

void run_client(int version, FakeServer &server) {
  setenv("PMI_FD", std::to_string(server.client_fd).c_str(), 1);
  setenv("PMI_RANK", "0", 1);
  setenv("PMI_SIZE", "1", 1);
  auto boot = hoshmem::make_pmi_bootstrap(version);
  EXPECT_EQ(boot->rank(), 0);
  EXPECT_EQ(boot->size(), 1);
  EXPECT_EQ(boot->local_ranks(), std::vector<int>{0});
  EXPECT_STREQ(boot->launcher(), version == 2 ? "pmi-2 (PMI_FD)" : "pmi-1 (PMI_FD)");
  std::vector<uint8_t> big(1000), small{1, 2, 3};
  for (size_t i = 0; i < big.size(); ++i) big[i] = uint8_t(i * 7 + 3);
  boot->begin_session();
  boot->put("big", big.data(), big.size());
  boot->put("small", small.data(), small.size());
  boot->put("empty", nullptr, 0);
  boot->exchange();
  EXPECT_EQ(boot->get(0, "big"), big);
  EXPECT_EQ(boot->get(0, "small"), small);
  EXPECT_TRUE(boot->get(0, "empty").empty());
  boot->barrier();
  boot->finalize();
}

TEST(PmiClient, Pmi1ChunksLongValuesAndFindsLocalRanksWithoutAMapping) {
  FakeServer server(1);
  run_client(1, server);
  EXPECT_TRUE(server.finalized);
  EXPECT_LE(server.longest_value, 40u);     // the server's vallen_max
  EXPECT_GT(server.kvs.size(), 1000u / 19);  // 1000 bytes in values of at most 19
  EXPECT_EQ(server.kvs.count("hoshmem-host.0.0"), 1u);  // no mapping: hosts were exchanged
}

TEST(PmiClient, Pmi2UsesTheMappingAndBuildsBarriersFromKeys) {
  FakeServer server(2);
  run_client(2, server);
  EXPECT_TRUE(server.finalized);
  EXPECT_LE(server.longest_value, 768u);
  bool barrier_key = false, host_key = false;
  for (auto &[k, v] : server.kvs) {
    barrier_key |= k.rfind("hoshmem-barrier.", 0) == 0;
    host_key |= k.rfind("hoshmem-host", 0) == 0;
  }
  EXPECT_TRUE(barrier_key);
  EXPECT_FALSE(host_key);  // the mapping said where every rank is
}

}  // namespace
