// engine/io/file_io.h
//
// Whole-file reads and crash-safe whole-file writes, for checkpoints, DOT
// files and anything else dagrad writes, the clean-up after a writer that
// was killed, and reads of a file that another file names (FileInFolder).
// Errors carry the path and the system's reason, with the canonical code
// of the errno (NotFound, PermissionDenied, ResourceExhausted for a full
// disk, ...).
//
//   // setup: Files
//   DAGRAD_RETURN_IF_ERROR(WriteFileAtomically("model.dot", dot));
//   DAGRAD_ASSIGN_OR_RETURN(std::string bytes, ReadFile("model.dot"));

#ifndef DAGRAD_ENGINE_IO_FILE_IO_H_
#define DAGRAD_ENGINE_IO_FILE_IO_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace dagrad {

// ErrnoError returns the errno left by the system call that just failed as a
// status of its canonical code, the message `what 'path'`. Read errno first:
// call it before anything else that may set errno.
//
//   // setup: Files
//   absl::Status st;
//   if (::mkdir("runs", 0755) != 0) st = ErrnoError("cannot make", "runs");
//   // st: AlreadyExists, "cannot make 'runs': File exists"
absl::Status ErrnoError(absl::string_view what, const std::string& path);

// PathInFolder returns `name` in `folder`: joined by one '/', or `name`
// alone when `folder` is empty.
//
//   PathInFolder("runs/gpt2", "config.json");  // "runs/gpt2/config.json"
std::string PathInFolder(absl::string_view folder, absl::string_view name);

// SameFile is true when `a` and `b` both exist and are one file or
// directory (the same device and inode: another spelling, a link), so a
// command can refuse to write its output over its own input.
//
//   bool same = SameFile("runs/x/../x/model.safetensors", "runs/x/model.safetensors");
bool SameFile(const std::string& a, const std::string& b);

// IsDirectory and PathExists tell, through symlinks, whether `path` names
// a directory, or anything; false also when that cannot be told (a symlink
// loop, a name too long), and the open that follows names why. (The
// one-argument std::filesystem forms throw there, and the throw aborts.)
//
//   bool tune = IsDirectory("runs/gpt2");
bool IsDirectory(const std::string& path);
bool PathExists(const std::string& path);

// ReadFile returns the bytes of the file at `path`.
//
// Errors: the errno's code (NotFound, PermissionDenied, FailedPrecondition
// for a directory, ...) with a message naming the path; InvalidArgument for
// a device, which has no end (/dev/zero) or is no file (a disk). A pipe and
// a terminal are read to their end.
//
//   // setup: Files
//   auto bytes = ReadFile("w.safetensors");
//   if (!bytes.ok()) return bytes.status();
absl::StatusOr<std::string> ReadFile(const std::string& path);

// ReadFilePrefix returns the first `max_bytes` bytes of the file at `path`,
// or all of them if it is shorter: what a reader needs of a file's head
// (a safetensors header) without reading the rest. ReadFile's errors.
//
//   // setup: Files
//   auto head = ReadFilePrefix("w.safetensors", 8);
absl::StatusOr<std::string> ReadFilePrefix(const std::string& path, size_t max_bytes);

// FileInFolder is a regular file open for reading that a file's contents
// named, relative to that file's folder (the external data of an ONNX
// model): what such a name reaches is checked on the opened descriptor, so
// a hostile name can neither read what lies outside the folder nor make
// the reader wait on a FIFO. Move-only; the destructor closes the file.
//
//   // setup: Files
//   DAGRAD_ASSIGN_OR_RETURN(FileInFolder file, FileInFolder::Open("models/gpt", "w.bin"));
//   std::string head(std::min<int64_t>(file.size(), 16), '\0');
//   DAGRAD_RETURN_IF_ERROR(file.ReadAt(0, head.size(), head.data()));
class FileInFolder {
 public:
  // Open opens folder/name when the file it reaches, every symlink
  // resolved, is a regular file inside the folder (itself resolved). A
  // symlink to another file in the folder is followed. The file is opened
  // without blocking and checked as opened, so a FIFO is refused at once,
  // never waited on.
  //
  // Errors, naming folder/name: InvalidArgument when `name` resolves
  // outside the folder (a symlink to /etc/passwd, a ".." through a link)
  // or to a directory, a FIFO, a device or a socket, or through a loop of
  // symlinks; NotFound when it
  // reaches nothing (a dangling symlink); the errno's code otherwise
  // (PermissionDenied, ...).
  static absl::StatusOr<FileInFolder> Open(const std::string& folder, const std::string& name);

  FileInFolder(FileInFolder&& other) noexcept;
  FileInFolder& operator=(FileInFolder&& other) noexcept;
  ~FileInFolder();

