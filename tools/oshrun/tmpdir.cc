#include "tools/oshrun/tmpdir.h"

#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace oshrun {
namespace {

constexpr const char kPrefix[] = "oshrun.";

// $TMPDIR if it is short (PMIx puts socket-like paths under it), else /tmp.
std::string base_directory() {
  const char* tmpdir = getenv("TMPDIR");
  struct stat st;
  if (tmpdir && tmpdir[0] == '/' && std::strlen(tmpdir) <= 48 && stat(tmpdir, &st) == 0 && S_ISDIR(st.st_mode))
    return tmpdir;
  return "/tmp";
}

void remove_tree(const std::string& path) {
  nftw(path.c_str(), [](const char* p, const struct stat*, int, FTW*) { return remove(p); }, 16,
       FTW_DEPTH | FTW_PHYS);
}

}  // namespace

bool TempDir::create(std::string& error) {
  base_ = base_directory();
  std::string templ = base_ + "/" + kPrefix + "XXXXXX";
  if (!mkdtemp(templ.data())) {
    error = "cannot create a directory in " + base_ + ": " + std::strerror(errno);
    return false;
  }
  path_ = templ;
  // Locked before it gets its name, so that a cleaner never sees an unlocked lock of a live job.
  const std::string staging = path_ + "/lock.new";
  lock_fd_ = open(staging.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (lock_fd_ < 0 || flock(lock_fd_, LOCK_EX) != 0 || rename(staging.c_str(), (path_ + "/lock").c_str()) != 0) {
    error = "cannot create the lock file in " + path_ + ": " + std::strerror(errno);
    return false;  // the destructor removes the directory
  }
  return true;
}

TempDir::~TempDir() {
  if (!path_.empty()) remove_tree(path_);
  if (lock_fd_ >= 0) close(lock_fd_);  // only now: nobody else removes the tree meanwhile
}

void TempDir::remove_dead_jobs() const {
  DIR* dir = opendir(base_.c_str());
  if (!dir) return;
  const std::string own = path_.substr(path_.rfind('/') + 1);
  while (const dirent* entry = readdir(dir)) {
    if (std::strncmp(entry->d_name, kPrefix, sizeof kPrefix - 1) != 0 || own == entry->d_name) continue;
    const std::string path = base_ + "/" + entry->d_name;
    struct stat st;
    if (lstat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid()) continue;
    int fd = open((path + "/lock").c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) continue;  // no lock file: not ours to judge
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && flock(fd, LOCK_EX | LOCK_NB) == 0)
      remove_tree(path);  // its job is dead; the lock is held while removing
    close(fd);
  }
  closedir(dir);
}

}  // namespace oshrun
