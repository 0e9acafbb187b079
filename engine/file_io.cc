#include "engine/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

#include "absl/strings/str_cat.h"

namespace dagrad {
namespace {

absl::Status SysError(absl::string_view what, const std::string& path) {
  const int e = errno;
  return absl::ErrnoToStatus(e, absl::StrCat(what, " '", path, "'"));
}

// Directory returns the directory holding `path`, for fsyncing the rename.
std::string Directory(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

absl::Status WriteAll(int fd, absl::string_view bytes, const std::string& path) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return SysError("cannot write", path);
    }
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return SysError("cannot open", path);
  std::string out;
  struct stat st;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
    out.reserve(static_cast<size_t>(st.st_size));
  }
  char buf[1 << 16];
  while (true) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      absl::Status s = SysError("cannot read", path);
      ::close(fd);
      return s;
    }
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

std::string TemporaryPathFor(const std::string& path) {
  static std::atomic<uint64_t> counter{0};
  while (true) {
    std::string tmp = absl::StrCat(path, ".tmp.", ::getpid(), ".", counter++);
    struct stat st;
    if (::lstat(tmp.c_str(), &st) != 0) return tmp;
  }
}

absl::Status WriteFileAtomically(const std::string& path, absl::string_view contents) {
  // O_EXCL guards against a name another writer took since TemporaryPathFor
  // looked; mode 0666 lets the umask give the file its usual permissions.
  std::string tmp;
  int fd = -1;
  for (int attempt = 0; fd < 0; ++attempt) {
    tmp = TemporaryPathFor(path);
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && (errno != EEXIST || attempt == 100)) {
      return SysError("cannot create a temporary file for", path);
    }
  }
  absl::Status status;
  struct stat old_file;
  if (::stat(path.c_str(), &old_file) == 0 && S_ISREG(old_file.st_mode) &&
      ::fchmod(fd, old_file.st_mode & 07777) != 0) {
    status = SysError("cannot set the mode of", tmp);
  }
  if (status.ok()) status = WriteAll(fd, contents, tmp);
  if (status.ok() && ::fsync(fd) != 0) status = SysError("cannot fsync", tmp);
  if (::close(fd) != 0 && status.ok()) status = SysError("cannot close", tmp);
  if (status.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) {
    status = SysError(absl::StrCat("cannot rename '", tmp, "' over"), path);
  }
  if (!status.ok()) {
    ::unlink(tmp.c_str());
    return status;
  }
  // Without this the rename itself may be lost in a crash, leaving the old
  // file (whole, but old) after the caller was told the write succeeded.
  const std::string dir = Directory(path);
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return SysError("wrote the file but cannot open its directory", dir);
  if (::fsync(dfd) != 0) status = SysError("wrote the file but cannot fsync its directory", dir);
  ::close(dfd);
  return status;
}

}  // namespace dagrad
