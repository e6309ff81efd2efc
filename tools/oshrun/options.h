// oshrun command line: what to run, how many PEs, how to bind them.
#pragma once

#include <string>
#include <vector>

namespace oshrun {

enum class Binding { kAuto, kNone, kCore };

struct Options {
  int num_pes = 1;
  Binding binding = Binding::kAuto;
  // Testing aid: tell the PEs they are spread over this many nodes (blocks of consecutive ranks),
  // although all run here. Lets tests check how the library treats a multi-node job.
  int simulated_nodes = 1;
  bool help = false;
  std::string program;            // as given by the user
  std::vector<std::string> argv;  // argv of every PE, argv[0] == program
};

// Parses argv; on bad input returns false and sets `error` to one line (no "oshrun:" prefix).
bool parse_options(int argc, char** argv, Options& out, std::string& error);

// Finds the executable the way a shell would (PATH unless it contains '/'), falling back to
// the current directory like mpirun does. Checks it is a regular executable file.
bool resolve_program(const std::string& name, std::string& path, std::string& error);

const char* usage_text();

}  // namespace oshrun
