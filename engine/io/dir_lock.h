// engine/io/dir_lock.h
//
// A directory claimed by one writer at a time (a training run's: models::Fit,
// `dagrad train --out`). A second trainer in the same directory would
// interleave its checkpoints and metrics with the first one's, so the
// directory is locked: flock on <dir>/.lock, which holds the owner's pid
// for the message of the one refused. The kernel drops the lock when its
// holder closes it or its process ends, however it ends, so a killed
// trainer never leaves a stale lock (the .lock file stays, harmless).
// Claiming also removes the temporary files a killed writer left behind
// (RemoveStaleTemporaryFiles).
//
//   // setup: Files
//   std::vector<std::string> removed;
//   DAGRAD_ASSIGN_OR_RETURN(DirectoryLock lock, LockDirectory("runs/train", &removed));
//   // ... train; the lock is released when `lock` is destroyed

#ifndef DAGRAD_ENGINE_IO_DIR_LOCK_H_
#define DAGRAD_ENGINE_IO_DIR_LOCK_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace dagrad {

// DirectoryLock holds the lock on a directory while it lives.
class DirectoryLock {
 public:
  DirectoryLock(DirectoryLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  DirectoryLock& operator=(DirectoryLock&&) = delete;
  ~DirectoryLock();

 private:
  friend absl::StatusOr<DirectoryLock> LockDirectory(const std::string&,
                                                     std::vector<std::string>*);
  explicit DirectoryLock(int fd) : fd_(fd) {}
  int fd_;
};

// LockDirectory locks the directory `dir` and then removes the temporary
// files of writers that no longer run, whose names it appends to `removed`.
//
// Errors: Unavailable (and only then) when another holder (another process,
// or another lock of this one) has it, naming the holder's pid: "runs/train
// is in use by another writer (pid 4242)"; the errno's code (NotFound,
// PermissionDenied, ...) naming the path when the lock file cannot be made
// or used, or `dir` cannot be read.
absl::StatusOr<DirectoryLock> LockDirectory(const std::string& dir,
                                            std::vector<std::string>* removed);

}  // namespace dagrad

#endif  // DAGRAD_ENGINE_IO_DIR_LOCK_H_
