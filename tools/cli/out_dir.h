// tools/cli/out_dir.h
//
// The output directory of `dagrad train`, claimed for one run at a time.
// A second trainer on the same --out would interleave its checkpoints and
// metrics with the first one's, so the directory is locked: flock on
// <dir>/.lock, which holds the owner's pid for the message of the one
// refused. The kernel drops the lock when its process ends, however it
// ends, so a killed trainer never leaves a stale lock (the .lock file
// stays, harmless). Claiming also removes the temporary files a killed
// writer left behind (RemoveStaleTemporaryFiles).
//
//   std::vector<std::string> removed;
//   absl::StatusOr<OutDirLock> lock = ClaimOutDir("runs/train", &removed);
//   if (!lock.ok()) return Failure(cmd, lock.status());   // held by another
//   run
//   // ... train; the lock is released when `lock` is destroyed

#ifndef DAGRAD_TOOLS_CLI_OUT_DIR_H_
#define DAGRAD_TOOLS_CLI_OUT_DIR_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace dagrad::cli {

// OutDirLock holds the lock on an output directory while it lives.
class OutDirLock {
 public:
  OutDirLock(OutDirLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  OutDirLock& operator=(OutDirLock&&) = delete;
  ~OutDirLock();

 private:
  friend absl::StatusOr<OutDirLock> ClaimOutDir(const std::string&, std::vector<std::string>*);
  explicit OutDirLock(int fd) : fd_(fd) {}
  int fd_;
};

// ClaimOutDir locks the directory `dir` for this process and then removes the
// temporary files of writers that no longer run, whose names it appends to
// `removed`.
//
// Errors: FailedPrecondition when another process holds the lock, naming
// it: "--out=runs/train is in use by another dagrad train (pid 4242)";
// the errno's code (NotFound, PermissionDenied, ...) naming the path when
// the lock file cannot be made or used, or `dir` cannot be read.
absl::StatusOr<OutDirLock> ClaimOutDir(const std::string& dir, std::vector<std::string>* removed);

}  // namespace dagrad::cli

#endif  // DAGRAD_TOOLS_CLI_OUT_DIR_H_
