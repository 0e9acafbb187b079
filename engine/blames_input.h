// engine/blames_input.h
//
// BlamesInput: the class of errors that a tool reports as its user's (exit
// 2, a bad command line or input) rather than as its own failure (exit 1).
// The CLI and the benchmark tools share it.
//
//   BlamesInput(absl::NotFoundError("x.onnx"));   // true

#ifndef DAGRAD_ENGINE_BLAMES_INPUT_H_
#define DAGRAD_ENGINE_BLAMES_INPUT_H_

#include "absl/status/status.h"

namespace dagrad {

// BlamesInput is true for an error whose cause is what the caller gave: a
// bad value (InvalidArgument, OutOfRange), a file missing, corrupt or not to
// be read (NotFound, DataLoss, PermissionDenied), a state the input
// contradicts (FailedPrecondition), or something the input asks for that
// dagrad does not do (Unimplemented: an ONNX op variant it lacks).
inline bool BlamesInput(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kDataLoss:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kOutOfRange:
    case absl::StatusCode::kPermissionDenied:
    case absl::StatusCode::kUnimplemented:
      return true;
    default:
      return false;
  }
}

}  // namespace dagrad

#endif  // DAGRAD_ENGINE_BLAMES_INPUT_H_
