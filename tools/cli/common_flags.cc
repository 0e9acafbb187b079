#include "tools/cli/common_flags.h"

#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "engine/cuda/cuda_device.h"
#include "engine/io/file_io.h"
#include "ops/cpu/cpu_runtime.h"
#include "ops/cpu/cpu_threads.h"
#include "tools/cli/onnx_model.h"

ABSL_FLAG(int, threads, 0,
          "CPU threads for BLIS and dagrad's kernels (0: one per core; at most 4 x the "
          "hardware threads)");
ABSL_FLAG(std::string, wait_policy, "",
          "how CPU threads wait: auto (share work in chunks while other processes keep the "
          "cores busy), spin (OpenMP and BLIS always) or share (always); empty: "
          "DAGRAD_WAIT_POLICY, else auto");
ABSL_FLAG(std::string, out, "",
          "dot: the .dot file to write (required); train: the output directory "
          "(empty: runs/train, and runs/text for --task=text); export: the .onnx file to write, or with --format=hf the "
          "directory (required)");

ABSL_FLAG(bool, check_numerics, false,
          "stop at the first node (forward or backward) that produces NaN or Inf, and name it");
ABSL_FLAG(std::string, device, "cpu", "where to run: cpu, cuda or cuda:N");
ABSL_FLAG(bool, tf32, false, "on cuda, allow TF32 tensor-core matrix products (faster, ~1e-3)");
ABSL_FLAG(std::string, attention, "fused",
          "attention as one fused op (fused: flash-style, no (B, H, T, S) tensor) or as the "
          "composed subgraph of MatMul, Softmax, Dropout and MatMul (composed); same weights");
ABSL_FLAG(std::string, precision, "fp32",
          "fp32; bf16: matrix products read bfloat16 casts and accumulate in float32, the rest "
          "(and train's parameters and checkpoints) stay float32; tf32: on cuda, float32 "
          "products in TF32 (on the cpu, fp32)");
ABSL_FLAG(bool, profile, false, "time every kernel and print where the time went, by op");
ABSL_FLAG(int64_t, memory_limit_mb, 0,
          "fail with a clear error instead of using more than this many MiB (0: no limit); "
          "train --replicas=N gives each replica 1/N of it");

ABSL_DECLARE_FLAG(std::string, checkpoint);  // eval_command.cc
ABSL_DECLARE_FLAG(std::string, model);       // dot_command.cc

namespace dagrad::cli {

absl::Status RefuseOverwrite(const std::string& output, absl::string_view output_flag,
                             std::initializer_list<std::pair<std::string, const char*>> inputs) {
  for (const auto& [path, flag] : inputs) {
    std::vector<std::string> read = {path};
    if (IsDirectory(path)) {  // a Hugging Face model's files
      for (const char* name : {"model.safetensors", "config.json", "vocab.json", "merges.txt"}) {
        read.push_back(PathInFolder(path, name));
      }
    }
    for (const std::string& file : read) {
      if (SameFile(output, file)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--", output_flag, "=", output, " would write over ", file, " (--", flag,
            "), which this command reads"));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status RequireFlags(std::initializer_list<const char*> names) {
  for (const char* name : names) {
    const absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
    if (flag != nullptr && flag->CurrentValue().empty()) {
      return absl::InvalidArgumentError(absl::StrCat("--", name, " is required"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ModelPathFromFlags(const Command& command, bool onnx) {
  const std::string model = absl::GetFlag(FLAGS_model), checkpoint = absl::GetFlag(FLAGS_checkpoint);
  const std::string kinds = absl::StrCat(onnx ? "an .onnx file or " : "", "a Hugging Face GPT-2 directory");
  if (!model.empty() && !checkpoint.empty()) {
    return absl::InvalidArgumentError("give --checkpoint or --model, not both");
  }
  if (model.empty() && checkpoint.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("--checkpoint is required (or --model: ", kinds, ")"));
  }
  if (!model.empty() && !IsDirectory(model) && !(onnx && IsOnnxPath(model))) {
    return absl::InvalidArgumentError(
        absl::StrCat(command.name, "'s --model takes ", kinds, ", got '", model, "'"));
  }
  return model.empty() ? checkpoint : model;
}

absl::StatusOr<std::unique_ptr<Device>> DeviceFromFlags(bool tf32) {
  const std::string name = absl::GetFlag(FLAGS_device);
  if (name == "cpu") {
    if (absl::GetFlag(FLAGS_tf32)) {
      return absl::InvalidArgumentError("--tf32 applies to --device=cuda only");
    }
    // DAGRAD_CPU_ISA and BLIS_ARCH_TYPE errors before any work, not at the
    // first kernel that dispatches.
    if (absl::Status st = ConfigureCpu(); !st.ok()) return st;
    return CpuDevice();
  }
  int ordinal = 0;
  if (name != "cuda" && !(absl::StartsWith(name, "cuda:") &&
                          absl::SimpleAtoi(name.substr(5), &ordinal) && ordinal >= 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--device must be cpu, cuda or cuda:N, got '", name, "'"));
  }
  return CudaDevice(ordinal, {.allow_tf32 = tf32 || absl::GetFlag(FLAGS_tf32)});
}

absl::StatusOr<Precision> PrecisionFromFlags() {
  absl::StatusOr<Precision> precision = ParsePrecision(absl::GetFlag(FLAGS_precision));
  if (!precision.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--precision: ", precision.status().message()));
  }
  return precision;
}

absl::StatusOr<nn::AttentionPath> AttentionFromFlags() {
  absl::StatusOr<nn::AttentionPath> path = nn::ParseAttentionPath(absl::GetFlag(FLAGS_attention));
  if (!path.ok()) return absl::InvalidArgumentError(absl::StrCat("--", path.status().message()));
  return path;
}

absl::StatusOr<ExecutorOptions> ExecutorOptionsFromFlags() {
  const int64_t mb = absl::GetFlag(FLAGS_memory_limit_mb);
  if (mb < 0 || mb > (int64_t{1} << 40)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--memory_limit_mb must be in [0, 2^40], got ", mb));
  }
  return ExecutorOptions{.check_numerics = absl::GetFlag(FLAGS_check_numerics),
                         .memory_limit_bytes = mb << 20,
                         .profile = absl::GetFlag(FLAGS_profile)};
}

absl::Status ApplyThreadsFlag() {
  const int threads = absl::GetFlag(FLAGS_threads);
  if (threads < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--threads must be >= 0, got ", threads));
  }
  if (threads > MaxThreads()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--threads must be at most ", MaxThreads(),
                     " (4 x the hardware threads), got ", threads));
  }
  if (const std::string policy = absl::GetFlag(FLAGS_wait_policy); !policy.empty()) {
    absl::StatusOr<WaitPolicy> parsed = ParseWaitPolicy(policy);
    if (!parsed.ok()) return absl::InvalidArgumentError(absl::StrCat("--wait_policy: ", parsed.status().message()));
    SetWaitPolicy(*parsed);
  }
  return threads > 0 ? SetNumThreads(threads) : absl::OkStatus();
}

}  // namespace dagrad::cli
