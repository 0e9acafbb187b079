#include "engine/io/file_io.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <limits>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "engine/status_macros.h"

namespace dagrad {

absl::Status ErrnoError(absl::string_view what, const std::string& path) {
  const int e = errno;
  return absl::ErrnoToStatus(e, absl::StrCat(what, " '", path, "'"));
}

std::string PathInFolder(absl::string_view folder, absl::string_view name) {
  return absl::StrCat(folder, folder.empty() || absl::EndsWith(folder, "/") ? "" : "/", name);
}

bool SameFile(const std::string& a, const std::string& b) {
  struct stat sa, sb;
  return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

bool IsDirectory(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool PathExists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

namespace {

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
      return ErrnoError("cannot write", path);
    }
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return absl::OkStatus();
}

// TemporaryFileWriter returns the pid in a name TemporaryPathFor makes,
// "<name>.tmp.<pid>.<n>", or 0 when `name` is not such a name.
int TemporaryFileWriter(absl::string_view name) {
  const size_t n_dot = name.rfind('.');
  if (n_dot == absl::string_view::npos || n_dot == 0) return 0;
  const size_t pid_dot = name.rfind('.', n_dot - 1);
  if (pid_dot == absl::string_view::npos) return 0;
  const absl::string_view n = name.substr(n_dot + 1);
  const absl::string_view pid_text = name.substr(pid_dot + 1, n_dot - pid_dot - 1);
  const absl::string_view stem = name.substr(0, pid_dot);
  const auto digits = [](absl::string_view s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), absl::ascii_isdigit);
  };
  int pid = 0;
  if (!digits(n) || !digits(pid_text) || !absl::SimpleAtoi(pid_text, &pid) ||
      !absl::EndsWith(stem, ".tmp") || stem.size() == 4) {
    return 0;
  }
  return pid;
}

// NotAFile names what a path that is no regular file or symlink is ("a
// character device"), or returns "" for a regular file or a symlink.
const char* NotAFile(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  return "";
}

// RealPath returns `path` with every symlink, "." and ".." resolved. A
// loop of links is the file's fault (InvalidArgument), not the system's.
absl::StatusOr<std::string> RealPath(const std::string& path) {
  char* real = ::realpath(path.c_str(), nullptr);
  if (real == nullptr && errno == ELOOP) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot resolve '", path, "': too many symbolic links (a loop)"));
  }
  if (real == nullptr) return ErrnoError("cannot resolve", path);
  std::string out = real;
  ::free(real);
  return out;
}

// IsInside: whether the resolved `path` is `folder` (resolved) or below it.
bool IsInside(const std::string& path, const std::string& folder) {
  if (folder == "/") return true;
  return path == folder || (absl::StartsWith(path, folder) && path[folder.size()] == '/');
}

// ProcessIsRunning: kill(pid, 0) checks existence without sending a
// signal; EPERM means it exists but belongs to another user.
bool ProcessIsRunning(int pid) { return ::kill(pid, 0) == 0 || errno == EPERM; }

}  // namespace

absl::StatusOr<std::string> ReadFilePrefix(const std::string& path, size_t max_bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoError("cannot open", path);
  std::string out;
  struct stat st;
  const bool has_stat = ::fstat(fd, &st) == 0;
  if (has_stat && S_ISREG(st.st_mode) && st.st_size > 0) {
    out.reserve(std::min(static_cast<size_t>(st.st_size), max_bytes));
  }
  // A device never ends (/dev/zero) or is no file (a disk); a pipe and a
  // terminal are read to their end.
  if (has_stat && (S_ISBLK(st.st_mode) || (S_ISCHR(st.st_mode) && !::isatty(fd)))) {
    ::close(fd);
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot read '", path, "': it is ", NotAFile(st.st_mode), ", not a file"));
  }
  char buf[1 << 16];
  while (out.size() < max_bytes) {
    const ssize_t n = ::read(fd, buf, std::min(sizeof(buf), max_bytes - out.size()));
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      absl::Status s = ErrnoError("cannot read", path);
      ::close(fd);
      return s;
    }
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  return ReadFilePrefix(path, std::numeric_limits<size_t>::max());
}

