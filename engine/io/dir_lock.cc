#include "engine/io/dir_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "engine/io/file_io.h"

namespace dagrad {
namespace {

// Holder reads the pid the lock's owner wrote, for the refusal message; the
// owner may not have written it yet.
std::string Holder(int fd) {
  char buf[32];
  const ssize_t n = ::pread(fd, buf, sizeof(buf) - 1, 0);
  const std::string pid(absl::StripAsciiWhitespace(absl::string_view(buf, n > 0 ? n : 0)));
  return pid.empty() ? "pid unknown" : absl::StrCat("pid ", pid);
}

absl::Status WritePid(int fd, const std::string& path) {
  const std::string pid = absl::StrCat(::getpid(), "\n");
  if (::ftruncate(fd, 0) != 0) return ErrnoError("cannot truncate", path);
  if (::pwrite(fd, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
    return ErrnoError("cannot write", path);
  }
  return absl::OkStatus();
}

}  // namespace

DirectoryLock::~DirectoryLock() {
  if (fd_ >= 0) ::close(fd_);
}

absl::StatusOr<DirectoryLock> LockDirectory(const std::string& dir,
                                            std::vector<std::string>* removed) {
  const std::string path = dir + "/.lock";
  // O_CLOEXEC: a program run from here (Graphviz) must not inherit the lock
  // and keep it after this process ends.
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0) return ErrnoError("cannot open the lock file", path);
  DirectoryLock lock(fd);
  int locked;
  while ((locked = ::flock(fd, LOCK_EX | LOCK_NB)) != 0 && errno == EINTR) {
  }
  if (locked != 0) {
    if (errno != EWOULDBLOCK) return ErrnoError("cannot lock", path);
    return absl::UnavailableError(
        absl::StrCat(dir, " is in use by another writer (", Holder(fd), ")"));
  }
  if (absl::Status st = WritePid(fd, path); !st.ok()) return st;
  absl::StatusOr<std::vector<std::string>> stale = RemoveStaleTemporaryFiles(dir);
  if (!stale.ok()) return stale.status();
  removed->insert(removed->end(), stale->begin(), stale->end());
  return lock;
}

}  // namespace dagrad
