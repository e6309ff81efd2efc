#include "tools/oshrun/pmix_server.h"

#include <algorithm>
#include <pmix.h>
#include <pmix_server.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace oshrun {

// ---------------------------------------------------------------- ServerEvents

ServerEvents::ServerEvents(int num_pes)
    : wake_fd_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)),
      connected_(new std::atomic<bool>[num_pes]),
      finalized_(new std::atomic<bool>[num_pes]) {
  for (int i = 0; i < num_pes; ++i) {
    connected_[i].store(false);
    finalized_[i].store(false);
  }
}

ServerEvents::~ServerEvents() {
  if (wake_fd_ >= 0) close(wake_fd_);
}

void ServerEvents::wake() {
  uint64_t one = 1;
  [[maybe_unused]] ssize_t n = write(wake_fd_, &one, sizeof one);
}

void ServerEvents::drain_wakeups() {
  uint64_t count;
  [[maybe_unused]] ssize_t n = read(wake_fd_, &count, sizeof count);
}

// Wakes the main thread: a PE that exited before connecting fails the job as soon as another
// PE connects (see Job::check_early_exit).
void ServerEvents::on_connected(int rank) {
  connected_[rank].store(true, std::memory_order_release);
  wake();
}

void ServerEvents::on_finalized(int rank) { finalized_[rank].store(true, std::memory_order_release); }

void ServerEvents::on_abort(int rank, int status, const char* message) {
  {
    std::lock_guard lock(mutex_);
    if (!abort_) abort_ = AbortRequest{rank, status, message ? message : ""};
  }
  wake();
}

std::optional<AbortRequest> ServerEvents::first_abort() {
  std::lock_guard lock(mutex_);
  return abort_;
}

// ---------------------------------------------------------------- PMIx callbacks

namespace {

// The PMIx callbacks are plain C functions; the one server of this process reaches its
// event sink through this pointer (set in start, cleared in stop).
ServerEvents* g_events = nullptr;

// We pass rank + 1 as the per-client server_object so that 0 can mean "none".
int rank_of(const pmix_proc_t* proc, void* server_object) {
  if (server_object) return static_cast<int>(reinterpret_cast<intptr_t>(server_object) - 1);
  return static_cast<int>(proc->rank);
}

pmix_status_t on_client_connected(const pmix_proc_t* proc, void* server_object, pmix_op_cbfunc_t,
                                  void*) {
  g_events->on_connected(rank_of(proc, server_object));
  return PMIX_OPERATION_SUCCEEDED;
}

pmix_status_t on_client_finalized(const pmix_proc_t* proc, void* server_object, pmix_op_cbfunc_t,
                                  void*) {
  g_events->on_finalized(rank_of(proc, server_object));
  return PMIX_OPERATION_SUCCEEDED;
}

// PMIx_Abort from a PE (shmem_global_exit or a fatal library error). Record it, then release
// the client; the main thread tears the job down.
pmix_status_t on_abort(const pmix_proc_t* proc, void* server_object, int status, const char msg[],
                       pmix_proc_t[], size_t, pmix_op_cbfunc_t cbfunc, void* cbdata) {
  g_events->on_abort(rank_of(proc, server_object), status, msg);
  if (cbfunc) cbfunc(PMIX_SUCCESS, cbdata);  // the server's reply path thread-shifts itself
  return PMIX_SUCCESS;
}

void release_fence_data(void* data) { std::free(data); }

// All PEs are local, so the PMIx server has already collected every contribution: the
// "all-gather across nodes" is the identity. The data belongs to the PMIx library, so hand
// back a copy we own.
pmix_status_t on_fence(const pmix_proc_t[], size_t, const pmix_info_t[], size_t, char* data,
                       size_t ndata, pmix_modex_cbfunc_t cbfunc, void* cbdata) {
  char* copy = nullptr;
  if (ndata > 0) {
    copy = static_cast<char*>(std::malloc(ndata));
    if (!copy) return PMIX_ERR_NOMEM;
    std::memcpy(copy, data, ndata);
  }
  cbfunc(PMIX_SUCCESS, copy, ndata, cbdata, copy ? release_fence_data : nullptr, copy);
  return PMIX_SUCCESS;
}

// Every PE is on this node, so there is never a remote server to ask.
pmix_status_t on_direct_modex(const pmix_proc_t*, const pmix_info_t[], size_t, pmix_modex_cbfunc_t,
                              void*) {
  return PMIX_ERR_NOT_SUPPORTED;
}

pmix_server_module_t g_module = [] {
  pmix_server_module_t m;
  std::memset(&m, 0, sizeof m);
  m.client_connected = on_client_connected;
  m.client_finalized = on_client_finalized;
  m.abort = on_abort;
  m.fence_nb = on_fence;
  m.direct_modex = on_direct_modex;
  return m;
}();

std::string status_text(pmix_status_t status) { return PMIx_Error_string(status); }

// A growable pmix_info_t list; PMIx copies values on load, so temporaries are fine.
class InfoList {
 public:
  ~InfoList() {
    if (infos_) PMIX_INFO_FREE(infos_, size_);
  }
  template <typename T>
  void add(const char* key, const T* value, pmix_data_type_t type) {
    pending_.push_back({key, static_cast<const void*>(value), type});
  }
  // Builds the array; call once after all add()s (values must still be alive).
  pmix_info_t* build() {
    size_ = pending_.size();
    PMIX_INFO_CREATE(infos_, size_);
    for (size_t i = 0; i < size_; ++i)
      PMIX_INFO_LOAD(&infos_[i], pending_[i].key, pending_[i].value, pending_[i].type);
    return infos_;
  }
  size_t size() const { return size_; }

