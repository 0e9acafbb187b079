#include "tests/autodiff/support/isa_check.h"

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "engine/executor.h"
#include "engine/io/file_io.h"
#include "engine/io/safetensors.h"
#include "engine/philox.h"
#include "engine/status_macros.h"
#include "gtest/gtest.h"
#include "ops/cpu/internal/cpu_isa.h"
#include "tests/autodiff/support/op_case.h"

namespace dagrad::testing {
namespace {

constexpr char kErrorCode[] = "error_code";
constexpr char kErrorMessage[] = "error_message";

std::string SelfPath() {
  std::error_code ec;
  const std::filesystem::path p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : p.string();
}

// ReadOutputs reads what WriteCaseOutputs wrote.
absl::StatusOr<std::vector<Tensor>> ReadOutputs(const std::string& path) {
  DAGRAD_ASSIGN_OR_RETURN(SafetensorsFile f, ReadSafetensors(path));
  if (auto it = f.metadata.find(kErrorCode); it != f.metadata.end()) {
    int code = 0;
    if (!absl::SimpleAtoi(it->second, &code)) return absl::InternalError("bad error code");
    return absl::Status(static_cast<absl::StatusCode>(code), f.metadata[kErrorMessage]);
  }
  // Named by position: the format keeps no order of its own.
  std::vector<Tensor> out;
  while (const Tensor* t = f.Find(absl::StrCat(out.size()))) out.push_back(*t);
  if (out.size() != f.tensors.size()) return absl::InternalError("outputs not numbered 0..n-1");
  return out;
}

// OutputsAt runs `c` at `isa`: here when it is this process's level, else
// in a child process at that level.
absl::StatusOr<absl::StatusOr<std::vector<Tensor>>> OutputsAt(CpuIsa isa, const CrossCase& c) {
  DAGRAD_ASSIGN_OR_RETURN(CpuIsaChoice choice, ChooseCpuIsa());
  if (choice.isa == isa) return CpuOutputs(c);
  static std::atomic<int> counter = 0;
  const std::string base = absl::StrCat(::testing::TempDir(), "/isa_", getpid(), "_", counter++);
  const std::string cmd =
      absl::StrCat("DAGRAD_CPU_ISA=", CpuIsaName(isa), " '", SelfPath(), "' --op_case_outputs='",
                   base, ".safetensors' --op_case='", c.name, "' > ", base, ".err 2>&1");
  const int status = std::system(cmd.c_str());
  const std::string err = ReadFile(base + ".err").value_or("");
  absl::StatusOr<std::vector<Tensor>> got = ReadOutputs(base + ".safetensors");
  std::filesystem::remove(base + ".err");
  std::filesystem::remove(base + ".safetensors");
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return absl::InternalError(absl::StrCat("the ", CpuIsaName(isa), " child (", cmd,
                                            ") exited with status ", status, ": ", err));
  }
  return got;
}

absl::Status Compare(const CrossCase& c, absl::string_view level,
                     const absl::StatusOr<std::vector<Tensor>>& base,
                     const absl::StatusOr<std::vector<Tensor>>& got) {
  if (c.expect_error) {
    if (base.ok() || got.ok() || base.status() != got.status()) {
      return absl::InternalError(
          absl::StrCat("expected the same error; baseline: ", base.status().ToString(), "; ", level,
                       ": ", got.status().ToString()));
    }
    return absl::OkStatus();
  }
  if (!base.ok())
    return absl::Status(base.status().code(), absl::StrCat("baseline: ", base.status().message()));
  if (!got.ok())
    return absl::Status(got.status().code(), absl::StrCat(level, ": ", got.status().message()));
  if (base->size() != got->size()) {
    return absl::InternalError(
        absl::StrCat(level, " gave ", got->size(), " tensors, baseline ", base->size()));
  }
  DAGRAD_ASSIGN_OR_RETURN(BuiltCase b, BuildCase(c));
  const size_t per_run = b.fetches.size();
  for (size_t run = 0; per_run > 0 && run < base->size() / per_run; ++run) {
    const absl::Span<const Tensor> want(base->data() + run * per_run, per_run);
    absl::Status st = CompareFetches(c, b, want, absl::Span<const Tensor>(got->data() + run * per_run, per_run));
    if (!st.ok()) {
      return absl::InternalError(
          absl::StrCat(level, " against baseline, run ", run, ", ", st.message()));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<Tensor>> CpuOutputs(const CrossCase& c) {
  DAGRAD_ASSIGN_OR_RETURN(BuiltCase b, BuildCase(c));
  ExecutorOptions options;
  options.seed = 1234;
  options.poison_arena = true;
  options.plan.fold_constants = c.fold_constants;
  Executor cpu(*b.graph, options);
  DAGRAD_ASSIGN_OR_RETURN(auto plan, cpu.Compile(b.fetches));
  const uint64_t seed = StableHash64(c.name.data(), c.name.size());
  std::vector<Tensor> out;
  for (int run = 0; run < c.runs; ++run) {
    const RunOptions ro{.training = c.training, .step = static_cast<uint64_t>(3 + run)};
    DAGRAD_ASSIGN_OR_RETURN(std::vector<Tensor> got,
                            cpu.Run(*plan, b.builder->MakeFeeds(seed + run), ro));
    for (Tensor& t : got) out.push_back(std::move(t));
  }
  return out;
}

absl::Status WriteCaseOutputs(const std::string& name, const std::string& path) {
  for (const OpCase& c : AllOpCases()) {
    for (const OpConfig& config : c.configs) {
      for (DType d : config.dtypes) {
        if (ConfigTestName(c, config, d) != name) continue;
        const absl::StatusOr<std::vector<Tensor>> got = CpuOutputs(ToCrossCase(c, config, d));
        SafetensorsFile f;
        if (got.ok()) {
          for (size_t i = 0; i < got->size(); ++i)
            f.tensors.push_back({absl::StrCat(i), (*got)[i]});
        } else {
          f.metadata[kErrorCode] = absl::StrCat(static_cast<int>(got.status().code()));
          f.metadata[kErrorMessage] = std::string(got.status().message());
        }
        return WriteSafetensors(path, f);
      }
    }
  }
  return absl::NotFoundError(absl::StrCat("no op-case config test is named '", name, "'"));
}

absl::Status IsaCheck(const CrossCase& c) {
  const std::vector<CpuIsa> runnable = CpuIsaRunnable();
  if (runnable.size() < 2) {
    return absl::UnavailableError("this CPU (or build) runs only the baseline kernel level");
  }
  DAGRAD_ASSIGN_OR_RETURN(auto base, OutputsAt(CpuIsa::kBaseline, c));
  for (size_t i = 1; i < runnable.size(); ++i) {
    DAGRAD_ASSIGN_OR_RETURN(auto got, OutputsAt(runnable[i], c));
    DAGRAD_RETURN_IF_ERROR(Compare(c, CpuIsaName(runnable[i]), base, got));
  }
  return absl::OkStatus();
}

}  // namespace dagrad::testing
