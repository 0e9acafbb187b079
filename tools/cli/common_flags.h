// tools/cli/common_flags.h
//
// Flags and helpers several subcommands share.

#ifndef DAGRAD_TOOLS_CLI_COMMON_FLAGS_H_
#define DAGRAD_TOOLS_CLI_COMMON_FLAGS_H_

#include <initializer_list>
#include <string>
#include <utility>

#include "absl/flags/declare.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/device/device.h"
#include "engine/executor.h"
#include "models/nn/attention.h"
#include "ops/autodiff/precision.h"
#include "tools/cli/command.h"

ABSL_DECLARE_FLAG(int, threads);
ABSL_DECLARE_FLAG(std::string, out);
ABSL_DECLARE_FLAG(bool, check_numerics);
ABSL_DECLARE_FLAG(int64_t, memory_limit_mb);
ABSL_DECLARE_FLAG(bool, profile);
ABSL_DECLARE_FLAG(std::string, device);
ABSL_DECLARE_FLAG(bool, tf32);
ABSL_DECLARE_FLAG(std::string, attention);
ABSL_DECLARE_FLAG(std::string, wait_policy);
ABSL_DECLARE_FLAG(std::string, precision);

namespace dagrad::cli {

// ApplyThreadsFlag sets the CPU thread count from --threads (0 = one per
// core) and the wait policy from --wait_policy (empty: unchanged,
// ops/cpu/cpu_threads.h); InvalidArgument for a negative count, one above
// MaxThreads() (4 x the hardware threads, ops/cpu/cpu_runtime.h), or a policy
// that is not auto or spin.
absl::Status ApplyThreadsFlag();

// ExecutorOptionsFromFlags returns --check_numerics, --memory_limit_mb and --profile as
// executor options; InvalidArgument for a negative limit.
absl::StatusOr<ExecutorOptions> ExecutorOptionsFromFlags();

// DeviceFromFlags returns the device --device names: "cpu", "cuda" or
// "cuda:N" (with --tf32, or `tf32` (train's --precision=tf32), allowing TF32
// matrix products on the GPU; on the CPU `tf32` changes nothing).
// InvalidArgument for another value; for "cpu", ConfigureCpu's errors
// (FailedPrecondition for a bad DAGRAD_CPU_ISA or BLIS_ARCH_TYPE); the CUDA
// device's own errors (e.g. Unavailable when no GPU is visible or CUDA is
// not built in).
absl::StatusOr<std::unique_ptr<Device>> DeviceFromFlags(bool tf32 = false);

// PrecisionFromFlags returns --precision (ops/autodiff/precision.h: fp32,
// tf32 or bf16); InvalidArgument naming the value and the choices
// otherwise.
absl::StatusOr<Precision> PrecisionFromFlags();

// AttentionFromFlags returns --attention: fused (one attention op) or
// composed (the subgraph of ordinary ops); InvalidArgument naming the
// value otherwise.
absl::StatusOr<nn::AttentionPath> AttentionFromFlags();

// RefuseOverwrite returns InvalidArgument when the file flag `output_flag`
// names is one of `inputs` (path, flag) or, for a Hugging Face directory
// input, one of its files: a command never writes over what it reads.
//
//   RefuseOverwrite("m.safetensors", "output", {{"m.safetensors", "input"}});  // InvalidArgument
absl::Status RefuseOverwrite(const std::string& output, absl::string_view output_flag,
                             std::initializer_list<std::pair<std::string, const char*>> inputs);

// RequireFlags returns InvalidArgument "--NAME is required" for the first
// of the string flags `names` left empty.
absl::Status RequireFlags(std::initializer_list<const char*> names);

// ModelPathFromFlags returns the model `command` runs: --checkpoint (a
// dagrad model file or checkpoint) or --model (a Hugging Face GPT-2
// directory, or with `onnx` an .onnx file). InvalidArgument when both or
// neither are given, or when --model names neither kind.
absl::StatusOr<std::string> ModelPathFromFlags(const Command& command, bool onnx);

}  // namespace dagrad::cli

#endif  // DAGRAD_TOOLS_CLI_COMMON_FLAGS_H_
