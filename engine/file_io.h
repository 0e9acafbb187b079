// engine/file_io.h
//
// Whole-file reads and crash-safe whole-file writes, for checkpoints, DOT
// files and anything else dagrad writes. Errors carry the path and the
// system's reason, with the canonical code of the errno (NotFound,
// PermissionDenied, ResourceExhausted for a full disk, ...).
//
//   DAGRAD_RETURN_IF_ERROR(WriteFileAtomically("model.dot", dot));
//   DAGRAD_ASSIGN_OR_RETURN(std::string bytes, ReadFile("model.dot"));

#ifndef DAGRAD_ENGINE_FILE_IO_H_
#define DAGRAD_ENGINE_FILE_IO_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace dagrad {

// ReadFile returns the bytes of the file at `path`.
//
// Errors: the errno's code (NotFound, PermissionDenied, FailedPrecondition
// for a directory, ...) with a message naming the path.
//
//   auto bytes = ReadFile("/tmp/w.safetensors");
//   if (!bytes.ok()) return bytes.status();
absl::StatusOr<std::string> ReadFile(const std::string& path);

// WriteFileAtomically replaces the file at `path` with `contents`, so that a
// reader or a crash sees either the old file or the whole new one, never a
// part: it writes a temporary file next to `path` (same directory, so the
// rename stays within one file system), fsyncs it, renames it over `path`
// and fsyncs the directory. The new file keeps the mode of the file it
// replaces, or gets the usual one (0666 less the umask); a symlink at
// `path` is replaced, not followed. On any failure before the rename the temporary file is removed and
// `path` is untouched; a failure to fsync the directory after the rename is
// reported, but the new file is then already in place.
//
// Errors: the errno's code with a message naming the path and the step that
// failed (NotFound for a missing directory, ResourceExhausted for a full
// disk, FailedPrecondition when `path` is a directory, ...).
//
//   DAGRAD_RETURN_IF_ERROR(WriteFileAtomically("/tmp/graph.dot", dot));
absl::Status WriteFileAtomically(const std::string& path, absl::string_view contents);

// TemporaryPathFor returns a path in the same directory as `path` that no
// file has at the time of the call: "<path>.tmp.<pid>.<n>". For tools that
// write a file through another program and then rename it into place.
//   TemporaryPathFor("/tmp/g.svg");   // "/tmp/g.svg.tmp.4242.0"
std::string TemporaryPathFor(const std::string& path);

}  // namespace dagrad

#endif  // DAGRAD_ENGINE_FILE_IO_H_
