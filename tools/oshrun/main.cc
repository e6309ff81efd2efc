// oshrun: start N PEs of an OpenSHMEM program on this node under an embedded PMIx server.
#include <ftw.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "tools/oshrun/job.h"
#include "tools/oshrun/options.h"
#include "tools/oshrun/pmix_server.h"

namespace {

// The job's private directory for PMIx rendezvous files; removed on every exit path.
class TempDir {
 public:
  bool create(std::string& error) {
    std::string templ = base() + "/oshrun.XXXXXX";
    if (!mkdtemp(templ.data())) {
      error = "cannot create a directory in " + base() + ": " + std::strerror(errno);
      return false;
    }
    path_ = templ;
    return true;
  }
  ~TempDir() {
    if (path_.empty()) return;
    nftw(path_.c_str(), [](const char* p, const struct stat*, int, FTW*) { return remove(p); }, 16,
         FTW_DEPTH | FTW_PHYS);
  }
  const std::string& path() const { return path_; }
  // Unique on this host while the job runs (mkdtemp), also across PID namespaces.
  std::string unique_suffix() const { return path_.substr(path_.rfind('.') + 1); }

 private:
  // $TMPDIR if it is short (PMIx puts socket-like paths under it), else /tmp.
  static std::string base() {
    const char* tmpdir = getenv("TMPDIR");
    struct stat st;
    if (tmpdir && tmpdir[0] == '/' && std::strlen(tmpdir) <= 48 && stat(tmpdir, &st) == 0 && S_ISDIR(st.st_mode))
      return tmpdir;
    return "/tmp";
  }
  std::string path_;
};

int run(const oshrun::Options& options, const std::string& program_path) {
  std::string error;
  oshrun::Job::block_signals();  // before PMIx starts its threads
  auto binding = oshrun::plan_binding(options);

  TempDir tmpdir;
  if (!tmpdir.create(error)) {
    std::fprintf(stderr, "oshrun: %s\n", error.c_str());
    return 1;
  }
  std::string nspace = "oshrun." + tmpdir.unique_suffix() + "." + std::to_string(getpid());
  oshrun::ServerEvents events(options.num_pes);
  oshrun::PmixServer server(events);
  if (!server.start(tmpdir.path(), nspace, options.num_pes, options.simulated_nodes, error)) {
    std::fprintf(stderr, "oshrun: %s\n", error.c_str());
    return 1;
  }
  int status;
  {
    oshrun::Job job(options, program_path, events);
    if (!job.launch(server, binding, error)) {
      std::fprintf(stderr, "oshrun: %s\n", error.c_str());
      return 1;  // ~Job kills what was started, ~TempDir removes the PMIx files
    }
    status = job.wait();
  }
  return status;  // ~TempDir removes the PMIx files; main then _exits (see PmixServer)
}

}  // namespace

int main(int argc, char** argv) {
  oshrun::Options options;
  std::string error;
  if (!oshrun::parse_options(argc, argv, options, error)) {
    std::fprintf(stderr, "oshrun: %s\n", error.c_str());
    return 2;
  }
  if (options.help) {
    std::fputs(oshrun::usage_text(), stdout);
    return 0;
  }
  std::string program_path;
  if (!oshrun::resolve_program(options.program, program_path, error)) {
    std::fprintf(stderr, "oshrun: %s\n", error.c_str());
    return 127;
  }
  int status = run(options, program_path);
  // Skip exit(): the abandoned PMIx server's thread is still running (see pmix_server.h).
  std::fflush(nullptr);
  _exit(status);
}
