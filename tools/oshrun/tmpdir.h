// The job's private directory for PMIx's files: TMPDIR/oshrun.XXXXXX (mode 0700).
//
// A job killed by SIGKILL cannot remove its directory, so the next oshrun does: each oshrun holds
// an exclusive flock on DIR/lock for its whole life (the kernel releases it when the process dies,
// whatever its PID namespace), and removes the directories in the same base directory whose lock
// it can take. The lock file appears only once locked (created as lock.new, locked, renamed), so a
// lock nobody holds means a dead job. Directories without a lock file (an older oshrun's, or one
// whose creator died in the instant between mkdtemp and the rename) and other users' are never
// removed.
#pragma once

#include <string>

namespace oshrun {

class TempDir {
 public:
  TempDir() = default;
  ~TempDir();  // removes the directory, then releases the lock
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  // Creates and locks the directory. On failure returns false with a one-line `error`.
  bool create(std::string& error);
  // Removes the directories that dead jobs left in the same base directory.
  void remove_dead_jobs() const;

  const std::string& path() const { return path_; }
  // Unique on this host while the job runs (mkdtemp), also across PID namespaces.
  std::string unique_suffix() const { return path_.substr(path_.rfind('.') + 1); }

 private:
  std::string base_;
  std::string path_;
  int lock_fd_ = -1;
};

}  // namespace oshrun