absl::StatusOr<FileInFolder> FileInFolder::Open(const std::string& folder,
                                                const std::string& name) {
  const std::string path = PathInFolder(folder, name);
  DAGRAD_ASSIGN_OR_RETURN(const std::string real_folder, RealPath(folder));
  DAGRAD_ASSIGN_OR_RETURN(const std::string real, RealPath(path));
  if (!IsInside(real, real_folder)) {
    return absl::InvalidArgumentError(absl::StrCat("cannot read '", path, "': it resolves to '",
                                                   real, "', outside the folder '",
                                                   real_folder, "'"));
  }
  // Opening a FIFO without O_NONBLOCK waits for a writer. What was opened
  // is checked, not the path, which may have changed since it was resolved.
  const int fd = ::open(real.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) return ErrnoError("cannot open", path);
  struct stat st;
  absl::Status status;
  if (::fstat(fd, &st) != 0) {
    status = ErrnoError("cannot stat", path);
  } else if (!S_ISREG(st.st_mode)) {
    status = absl::InvalidArgumentError(absl::StrCat("cannot read '", path, "': it is ",
                                                     NotAFile(st.st_mode), ", not a file"));
  }
  if (!status.ok()) {
    ::close(fd);
    return status;
  }
  return FileInFolder(fd, path, static_cast<int64_t>(st.st_size));
}

FileInFolder::FileInFolder(FileInFolder&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), path_(std::move(other.path_)), size_(other.size_) {}

FileInFolder& FileInFolder::operator=(FileInFolder&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    path_ = std::move(other.path_);
    size_ = other.size_;
  }
  return *this;
}

FileInFolder::~FileInFolder() {
  if (fd_ >= 0) ::close(fd_);
}

absl::Status FileInFolder::ReadAt(int64_t offset, int64_t length, void* out) const {
  char* p = static_cast<char*>(out);
  while (length > 0) {
    const ssize_t n = ::pread(fd_, p, static_cast<size_t>(length), static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoError("cannot read", path_);
    if (n == 0) {
      return absl::OutOfRangeError(absl::StrCat("cannot read '", path_, "': it ends at byte ",
                                                offset, ", ", length,
                                                " bytes short (it shrank since it was opened)"));
    }
    p += n;
    offset += n;
    length -= n;
  }
  return absl::OkStatus();
}

std::string TemporaryPathFor(const std::string& path) {
  static std::atomic<uint64_t> counter{0};
  constexpr size_t kNameMax = 255;  // bytes in a file name (Linux's NAME_MAX)
  const size_t slash = path.rfind('/');
  const size_t name_at = slash == std::string::npos ? 0 : slash + 1;
  while (true) {
    const std::string suffix = absl::StrCat(".tmp.", ::getpid(), ".", counter++);
    // A name that fits but for the suffix keeps as much of itself as fits.
    const size_t room = kNameMax > suffix.size() ? kNameMax - suffix.size() : 0;
    std::string tmp = path.substr(0, name_at + std::min(path.size() - name_at, room)) + suffix;
    struct stat st;
    if (::lstat(tmp.c_str(), &st) != 0) return tmp;
  }
}

namespace {

// StageFile writes `contents` to a new temporary file beside `path`,
// fsynced and closed, with the mode of the file it is to replace, and
// returns its path; on failure it leaves nothing.
absl::StatusOr<std::string> StageFile(const std::string& path, absl::string_view contents) {
  // Renaming over a device or a FIFO would replace it (/dev/full, as root).
  struct stat target;
  if (::lstat(path.c_str(), &target) == 0 && *NotAFile(target.st_mode) != '\0') {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot write '", path, "': it is ", NotAFile(target.st_mode), ", not a file"));
  }
  // O_EXCL guards against a name another writer took since TemporaryPathFor
  // looked; mode 0666 lets the umask give the file its usual permissions.
  std::string tmp;
  int fd = -1;
  for (int attempt = 0; fd < 0; ++attempt) {
    tmp = TemporaryPathFor(path);
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && (errno != EEXIST || attempt == 100)) {
      return ErrnoError("cannot create a temporary file for", path);
    }
  }
  absl::Status status;
  struct stat old_file;
  if (::stat(path.c_str(), &old_file) == 0 && S_ISREG(old_file.st_mode) &&
      ::fchmod(fd, old_file.st_mode & 07777) != 0) {
    status = ErrnoError("cannot set the mode of", tmp);
  }
  if (status.ok()) status = WriteAll(fd, contents, tmp);
  if (status.ok() && ::fsync(fd) != 0) status = ErrnoError("cannot fsync", tmp);
  if (::close(fd) != 0 && status.ok()) status = ErrnoError("cannot close", tmp);
  if (!status.ok()) {
    ::unlink(tmp.c_str());
    return status;
  }
  return tmp;
}

// SyncDirectoryOf fsyncs the directory holding `path`: without it a rename
// may be lost in a crash, leaving the old file (whole, but old) after the
// caller was told the write succeeded.
absl::Status SyncDirectoryOf(const std::string& path) {
  const std::string dir = Directory(path);
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return ErrnoError("wrote the file but cannot open its directory", dir);
  absl::Status status;
  if (::fsync(dfd) != 0) status = ErrnoError("wrote the file but cannot fsync its directory", dir);
  ::close(dfd);
  return status;
}

}  // namespace