 private:
  struct Pending {
    const char* key;
    const void* value;
    pmix_data_type_t type;
  };
  std::vector<Pending> pending_;
  pmix_info_t* infos_ = nullptr;
  size_t size_ = 0;
};

}  // namespace

// ---------------------------------------------------------------- PmixServer

bool PmixServer::start(const std::string& tmpdir, const std::string& nspace, const std::string& server_nspace,
                       int num_pes, int num_nodes, std::string& error) {
  g_events = &events_;
  nspace_ = nspace;

  // Everything the server writes goes into our private directory; no tool or system-level
  // rendezvous files that would outlive the job or collide with other launchers.
  bool no = false;
  InfoList init;
  init.add(PMIX_SERVER_TMPDIR, tmpdir.c_str(), PMIX_STRING);
  init.add(PMIX_SYSTEM_TMPDIR, tmpdir.c_str(), PMIX_STRING);
  init.add(PMIX_SERVER_TOOL_SUPPORT, &no, PMIX_BOOL);
  init.add(PMIX_SERVER_SYSTEM_SUPPORT, &no, PMIX_BOOL);
  init.add(PMIX_SERVER_NSPACE, server_nspace.c_str(), PMIX_STRING);
  pmix_info_t* init_info = init.build();
  pmix_status_t rc = PMIx_server_init(&g_module, init_info, init.size());
  if (rc != PMIX_SUCCESS) {
    error = "PMIx_server_init failed: " + status_text(rc);
    return false;
  }

  char host[256] = {};
  gethostname(host, sizeof host - 1);
  // With --simulate-nodes, PEs come in blocks of per_node consecutive ranks on pretend nodes named
  // <host>, <host>-sim1, ...; PMIx derives every PE's local peers from these maps.
  num_nodes = std::max(1, std::min(num_nodes, num_pes));
  const int per_node = (num_pes + num_nodes - 1) / num_nodes;
  num_nodes = (num_pes + per_node - 1) / per_node;
  std::string nodes = host, peers, local_peers;
  for (int n = 1; n < num_nodes; ++n) nodes += "," + std::string(host) + "-sim" + std::to_string(n);
  for (int r = 0; r < num_pes; ++r) {
    peers += (r == 0 ? "" : r % per_node == 0 ? ";" : ",") + std::to_string(r);
    if (r < per_node) local_peers += (r ? "," : "") + std::to_string(r);
  }
  uint32_t local_size = static_cast<uint32_t>(std::min(per_node, num_pes));
  uint32_t node_count = static_cast<uint32_t>(num_nodes);
  char* node_map = nullptr;
  char* proc_map = nullptr;
  if (PMIx_generate_regex(nodes.c_str(), &node_map) != PMIX_SUCCESS ||
      PMIx_generate_ppn(peers.c_str(), &proc_map) != PMIX_SUCCESS) {
    error = "PMIx could not encode the node and process maps";
    return false;
  }

  uint32_t size = static_cast<uint32_t>(num_pes);
  uint32_t zero = 0, one = 1;
  pmix_rank_t leader = 0;
  const char* hostname = host;
  InfoList job;
  job.add(PMIX_JOBID, nspace.c_str(), PMIX_STRING);
  job.add(PMIX_UNIV_SIZE, &size, PMIX_UINT32);
  job.add(PMIX_JOB_SIZE, &size, PMIX_UINT32);
  job.add(PMIX_MAX_PROCS, &size, PMIX_UINT32);
  job.add(PMIX_APP_SIZE, &size, PMIX_UINT32);
  job.add(PMIX_JOB_NUM_APPS, &one, PMIX_UINT32);
  job.add(PMIX_APPNUM, &zero, PMIX_UINT32);
  job.add(PMIX_APPLDR, &leader, PMIX_PROC_RANK);
  job.add(PMIX_NUM_NODES, &node_count, PMIX_UINT32);
  job.add(PMIX_NODE_MAP, node_map, PMIX_REGEX);
  job.add(PMIX_PROC_MAP, proc_map, PMIX_REGEX);
  job.add(PMIX_LOCAL_SIZE, &local_size, PMIX_UINT32);
  job.add(PMIX_NODE_SIZE, &local_size, PMIX_UINT32);
  job.add(PMIX_LOCAL_PEERS, local_peers.c_str(), PMIX_STRING);
  job.add(PMIX_LOCALLDR, &leader, PMIX_PROC_RANK);
  job.add(PMIX_NODEID, &zero, PMIX_UINT32);
  job.add(PMIX_HOSTNAME, hostname, PMIX_STRING);

  // Per-PE info: one PMIX_PROC_DATA array per rank, PMIX_RANK first as PMIx requires.
  struct PeInfo {
    pmix_rank_t rank;
    uint16_t local_rank;
    uint32_t node;
  };
  std::vector<PeInfo> pes(num_pes);
  std::vector<pmix_data_array_t*> arrays(num_pes, nullptr);
  for (int r = 0; r < num_pes; ++r) {
    pes[r] = {static_cast<pmix_rank_t>(r), static_cast<uint16_t>(r % per_node), static_cast<uint32_t>(r / per_node)};
    PMIX_DATA_ARRAY_CREATE(arrays[r], 7, PMIX_INFO);
    auto* items = static_cast<pmix_info_t*>(arrays[r]->array);
    PMIX_INFO_LOAD(&items[0], PMIX_RANK, &pes[r].rank, PMIX_PROC_RANK);
    PMIX_INFO_LOAD(&items[1], PMIX_GLOBAL_RANK, &pes[r].rank, PMIX_PROC_RANK);
    PMIX_INFO_LOAD(&items[2], PMIX_LOCAL_RANK, &pes[r].local_rank, PMIX_UINT16);
    PMIX_INFO_LOAD(&items[3], PMIX_NODE_RANK, &pes[r].local_rank, PMIX_UINT16);
    PMIX_INFO_LOAD(&items[4], PMIX_NODEID, &pes[r].node, PMIX_UINT32);
    PMIX_INFO_LOAD(&items[5], PMIX_HOSTNAME, hostname, PMIX_STRING);
    PMIX_INFO_LOAD(&items[6], PMIX_APPNUM, &zero, PMIX_UINT32);
    job.add(PMIX_PROC_DATA, arrays[r], PMIX_DATA_ARRAY);
  }
  pmix_info_t* job_info = job.build();
  for (auto* array : arrays) PMIX_DATA_ARRAY_FREE(array);  // loading copied them
  std::free(node_map);
  std::free(proc_map);

  // Blocking form (no callback): returns PMIX_OPERATION_SUCCEEDED once registered.
  rc = PMIx_server_register_nspace(nspace.c_str(), num_pes, job_info, job.size(), nullptr, nullptr);
  if (rc != PMIX_SUCCESS && rc != PMIX_OPERATION_SUCCEEDED) {
    error = "PMIx_server_register_nspace failed: " + status_text(rc);
    return false;
  }
  return true;
}

