#include "tools/cli/common_flags.h"

#include <unistd.h>

#include <cstdlib>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "engine/cuda/cuda_device.h"
#include "ops/cpu_runtime.h"

ABSL_FLAG(int, threads, 0, "CPU threads for BLIS and dagrad's kernels (0: one per core)");

namespace dagrad::cli {

absl::Status ApplyThreadsFlag() {
  const int threads = absl::GetFlag(FLAGS_threads);
  if (threads < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--threads must be >= 0, got ", threads));
  }
  if (threads > 0) SetNumThreads(threads);
  return absl::OkStatus();
}

std::string DescribeCuda() { return ::dagrad::DescribeCuda(); }

std::string DotProgram() {
  const std::string built = DAGRAD_DOT_PROGRAM;
  if (!built.empty() && access(built.c_str(), X_OK) == 0) return built;
  const char* path = std::getenv("PATH");
  if (path == nullptr) return "";
  for (absl::string_view dir : absl::StrSplit(path, ':')) {
    const std::string candidate = absl::StrCat(dir, "/dot");
    if (!dir.empty() && access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

}  // namespace dagrad::cli
