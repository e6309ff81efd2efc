// PMIx client bootstrap: rank/size/locality from the launcher's job info, data exchange with
// Put/Commit/Fence(collect)/Get.
#include <pmix.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

#include "lib/base/error.h"
#include "lib/bootstrap/bootstrap_impl.h"

namespace hoshmem {
namespace {

class PmixBootstrap final : public Bootstrap {
 public:
  PmixBootstrap() {
    pmix_status_t rc = PMIx_Init(&me_, nullptr, 0);
    if (rc != PMIX_SUCCESS)
      fatal("shmem_init", "cannot connect to the PMIx server of the launcher: %s",
            PMIx_Error_string(rc));
    initialized_ = true;
    PMIX_LOAD_PROCID(&job_, me_.nspace, PMIX_RANK_WILDCARD);
    size_ = static_cast<int>(get_job_uint32(PMIX_JOB_SIZE));
    local_ = parse_peers(get_job_string(PMIX_LOCAL_PEERS));
    // oshrun's namespace is the job's secret (it admits a client to the job): not printed.
    const std::string nspace = me_.nspace;
    describe_ = nspace.starts_with("oshrun.") ? std::string("pmix (oshrun)")
                                              : "pmix (namespace " + nspace + ")";
  }

  // No PMIx_Finalize here: a process that exits without shmem_finalize must look like one that
  // died to the launcher (the runtime finalizes explicitly at exit after a shmem_finalize).
  ~PmixBootstrap() override = default;

  void begin_session() override { ++session_; }

  int rank() const override { return static_cast<int>(me_.rank); }
  int size() const override { return size_; }
  const std::vector<int> &local_ranks() const override { return local_; }
  const char *launcher() const override { return describe_.c_str(); }

  void put(const char *key, const void *data, size_t len) override {
    pmix_value_t value;
    PMIX_VALUE_CONSTRUCT(&value);
    value.type = PMIX_BYTE_OBJECT;
    value.data.bo.bytes = static_cast<char *>(const_cast<void *>(data));
    value.data.bo.size = len;
    check(PMIx_Put(PMIX_GLOBAL, session_key(key).c_str(), &value), "PMIx_Put");
  }

  void exchange() override {
    check(PMIx_Commit(), "PMIx_Commit");
    pmix_info_t info;
    bool collect = true;
    PMIX_INFO_LOAD(&info, PMIX_COLLECT_DATA, &collect, PMIX_BOOL);
    check(PMIx_Fence(nullptr, 0, &info, 1), "PMIx_Fence");
    PMIX_INFO_DESTRUCT(&info);
  }

  std::vector<uint8_t> get(int rank, const char *key) override {
    pmix_proc_t proc;
    PMIX_LOAD_PROCID(&proc, me_.nspace, static_cast<pmix_rank_t>(rank));
    pmix_value_t *value = nullptr;
    pmix_status_t rc = PMIx_Get(&proc, session_key(key).c_str(), nullptr, 0, &value);
    if (rc != PMIX_SUCCESS || value == nullptr || value->type != PMIX_BYTE_OBJECT)
      fatal("shmem_init", "PMIx_Get of '%s' from PE %d failed: %s", key, rank,
            PMIx_Error_string(rc));
    auto p = reinterpret_cast<const uint8_t *>(value->data.bo.bytes);
    std::vector<uint8_t> out(p, p + value->data.bo.size);
    PMIX_VALUE_RELEASE(value);
    return out;
  }

  void barrier() override { check(PMIx_Fence(nullptr, 0, nullptr, 0), "PMIx_Fence"); }

  [[noreturn]] void abort(int status, const char *message) override {
    fflush(nullptr);
    if (initialized_) PMIx_Abort(status, message, nullptr, 0);
    _exit(status);
  }

  void finalize() override {
    if (!initialized_) return;
    initialized_ = false;
    PMIx_Finalize(nullptr, 0);
  }

 private:
  // Keys carry the session number: PMIx keeps values of earlier fences, so a re-initialized job
  // must not read its previous session's records.
  std::string session_key(const char *key) const { return std::string(key) + "." + std::to_string(session_); }

  void check(pmix_status_t rc, const char *what) {
    if (rc != PMIX_SUCCESS) fatal("shmem_init", "%s failed: %s", what, PMIx_Error_string(rc));
  }

  uint32_t get_job_uint32(const char *key) {
    pmix_value_t *value = nullptr;
    pmix_status_t rc = PMIx_Get(&job_, key, nullptr, 0, &value);
    if (rc != PMIX_SUCCESS || value == nullptr)
      fatal("shmem_init", "the launcher did not provide %s: %s", key, PMIx_Error_string(rc));
    uint32_t out = 0;
    pmix_status_t cr;
    PMIX_VALUE_GET_NUMBER(cr, value, out, uint32_t);
    PMIX_VALUE_RELEASE(value);
    if (cr != PMIX_SUCCESS) fatal("shmem_init", "%s from the launcher is not a number", key);
    return out;
  }

  std::string get_job_string(const char *key) {
    pmix_value_t *value = nullptr;
    pmix_status_t rc = PMIx_Get(&job_, key, nullptr, 0, &value);
    if (rc != PMIX_SUCCESS || value == nullptr || value->type != PMIX_STRING)
      fatal("shmem_init", "the launcher did not provide %s: %s", key, PMIx_Error_string(rc));
    std::string out = value->data.string ? value->data.string : "";
    PMIX_VALUE_RELEASE(value);
    return out;
  }

  std::vector<int> parse_peers(const std::string &list) {
    std::vector<int> out;
    const char *p = list.c_str();
    while (*p) {
      char *end;
      long r = strtol(p, &end, 10);
      if (end == p || r < 0 || r >= size_)
        fatal("shmem_init", "malformed %s from the launcher: '%s'", PMIX_LOCAL_PEERS,
              list.c_str());
      out.push_back(static_cast<int>(r));
      p = *end == ',' ? end + 1 : end;
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  pmix_proc_t me_{};
  pmix_proc_t job_{};
  int size_ = 0;
  int session_ = 0;
  bool initialized_ = false;
  std::vector<int> local_;
  std::string describe_;
};

}  // namespace

std::unique_ptr<Bootstrap> make_pmix_bootstrap() { return std::make_unique<PmixBootstrap>(); }

std::unique_ptr<Bootstrap> make_bootstrap() {
  // A PMIx launcher always exports the namespace and the server's URI; without them there is no
  // server to talk to and the process runs as a singleton.
  if (getenv("PMIX_NAMESPACE") && getenv("PMIX_RANK")) return make_pmix_bootstrap();
  return make_singleton_bootstrap();
}

}  // namespace hoshmem
