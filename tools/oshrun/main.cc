// oshrun: start N PEs of an OpenSHMEM program on this node under an embedded PMIx server.
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "tools/oshrun/job.h"
#include "tools/oshrun/options.h"
#include "tools/oshrun/pmix_server.h"
#include "tools/oshrun/tmpdir.h"

namespace {

int run(const oshrun::Options& options, const std::string& program_path) {
  std::string error;
  oshrun::Job::block_signals();  // before PMIx starts its threads
  auto binding = oshrun::plan_binding(options);

  oshrun::TempDir tmpdir;
  if (!tmpdir.create(error)) {
    std::fprintf(stderr, "oshrun: %s\n", error.c_str());
    return 1;
  }
  tmpdir.remove_dead_jobs();
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
