// `dagrad info`: what this build and this machine offer.

#include <iostream>

#include "absl/flags/flag.h"
#include "engine/cuda/cuda_device.h"
#include "engine/dot/dot.h"
#include "engine/status_macros.h"
#include "ops/cpu/cpu_runtime.h"
#include "ops/cpu/internal/cpu_isa.h"
#include "ops/registry.h"
#include "tools/cli/command.h"
#include "tools/cli/common_flags.h"

namespace dagrad::cli {
namespace {

absl::Status Info() {
  DAGRAD_RETURN_IF_ERROR(ApplyThreadsFlag());
  DAGRAD_RETURN_IF_ERROR(ConfigureCpu());
  const CpuInfo cpu = GetCpuInfo();
  DAGRAD_ASSIGN_OR_RETURN(const CpuIsaChoice isa, ChooseCpuIsa());
  DAGRAD_ASSIGN_OR_RETURN(const Bf16Products bf16, ActiveBf16Products());
  std::cout << "dagrad " << DAGRAD_VERSION << "\n"
            << "cpu: BLIS " << cpu.blis_version << ", kernel set '" << cpu.blis_arch
            << "' (chosen by " << cpu.chosen_by << "), " << cpu.threads << " thread"
            << (cpu.threads == 1 ? "" : "s") << "\n"
            << "threads: " << cpu.threads << " (" << cpu.threads_source << "), wait policy "
            << cpu.wait_policy << "\n"
            << "cpu features: " << cpu.cpu_features << "\n"
            << "kernels: " << CpuIsaName(isa.isa) << " (chosen by " << isa.chosen_by << ")\n"
            << "bf16 products: " << bf16.description << "\n"
            << "cuda: " << ::dagrad::DescribeCuda() << "\n"
            << "graphviz: " << (DotProgram().empty() ? "not found (DOT files are still written)"
                                                     : DotProgram())
            << "\n"
            << "ops: " << AllOps().size() << " registered\n";
  return absl::OkStatus();
}

int RunInfo() { return ExitCode(InfoCommand(), Info()); }

}  // namespace

Command InfoCommand() {
  return {"info", "print the BLIS kernel set, dagrad's kernel level, threads, CUDA devices and Graphviz",
          {"threads", "wait_policy"}, RunInfo};
}

}  // namespace dagrad::cli
