#include "tests/support/test_util.h"

#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "engine/philox.h"

namespace dagrad::testing {

Tensor Random(DType dtype, const Shape& shape, uint64_t seed, double lo, double hi) {
  Tensor t = *Tensor::Zeros(DType::kFloat64, shape);
  const RandomStream rs{seed, 0xabcdu, 0};
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    const double u = (rs.Bits(i) + 0.5) / 4294967296.0;
    t.data<double>()[i] = lo + (hi - lo) * u;
  }
  return *ConvertFloats(t, dtype);
}

Tensor RandomInts(const Shape& shape, uint64_t seed, int64_t lo, int64_t hi) {
  Tensor t = *Tensor::Zeros(DType::kInt64, shape);
  const RandomStream rs{seed, 0x1234u, 0};
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    t.data<int64_t>()[i] = lo + static_cast<int64_t>(rs.Bits(i) % (hi - lo));
  }
  return t;
}

absl::StatusOr<std::vector<Tensor>> RunOnce(const Graph& g, std::vector<Value> fetches,
                                            const Feeds& feeds, const RunOptions& options) {
  Executor exec(g, CpuDevice(), {.poison_arena = true});
  auto plan = exec.Compile(fetches);
  if (!plan.ok()) return plan.status();
  return exec.Run(**plan, feeds, options);
}

Tensor ToFloat32(const Tensor& t) {
  if (t.dtype() != DType::kFloat64) return t;
  Tensor out = *Tensor::Zeros(DType::kFloat32, t.shape());
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    out.data<float>()[i] = static_cast<float>(t.data<double>()[i]);
  }
  return out;
}

bool SameBits(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

namespace {

// Difference is |x - y|, 0 where both are NaN and infinite where one is.
double Difference(double x, double y) {
  if (std::isnan(x) || std::isnan(y)) return std::isnan(x) && std::isnan(y) ? 0 : INFINITY;
  return x == y ? 0 : std::abs(x - y);
}

}  // namespace

double MaxAbsDifference(const Tensor& a, const Tensor& b) {
  const std::vector<double> x = AsDoubles(a), y = AsDoubles(b);
  if (x.size() != y.size()) return INFINITY;
  double max = 0;
  for (size_t i = 0; i < x.size(); ++i) max = std::max(max, Difference(x[i], y[i]));
  return max;
}

double MaxOrNaN(double a, double b) {
  return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b);
}

double MaxRelativeError(const Tensor& got, const Tensor& want) {
  const std::vector<double> w = AsDoubles(want);
  double scale = 0;
  for (double v : w) {
    if (std::isfinite(v)) scale = std::max(scale, std::abs(v));
  }
  const double diff = MaxAbsDifference(got, want);
  return scale == 0 ? diff : diff / scale;
}

std::string NewTempDir(absl::string_view name) {
  std::string tmpl = absl::StrCat(::testing::TempDir(), "/dagrad_", name, "_XXXXXX");
  EXPECT_NE(::mkdtemp(tmpl.data()), nullptr) << tmpl;
  return tmpl;
}

std::vector<double> AsDoubles(const Tensor& t) {
  std::vector<double> out;
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    switch (t.dtype()) {
      case DType::kFloat32: out.push_back(t.data<float>()[i]); break;
      case DType::kFloat64: out.push_back(t.data<double>()[i]); break;
      case DType::kInt32: out.push_back(t.data<int32_t>()[i]); break;
      case DType::kInt64: out.push_back(static_cast<double>(t.data<int64_t>()[i])); break;
      case DType::kBool: out.push_back(t.data<bool>()[i]); break;
      case DType::kBFloat16:
      case DType::kFloat16: out.push_back(FloatAt(t.raw_data(), t.dtype(), i)); break;
    }
  }
  return out;
}

void ExpectAllClose(const Tensor& got, const std::vector<double>& want, double rtol,
                    double atol, const std::string& what) {
  const std::vector<double> g = AsDoubles(got);
  ASSERT_EQ(g.size(), want.size()) << what;
  int reported = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    // Equal infinities are close (their difference is NaN).
    const bool close = (std::isnan(want[i]) && std::isnan(g[i])) || g[i] == want[i] ||
                       std::abs(g[i] - want[i]) <= atol + rtol * std::abs(want[i]);
    if (!close && reported++ < 5) {
      ADD_FAILURE() << what << " element " << i << ": got " << g[i] << ", want " << want[i];
    }
  }
}

}  // namespace dagrad::testing