  // path is folder/name, as Open was given them, for messages.
  const std::string& path() const { return path_; }
  // size is the file's size in bytes when it was opened.
  int64_t size() const { return size_; }

  // ReadAt fills out[0, length) with the file's bytes from `offset`.
  // Errors: OutOfRange when the file now ends before offset + length (it
  // shrank since it was opened); the errno's code for a failed read.
  absl::Status ReadAt(int64_t offset, int64_t length, void* out) const;

 private:
  FileInFolder(int fd, std::string path, int64_t size)
      : fd_(fd), path_(std::move(path)), size_(size) {}

  int fd_ = -1;
  std::string path_;
  int64_t size_ = 0;
};

// AtomicWriteOptions: what WriteFileAtomically does besides the write.
struct AtomicWriteOptions {
  // keep_previous_as: when not empty, the file at `path` (if there is one)
  // is renamed to this path, in the same directory, just before the new
  // file takes its place, so the last two versions are kept (a checkpoint
  // and the one before it). A crash leaves each file whole: at worst
  // `path` is missing and keep_previous_as holds what was at `path`.
  std::string keep_previous_as;
};

// WriteFileAtomically replaces the file at `path` with `contents`, so that a
// reader or a crash sees either the old file or the whole new one, never a
// part: it writes a temporary file next to `path` (same directory, so the
// rename stays within one file system), fsyncs it, renames it over `path`
// and fsyncs the directory. The new file keeps the mode of the file it
// replaces, or gets the usual one (0666 less the umask); a symlink at
// `path` is replaced, not followed. On any failure before the rename the
// temporary file is removed and `path` is untouched (a failed rename of
// the new file puts the previous one back when it was moved aside); a
// failure to fsync the directory after the rename is reported, but the new
// file is then already in place. A writer killed before its rename leaves
// its temporary file behind: see RemoveStaleTemporaryFiles.
//
// Errors: the errno's code with a message naming the path and the step that
// failed (NotFound for a missing directory, ResourceExhausted for a full
// disk, ...); FailedPrecondition, before anything is written, when `path`
// is a directory, a device, a FIFO or a socket, which the rename would
// replace (/dev/full, as root).
//
//   // setup: Files
//   DAGRAD_RETURN_IF_ERROR(WriteFileAtomically("graph.dot", dot));
//   DAGRAD_RETURN_IF_ERROR(WriteFileAtomically(
//       "run/ckpt.safetensors", bytes, {.keep_previous_as = "run/ckpt.prev.safetensors"}));
absl::Status WriteFileAtomically(const std::string& path, absl::string_view contents,
                                 const AtomicWriteOptions& options = {});

// WriteFilesAtomically writes several files as one: each to its temporary
// file first, and only when every one is written and fsynced are they
// renamed into place, in order, so that a failure while writing (a full
// disk, a file-size limit, a kill) leaves every path as it was, never a new
// file beside an old one (a model's weights beside another model's config).
// Only a failed rename, after the first, leaves the files before it
// replaced; the error says so. WriteFileAtomically's errors otherwise.
//
//   // setup: Files
//   DAGRAD_RETURN_IF_ERROR(WriteFilesAtomically(
//       {{"run/model.safetensors", bytes}, {"run/model.dot", dot}}));
absl::Status WriteFilesAtomically(const std::vector<std::pair<std::string, std::string>>& files);

// TemporaryPathFor returns a path in the same directory as `path` that no
// file has at the time of the call: "<path>.tmp.<pid>.<n>", the name cut to
// leave the whole under 256 bytes (a name of 250 is legal, and so must its
// writer's temporary be). For tools that
// write a file through another program and then rename it into place.
//   TemporaryPathFor("/tmp/g.svg");   // "/tmp/g.svg.tmp.4242.0"
std::string TemporaryPathFor(const std::string& path);

// RemoveStaleTemporaryFiles deletes the files in directory `dir` named as
// TemporaryPathFor names them ("<name>.tmp.<pid>.<n>") whose writing
// process is no longer running (killed between creating and renaming its
// file), and returns their names, sorted. Files of running processes,
// directories, links and every other name are left alone. A writer's pid
// reused by another process keeps its file until that process ends.
//
// Errors: those of opening and reading `dir` (NotFound, ...), and of
// unlink, naming the file; files removed before an error stay removed.
//
//   // setup: Files
//   auto removed = RemoveStaleTemporaryFiles("runs/train");
//   if (removed.ok() && !removed->empty()) Print("removed", *removed);
absl::StatusOr<std::vector<std::string>> RemoveStaleTemporaryFiles(const std::string& dir);

}  // namespace dagrad

#endif  // DAGRAD_ENGINE_IO_FILE_IO_H_
