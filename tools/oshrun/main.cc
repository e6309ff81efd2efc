// oshrun: start N PEs of an OpenSHMEM program on this node under an embedded PMIx server.
#include <sys/random.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "tools/oshrun/job.h"
#include "tools/oshrun/options.h"
#include "tools/oshrun/pmix_server.h"
#include "tools/oshrun/tmpdir.h"

namespace {

// 128 random bits as hex: the job's secret part of its namespace (see peer_check.h).
bool random_hex(std::string& out, std::string& error) {
  unsigned char bytes[16];
  if (getrandom(bytes, sizeof bytes, 0) != static_cast<ssize_t>(sizeof bytes)) {
    error = std::string("cannot get random bytes: ") + std::strerror(errno);
    return false;
  }
  char hex[2 * sizeof bytes + 1];
  for (size_t i = 0; i < sizeof bytes; ++i) std::snprintf(hex + 2 * i, 3, "%02x", bytes[i]);
  out = hex;
  return true;
}

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
  // A client must present the namespace to join, so it is a secret: it reaches the PEs only
  // through their environment. The server's own namespace is not one (it is in the PEs' PMIx
  // URIs and never checked).
  std::string secret;
  if (!random_hex(secret, error)) {
    std::fprintf(stderr, "oshrun: %s\n", error.c_str());
    return 1;
  }
  const std::string job_name = "oshrun." + tmpdir.unique_suffix();
  std::string nspace = job_name + "." + secret;
  oshrun::ServerEvents events(options.num_pes);
  oshrun::PmixServer server(events);
  if (!server.start(tmpdir.path(), nspace, job_name + ".srv", options.num_pes, options.simulated_nodes, error)) {
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