bool PmixServer::prepare_client(int rank, std::vector<std::string>& env, std::string& error) {
  pmix_proc_t proc;
  PMIX_PROC_LOAD(&proc, nspace_.c_str(), static_cast<pmix_rank_t>(rank));
  void* server_object = reinterpret_cast<void*>(static_cast<intptr_t>(rank) + 1);
  pmix_status_t rc = PMIx_server_register_client(&proc, geteuid(), getegid(), server_object, nullptr, nullptr);
  if (rc != PMIX_SUCCESS && rc != PMIX_OPERATION_SUCCEEDED) {
    error = "PMIx_server_register_client failed for PE " + std::to_string(rank) + ": " + status_text(rc);
    return false;
  }
  // setup_fork appends to a malloc'ed NULL-terminated array that it may realloc.
  char** vars = static_cast<char**>(std::calloc(1, sizeof(char*)));
  rc = PMIx_server_setup_fork(&proc, &vars);
  if (rc == PMIX_SUCCESS) {
    for (char** v = vars; v && *v; ++v) env.emplace_back(*v);
  } else {
    error = "PMIx_server_setup_fork failed for PE " + std::to_string(rank) + ": " + status_text(rc);
  }
  for (char** v = vars; v && *v; ++v) std::free(*v);
  std::free(vars);
  return rc == PMIX_SUCCESS;
}

}  // namespace oshrun
