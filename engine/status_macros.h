// engine/status_macros.h
//
// Debian's Abseil (20220623) ships no status macros, so dagrad defines the two
// it needs. Both evaluate their argument exactly once.
//
//   DAGRAD_RETURN_IF_ERROR(WriteFileAtomically(path, text));
//   DAGRAD_ASSIGN_OR_RETURN(std::string bytes, ReadFile(path));

#ifndef DAGRAD_ENGINE_STATUS_MACROS_H_
#define DAGRAD_ENGINE_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define DAGRAD_RETURN_IF_ERROR(expr)                  \
  do {                                                \
    ::absl::Status dagrad_status_ = (expr);           \
    if (!dagrad_status_.ok()) return dagrad_status_;  \
  } while (false)

#define DAGRAD_STATUS_CONCAT_INNER_(a, b) a##b
#define DAGRAD_STATUS_CONCAT_(a, b) DAGRAD_STATUS_CONCAT_INNER_(a, b)

#define DAGRAD_ASSIGN_OR_RETURN(lhs, expr) \
  DAGRAD_ASSIGN_OR_RETURN_IMPL_(           \
      DAGRAD_STATUS_CONCAT_(dagrad_statusor_, __LINE__), lhs, expr)

#define DAGRAD_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr) \
  auto statusor = (expr);                                  \
  if (!statusor.ok()) return std::move(statusor).status(); \
  lhs = std::move(statusor).value()

#endif  // DAGRAD_ENGINE_STATUS_MACROS_H_
