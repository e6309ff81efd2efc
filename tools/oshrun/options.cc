#include "tools/oshrun/options.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <sys/stat.h>
#include <unistd.h>

namespace oshrun {
namespace {

// PMIx local ranks are 16-bit; far more PEs than that on one node makes no sense anyway.
constexpr long kMaxPes = 65535;

bool parse_count(std::string_view text, int& out, std::string& error) {
  bool digits_only = !text.empty();
  for (char c : text) digits_only = digits_only && c >= '0' && c <= '9';
  long value = digits_only && text.size() <= 6 ? std::strtol(std::string(text).c_str(), nullptr, 10) : -1;
  if (!digits_only || value < 1 || value > kMaxPes) {
    error = "invalid number of PEs '" + std::string(text) + "' (expected an integer from 1 to " +
            std::to_string(kMaxPes) + ")";
    return false;
  }
  out = static_cast<int>(value);
  return true;
}

bool parse_binding(std::string_view text, Binding& out, std::string& error) {
  if (text == "none") { out = Binding::kNone; return true; }
  if (text == "core") { out = Binding::kCore; return true; }
  error = "invalid --bind-to value '" + std::string(text) + "' (expected 'none' or 'core')";
  return false;
}

// Splits "--opt=value"; returns true if `arg` is `name` or `name=...`.
bool match(std::string_view arg, std::string_view name, std::string_view& inline_value, bool& has_inline) {
  if (arg == name) { has_inline = false; return true; }
  if (arg.size() > name.size() && arg.substr(0, name.size()) == name && arg[name.size()] == '=') {
    inline_value = arg.substr(name.size() + 1);
    has_inline = true;
    return true;
  }
  return false;
}

}  // namespace

const char* usage_text() {
  return "usage: oshrun [-np N] [--bind-to none|core] program [args...]\n"
         "  -np, -n, --np N     number of PEs to start on this node (default 1)\n"
         "  --bind-to core      bind PE i to core i (round-robin if there are more PEs than cores)\n"
         "  --bind-to none      do not bind\n"
         "                      default: bind to cores if there are enough cores, else do not bind\n"
         "  --simulate-nodes K  testing aid: report the PEs as spread over K nodes (all still run here)\n"
         "  -h, --help          show this help\n"
         "Open MPI's --oversubscribe and --allow-run-as-root are accepted and ignored.\n"
         "oshrun embeds a PMIx server; it exits with the first non-zero PE status and tears the\n"
         "job down when any PE fails or calls shmem_global_exit.\n";
}

bool parse_options(int argc, char** argv, Options& out, std::string& error) {
  int i = 1;
  for (; i < argc; ++i) {
    std::string_view arg = argv[i];
    std::string_view value;
    bool has_inline = false;
    auto take_value = [&](std::string_view name) -> bool {
      if (has_inline) return true;
      if (i + 1 >= argc) {
        error = "option " + std::string(name) + " needs a value";
        return false;
      }
      value = argv[++i];
      return true;
    };
    if (arg == "--") { ++i; break; }
    if (arg == "-h" || arg == "--help") { out.help = true; return true; }
    if (match(arg, "-np", value, has_inline) || match(arg, "--np", value, has_inline) ||
        match(arg, "-n", value, has_inline)) {
      if (!take_value(arg.substr(0, arg.find('='))) || !parse_count(value, out.num_pes, error)) return false;
      continue;
    }
    if (match(arg, "--simulate-nodes", value, has_inline)) {
      if (!take_value("--simulate-nodes") || !parse_count(value, out.simulated_nodes, error)) return false;
      continue;
    }
    if (match(arg, "--bind-to", value, has_inline)) {
      if (!take_value("--bind-to") || !parse_binding(value, out.binding, error)) return false;
      continue;
    }
    // Accepted so that scripts can switch between mpirun and oshrun; they change nothing here.
    if (arg == "--oversubscribe" || arg == "--allow-run-as-root") continue;
    if (arg.size() > 1 && arg[0] == '-') {
      error = "unknown option '" + std::string(arg) + "' (see oshrun --help)";
      return false;
    }
    break;
  }
  if (i >= argc) {
    error = "missing program to run (see oshrun --help)";
    return false;
  }
  out.program = argv[i];
  out.argv.assign(argv + i, argv + argc);
  return true;
}

namespace {

// Returns 0 if `path` is a regular file we may execute, else an errno value.
int check_executable(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return errno;
  if (S_ISDIR(st.st_mode)) return EISDIR;
  if (!S_ISREG(st.st_mode)) return EACCES;
  if (access(path.c_str(), X_OK) != 0) return errno;
  return 0;
}

}  // namespace

bool resolve_program(const std::string& name, std::string& path, std::string& error) {
  int err = ENOENT;
  if (name.find('/') != std::string::npos) {
    err = check_executable(name);
    if (err == 0) { path = name; return true; }
  } else if (!name.empty()) {
    const char* env_path = std::getenv("PATH");
    std::string dirs = env_path ? env_path : "/usr/local/bin:/usr/bin:/bin";
    dirs += ":.";  // like mpirun: a program in the current directory is found without "./"
    size_t start = 0;
    while (start <= dirs.size()) {
      size_t end = dirs.find(':', start);
      if (end == std::string::npos) end = dirs.size();
      std::string dir = dirs.substr(start, end - start);
      std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
      int e = check_executable(candidate);
      if (e == 0) { path = candidate; return true; }
      if (e != ENOENT && e != ENOTDIR) err = e;  // remember "found but not runnable"
      start = end + 1;
    }
  }
  error = "cannot run '" + name + "': " + std::strerror(err);
  return false;
}

}  // namespace oshrun
