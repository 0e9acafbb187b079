#include "tests/autodiff/support/reduced_check.h"

#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "engine/executor.h"
#include "engine/philox.h"
#include "engine/status_macros.h"

namespace dagrad::testing {
namespace {

// UlpOf is the spacing of `format`'s values in [1, 2).
double UlpOf(DType format) { return format == DType::kBFloat16 ? 1.0 / 128 : 1.0 / 1024; }

// Widened returns the float32 run's feeds `wide` holding the 16-bit run's
// values, widened (exactly) where the float32 case's input is wider.
absl::StatusOr<Feeds> Widened(const Feeds& reduced, Feeds wide) {
  if (reduced.size() != wide.size()) {
    return absl::InternalError(absl::StrCat("the 16-bit case has ", reduced.size(),
                                            " inputs, the float32 one ", wide.size()));
  }
  for (size_t i = 0; i < wide.size(); ++i) {
    const Tensor& value = reduced[i].second;
    const DType want = wide[i].first.dtype();
    if (value.dtype() == want) {
      wide[i].second = value;
    } else {
      DAGRAD_ASSIGN_OR_RETURN(wide[i].second, ConvertFloats(value, want));
    }
  }
  return wide;
}

absl::Status CompareExactly(const Tensor& reduced, const Tensor& wide) {
  if (reduced.dtype() != wide.dtype() ||
      std::memcmp(reduced.raw_data(), wide.raw_data(), wide.nbytes()) != 0) {
    return absl::InternalError(absl::StrCat("differs: 16-bit run ", reduced.TypeString(),
                                            ", float32 run ", wide.TypeString()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CompareReduced(const Tensor& reduced, const Tensor& wide, DType format,
                            double ulps) {
  if (reduced.shape() != wide.shape()) {
    return absl::InternalError(absl::StrCat("shapes differ: 16-bit run ", reduced.TypeString(),
                                            ", float32 run ", wide.TypeString()));
  }
  if (!IsAnyFloat(reduced.dtype()) || !IsAnyFloat(wide.dtype())) {
    return CompareExactly(reduced, wide);
  }
  double scale = 0, worst = 0;
  int64_t worst_at = -1;
  for (int64_t i = 0; i < wide.num_elements(); ++i) {
    const double a = FloatAt(reduced.raw_data(), reduced.dtype(), i);
    const double b = FloatAt(wide.raw_data(), wide.dtype(), i);
    if (!std::isfinite(a) || !std::isfinite(b)) {
      if (!(std::isnan(a) && std::isnan(b)) && a != b) {
        return absl::InternalError(absl::StrCat("element ", i, ": 16-bit run ", a,
                                                ", float32 run ", b, " (NaN or inf mismatch)"));
      }
      continue;
    }
    scale = std::max(scale, std::abs(b));
    if (std::abs(a - b) > worst) {
      worst = std::abs(a - b);
      worst_at = i;
    }
  }
  const double bound = (ulps == 0 ? kReducedUlps : ulps) * UlpOf(format) * scale;
  if (worst > bound) {
    return absl::InternalError(absl::StrCat(
        "element ", worst_at, ": 16-bit run ", FloatAt(reduced.raw_data(), reduced.dtype(), worst_at),
        ", float32 run ", FloatAt(wide.raw_data(), wide.dtype(), worst_at), ": |difference| ",
        worst, " > ", bound, " (", ulps == 0 ? kReducedUlps : ulps, " ", DTypeName(format),
        " ulps of max|float32| ", scale, ")"));
  }
  return absl::OkStatus();
}

absl::Status ReducedCheck(const CrossCase& reduced, const CrossCase& wide, DType format,
                          double ulps) {
  DAGRAD_ASSIGN_OR_RETURN(BuiltCase r, BuildCase(reduced));
  DAGRAD_ASSIGN_OR_RETURN(BuiltCase w, BuildCase(wide));
  if (r.fetches.size() != w.fetches.size()) {
    return absl::InternalError(absl::StrCat("the 16-bit case has ", r.fetches.size(),
                                            " fetches, the float32 one ", w.fetches.size()));
  }
  ExecutorOptions options;
  options.seed = 1234;
  options.poison_arena = true;
  options.plan.fold_constants = reduced.fold_constants;
  Executor narrow_exec(*r.graph, CpuDevice(), options);
  Executor wide_exec(*w.graph, CpuDevice(), options);
  DAGRAD_ASSIGN_OR_RETURN(auto narrow_plan, narrow_exec.Compile(r.fetches));
  DAGRAD_ASSIGN_OR_RETURN(auto wide_plan, wide_exec.Compile(w.fetches));
  const uint64_t seed = StableHash64(reduced.name.data(), reduced.name.size());
  for (int run = 0; run < reduced.runs; ++run) {
    const Feeds narrow_feeds = r.builder->MakeFeeds(seed + run);
    DAGRAD_ASSIGN_OR_RETURN(const Feeds wide_feeds,
                            Widened(narrow_feeds, w.builder->MakeFeeds(seed + run)));
    const RunOptions ro{.training = reduced.training, .step = static_cast<uint64_t>(3 + run)};
    DAGRAD_ASSIGN_OR_RETURN(std::vector<Tensor> got, narrow_exec.Run(*narrow_plan, narrow_feeds, ro));
    DAGRAD_ASSIGN_OR_RETURN(std::vector<Tensor> want, wide_exec.Run(*wide_plan, wide_feeds, ro));
    for (size_t i = 0; i < got.size(); ++i) {
      absl::Status st = CompareReduced(got[i], want[i], format, ulps);
      if (!st.ok()) {
        return absl::InternalError(absl::StrCat("run ", run, ", ", r.names[i], ": ", st.message()));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace dagrad::testing