absl::Status WriteFileAtomically(const std::string& path, absl::string_view contents,
                                 const AtomicWriteOptions& options) {
  DAGRAD_ASSIGN_OR_RETURN(const std::string tmp, StageFile(path, contents));
  // The previous file moves aside only now, when the new one is complete,
  // so that `path` is missing for as short a time as possible.
  absl::Status status;
  const std::string& previous = options.keep_previous_as;
  bool moved_aside = false;
  struct stat existing;
  if (!previous.empty() && ::lstat(path.c_str(), &existing) == 0) {
    moved_aside = ::rename(path.c_str(), previous.c_str()) == 0;
    if (!moved_aside) status = ErrnoError(absl::StrCat("cannot rename '", path, "' to"), previous);
  }
  if (status.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) {
    status = ErrnoError(absl::StrCat("cannot rename '", tmp, "' over"), path);
    if (moved_aside) ::rename(previous.c_str(), path.c_str());
  }
  if (!status.ok()) {
    ::unlink(tmp.c_str());
    return status;
  }
  return SyncDirectoryOf(path);
}

absl::Status WriteFilesAtomically(
    const std::vector<std::pair<std::string, std::string>>& files) {
  std::vector<std::string> staged;
  absl::Status status;
  for (const auto& [path, contents] : files) {
    absl::StatusOr<std::string> tmp = StageFile(path, contents);
    if (!tmp.ok()) {
      status = tmp.status();
      break;
    }
    staged.push_back(*std::move(tmp));
  }
  size_t renamed = 0;
  while (status.ok() && renamed < staged.size()) {
    const std::string& path = files[renamed].first;
    if (::rename(staged[renamed].c_str(), path.c_str()) != 0) {
      status = ErrnoError(absl::StrCat("cannot rename '", staged[renamed], "' over"), path);
      if (renamed > 0) {
        status = absl::Status(status.code(), absl::StrCat(status.message(), " (",
                                                          files[renamed - 1].first,
                                                          " and the files before it were replaced)"));
      }
      break;
    }
    ++renamed;
  }
  for (size_t i = renamed; i < staged.size(); ++i) ::unlink(staged[i].c_str());
  for (size_t i = 0; status.ok() && i < files.size(); ++i) {
    if (i == 0 || Directory(files[i].first) != Directory(files[i - 1].first)) {
      status = SyncDirectoryOf(files[i].first);
    }
  }
  return status;
}

absl::StatusOr<std::vector<std::string>> RemoveStaleTemporaryFiles(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return ErrnoError("cannot open the directory", dir);
  std::vector<std::string> removed;
  absl::Status status;
  while (true) {
    errno = 0;
    const dirent* entry = ::readdir(d);
    if (entry == nullptr) {
      if (errno != 0) status = ErrnoError("cannot read the directory", dir);
      break;
    }
    const std::string name = entry->d_name;
    const std::string path = absl::StrCat(dir, "/", name);
    const int pid = TemporaryFileWriter(name);
    struct stat st;
    if (pid <= 0 || ProcessIsRunning(pid) || ::lstat(path.c_str(), &st) != 0 ||
        !S_ISREG(st.st_mode)) {
      continue;
    }
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
      status = ErrnoError("cannot remove the stale temporary file", path);
      break;
    }
    removed.push_back(name);
  }
  ::closedir(d);
  if (!status.ok()) return status;
  std::sort(removed.begin(), removed.end());
  return removed;
}

}  // namespace dagrad
