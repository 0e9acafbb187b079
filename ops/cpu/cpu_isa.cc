#include "ops/cpu/internal/cpu_isa.h"

#include <cstdio>
#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ops/cpu/cpu_runtime.h"

namespace dagrad {

bool CpuHasInstructionsOf(CpuIsa isa) {
#if defined(__x86_64__)
  switch (isa) {
    case CpuIsa::kAvx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
    case CpuIsa::kAvx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case CpuIsa::kBaseline:
      return true;
  }
  return false;
#else
  return isa == CpuIsa::kBaseline;
#endif
}

bool CpuHasAvx512Bf16() {
#if defined(__x86_64__)
  return CpuHasInstructionsOf(CpuIsa::kAvx512) && __builtin_cpu_supports("avx512bf16");
#else
  return false;
#endif
}

namespace {

constexpr CpuIsa kLevels[] = {CpuIsa::kBaseline, CpuIsa::kAvx2, CpuIsa::kAvx512};

// Compiled is the table of `isa` when this build has one.
const CpuKernels* Compiled(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::kBaseline:
      return &kernels::baseline::Table();
    case CpuIsa::kAvx2:
#if defined(DAGRAD_HAVE_ISA_AVX2)
      return &kernels::avx2::Table();
#else
      return nullptr;
#endif
    case CpuIsa::kAvx512:
#if defined(DAGRAD_HAVE_ISA_AVX512)
      return &kernels::avx512::Table();
#else
      return nullptr;
#endif
  }
  return nullptr;
}

}  // namespace

absl::string_view CpuIsaName(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::kBaseline:
      return "baseline";
    case CpuIsa::kAvx2:
      return "avx2";
    case CpuIsa::kAvx512:
      return "avx512";
  }
  return "unknown";
}

std::vector<CpuIsa> CpuIsaRunnable() {
  std::vector<CpuIsa> out;
  for (CpuIsa isa : kLevels) {
    if (Compiled(isa) != nullptr && CpuHasInstructionsOf(isa)) out.push_back(isa);
  }
  return out;
}

const CpuKernels& KernelsFor(CpuIsa isa) {
  const CpuKernels* table = Compiled(isa);
  if (table == nullptr || !CpuHasInstructionsOf(isa)) {
    std::fprintf(stderr, "dagrad: KernelsFor(%s): not runnable on this CPU or build\n",
                 CpuIsaName(isa).data());
    std::abort();
  }
  return *table;
}

absl::StatusOr<CpuIsa> ParseCpuIsa(absl::string_view text, const std::vector<CpuIsa>& runnable) {
  const std::string name = absl::AsciiStrToLower(absl::StripAsciiWhitespace(text));
  for (CpuIsa isa : runnable) {
    if (name == CpuIsaName(isa)) return isa;
  }
  std::vector<std::string> valid;
  for (auto it = runnable.rbegin(); it != runnable.rend(); ++it) {
    valid.emplace_back(CpuIsaName(*it));
  }
  bool known = false;
  for (CpuIsa isa : kLevels) known |= name == CpuIsaName(isa);
  return absl::FailedPreconditionError(absl::StrCat(
      "DAGRAD_CPU_ISA='", text, "' ",
      known ? "is a kernel level this CPU (or this build) cannot run"
            : "is not a kernel level",
      "; valid: ", absl::StrJoin(valid, ", "),
      " (it can only lower the level chosen from the CPU's features), or unset it"));
}

absl::StatusOr<CpuIsaChoice> ChooseCpuIsa() {
  static const absl::StatusOr<CpuIsaChoice>* const choice = [] {
    const std::vector<CpuIsa> runnable = CpuIsaRunnable();
    if (const char* env = std::getenv("DAGRAD_CPU_ISA")) {
      absl::StatusOr<CpuIsa> isa = ParseCpuIsa(env, runnable);
      if (!isa.ok()) return new absl::StatusOr<CpuIsaChoice>(isa.status());
      return new absl::StatusOr<CpuIsaChoice>(CpuIsaChoice{*isa, "DAGRAD_CPU_ISA"});
    }
    return new absl::StatusOr<CpuIsaChoice>(CpuIsaChoice{runnable.back(), "cpu features"});
  }();
  return *choice;
}

absl::StatusOr<const CpuKernels*> ActiveKernels() {
  // The process's CPU settings first: a bad DAGRAD_NUM_THREADS fails every
  // kernel that picks a level, not only the products that configure BLIS.
  if (absl::Status configured = ConfigureCpu(); !configured.ok()) return configured;
  // Chosen once (KernelsFor asks the CPU's features); ConfigureCpu has
  // checked the choice.
  static const CpuKernels* const active = [] {
    const absl::StatusOr<CpuIsaChoice> choice = ChooseCpuIsa();
    return choice.ok() ? &KernelsFor(choice->isa) : nullptr;
  }();
  return active;
}

Bf16Products Bf16ProductsFor(CpuIsa isa, absl::string_view chosen_by) {
  const auto gemm = KernelsFor(isa).gemm_bf16;
  constexpr absl::string_view kWiden = "widen to float32 + sgemm";
  if (gemm != nullptr && CpuHasAvx512Bf16()) {
    return {gemm, "vdpbf16ps (AVX512_BF16, kernel level avx512)"};
  }
  if (gemm != nullptr) return {nullptr, absl::StrCat(kWiden, " (the CPU lacks AVX512_BF16)")};
  if (isa == CpuIsa::kAvx512) {
    return {nullptr, absl::StrCat(kWiden, " (this build's compiler lacks -mavx512bf16)")};
  }
  const std::string why = CpuHasAvx512Bf16()
                              ? absl::StrCat("set lower by ", chosen_by, "; the CPU has AVX512_BF16")
                              : "the CPU lacks AVX512_BF16";
  return {nullptr, absl::StrCat(kWiden, " (kernel level ", CpuIsaName(isa), ", ", why, ")")};
}

absl::StatusOr<Bf16Products> ActiveBf16Products() {
  static const absl::StatusOr<Bf16Products>* const active = [] {
    absl::StatusOr<CpuIsaChoice> choice = ChooseCpuIsa();
    if (!choice.ok()) return new absl::StatusOr<Bf16Products>(choice.status());
    return new absl::StatusOr<Bf16Products>(Bf16ProductsFor(choice->isa, choice->chosen_by));
  }();
  return *active;
}

}  // namespace dagrad
