// tools/cli/common_flags.h
//
// Flags and helpers several subcommands share.

#ifndef DAGRAD_TOOLS_CLI_COMMON_FLAGS_H_
#define DAGRAD_TOOLS_CLI_COMMON_FLAGS_H_

#include <string>

#include "absl/flags/declare.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/executor.h"

ABSL_DECLARE_FLAG(int, threads);
ABSL_DECLARE_FLAG(std::string, out);
ABSL_DECLARE_FLAG(bool, check_numerics);
ABSL_DECLARE_FLAG(int64_t, memory_limit_mb);
ABSL_DECLARE_FLAG(bool, profile);

namespace dagrad::cli {

// ApplyThreadsFlag sets the CPU thread count from --threads (0 = one per
// core); InvalidArgument for a negative value.
absl::Status ApplyThreadsFlag();

// ExecutorOptionsFromFlags returns --check_numerics, --memory_limit_mb and --profile as
// executor options; InvalidArgument for a negative limit.
absl::StatusOr<ExecutorOptions> ExecutorOptionsFromFlags();

// DescribeCuda says whether CUDA is built in and which devices it sees.
std::string DescribeCuda();

// DotProgram is the Graphviz `dot` found at build time or on PATH, or "".
std::string DotProgram();

}  // namespace dagrad::cli

#endif  // DAGRAD_TOOLS_CLI_COMMON_FLAGS_H_
