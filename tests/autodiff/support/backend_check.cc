#include "tests/autodiff/support/backend_check.h"

#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "engine/philox.h"
#include "engine/status_macros.h"
#include "ops/autodiff/autodiff.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

Tensor Draw(DType dtype, const Shape& shape, uint64_t seed, double lo, double hi) {
  switch (dtype) {
    case DType::kFloat32:
    case DType::kFloat64:
    case DType::kBFloat16:
    case DType::kFloat16:
      return Random(dtype, shape, seed, lo, hi);
    case DType::kInt64:
      return RandomInts(shape, seed, static_cast<int64_t>(lo), static_cast<int64_t>(hi));
    case DType::kInt32: {
      const Tensor wide =
          RandomInts(shape, seed, static_cast<int64_t>(lo), static_cast<int64_t>(hi));
      Tensor t = *Tensor::Zeros(DType::kInt32, shape);
      for (int64_t i = 0; i < t.num_elements(); ++i) {
        t.data<int32_t>()[i] = static_cast<int32_t>(wide.data<int64_t>()[i]);
      }
      return t;
    }
    case DType::kBool: {
      const Tensor u = RandomInts(shape, seed, 0, 1 << 20);
      Tensor t = *Tensor::Zeros(DType::kBool, shape);
      for (int64_t i = 0; i < t.num_elements(); ++i) {
        t.data<bool>()[i] = static_cast<double>(u.data<int64_t>()[i]) < hi * (1 << 20);
      }
      return t;
    }
  }
  return Tensor();
}

}  // namespace

double DefaultRtol(DType d) {
  switch (d) {
    case DType::kFloat64: return 1e-10;
    case DType::kBFloat16: return 1.0 / 128;  // one ulp at the largest value
    case DType::kFloat16: return 1.0 / 1024;
    default: return 1e-5;
  }
}

namespace {

double Element(const Tensor& t, int64_t i) { return FloatAt(t.raw_data(), t.dtype(), i); }

}  // namespace

Value CaseBuilder::Input(const std::string& name, DType dtype, const Shape& shape, double lo,
                         double hi) {
  Value v = g_.Input(name, dtype, shape);
  inputs_.push_back({v, lo, hi, std::nullopt, true});
  return v;
}

Value CaseBuilder::Fixed(const std::string& name, const Tensor& value) {
  Value v = g_.Input(name, value.dtype(), value.shape());
  inputs_.push_back({v, 0, 0, value, true});
  return v;
}

Feeds CaseBuilder::MakeFeeds(uint64_t seed) const {
  Feeds feeds;
  for (size_t i = 0; i < inputs_.size(); ++i) {
    const Spec& s = inputs_[i];
    feeds.emplace_back(s.value, s.fixed ? *s.fixed
                                        : Draw(s.value.dtype(), s.value.shape(),
                                               seed * 7919 + i, s.lo, s.hi));
  }
  return feeds;
}

void CaseBuilder::NoGrad(const Value& input) {
  for (Spec& s : inputs_) {
    if (s.value.id() == input.id()) s.differentiable = false;
  }
}

std::vector<Value> CaseBuilder::FloatInputs() const {
  std::vector<Value> out;
  for (const Spec& s : inputs_) {
    if (IsAnyFloat(s.value.dtype()) && s.differentiable) out.push_back(s.value);
  }
  return out;
}

absl::StatusOr<BuiltCase> BuildCase(const CrossCase& c) {
  BuiltCase b;
  b.graph = std::make_unique<Graph>();
  b.builder = std::make_unique<CaseBuilder>(*b.graph);
  c.build(*b.builder);
  DAGRAD_RETURN_IF_ERROR(b.graph->status());
  // Gradients with respect to the float inputs and float parameters (a
  // composed subgraph's weights).
  std::vector<Value> wrt = b.builder->FloatInputs();
  for (const Value& p : b.graph->Parameters()) {
    if (IsAnyFloat(p.dtype())) wrt.push_back(p);
  }
  Value loss;
  for (size_t i = 0; i < b.builder->outputs().size(); ++i) {
    const Value y = b.builder->outputs()[i];
    DAGRAD_RETURN_IF_ERROR(y.status());
    b.fetches.push_back(y);
    b.names.push_back(absl::StrCat("output ", i, " '", y.path(), "'"));
    b.wrt.push_back("");
    if (!c.gradients || !IsAnyFloat(y.dtype()) || y.shape().num_elements() == 0) continue;
    // A 16-bit output is summed in float32, its gradient's dtype.
    const Value wide = IsReducedFloat(y.dtype()) ? Cast(y, GradientDType(y.dtype())) : y;
    // R is fed, not a constant: with a constant the gradient of every
    // linear op would be constant too, folded on the host, never run.
    const Value r = b.builder->Input(absl::StrCat("r", i), wide.dtype(), y.shape(), 0.5, 1.5);
    // One float64 loss over outputs of every float dtype.
    const Value term = Cast(Sum(Mul(wide, r)), DType::kFloat64);
    loss = loss.is_null() ? term : Add(loss, term);
  }
  if (!loss.is_null() && !wrt.empty()) {
    DAGRAD_ASSIGN_OR_RETURN(std::vector<Value> grads, Gradients(loss, wrt));
    for (size_t i = 0; i < grads.size(); ++i) {
      if (grads[i].is_null()) continue;
      b.fetches.push_back(grads[i]);
      b.names.push_back(absl::StrCat("gradient wrt '", wrt[i].path(), "'"));
      b.wrt.push_back(wrt[i].path());
    }
  }
  DAGRAD_RETURN_IF_ERROR(b.graph->status());
  return b;
}

absl::Status CompareTensors(const Tensor& cpu, const Tensor& other, double rtol, bool exact,
                            double min_scale) {
  if (cpu.dtype() != other.dtype() || cpu.shape() != other.shape()) {
    return absl::InternalError(
        absl::StrCat("types differ: cpu ", cpu.TypeString(), ", other ", other.TypeString()));
  }
  const int64_t n = cpu.num_elements();
  if (exact || !IsAnyFloat(cpu.dtype())) {
    const size_t size = SizeOf(cpu.dtype());
    const auto* a = static_cast<const unsigned char*>(cpu.raw_data());
    const auto* b = static_cast<const unsigned char*>(other.raw_data());
    const bool floating = IsAnyFloat(cpu.dtype());
    for (int64_t i = 0; i < n; ++i) {
      if (std::memcmp(a + i * size, b + i * size, size) != 0 &&
          !(floating && std::isnan(Element(cpu, i)) && std::isnan(Element(other, i)))) {
        const std::vector<double> x = AsDoubles(cpu), y = AsDoubles(other);
        return absl::InternalError(absl::StrCat("element ", i, " differs (exact): cpu ", x[i],
                                                ", other ", y[i]));
      }
    }
    return absl::OkStatus();
  }
  if (rtol == 0) rtol = DefaultRtol(cpu.dtype());
  double scale = min_scale, worst = 0;
  int64_t worst_at = -1;
  for (int64_t i = 0; i < n; ++i) {
    const double a = Element(cpu, i), b = Element(other, i);
    if (std::isnan(a) || std::isnan(b) || std::isinf(a) || std::isinf(b)) {
      if (!(std::isnan(a) && std::isnan(b)) && a != b) {
        return absl::InternalError(
            absl::StrCat("element ", i, ": cpu ", a, ", other ", b, " (NaN or inf mismatch)"));
      }
      continue;
    }
    scale = std::max(scale, std::abs(a));
    if (std::abs(a - b) > worst) {
      worst = std::abs(a - b);
      worst_at = i;
    }
  }
  if (worst > rtol * scale) {
    return absl::InternalError(absl::StrCat(
        "element ", worst_at, ": cpu ", Element(cpu, worst_at), ", other ",
        Element(other, worst_at), ": |difference| ", worst, " > ", rtol, " * max|cpu| (", scale,
        min_scale > 0 ? ", the cancelling terms' scale" : "", ")"));
  }
  return absl::OkStatus();
}

namespace {

// MaxAbs is max |t| over its finite elements.
double MaxAbs(const Tensor& t) {
  double m = 0;
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    if (std::isfinite(Element(t, i))) m = std::max(m, std::abs(Element(t, i)));
  }
  return m;
}

// TermsScale returns the scale fetch i is compared with: the magnitude of
// the terms its gradient cancels, when the case names it, else 0.
absl::StatusOr<double> TermsScale(const CrossCase& c, const BuiltCase& b,
                                  absl::Span<const Tensor> want, size_t i) {
  for (const CancellingGradient& cg : c.cancelling) {
    if (b.wrt[i].empty() || b.wrt[i] != cg.input) continue;
    for (size_t j = 0; j < b.wrt.size(); ++j) {
      if (b.wrt[j] == cg.terms) return MaxAbs(want[j]);
    }
    return absl::InternalError(
        absl::StrCat("cancelling gradient of '", cg.input, "': no gradient wrt '", cg.terms, "'"));
  }
  return 0.0;
}

}  // namespace

absl::Status CompareFetches(const CrossCase& c, const BuiltCase& b, absl::Span<const Tensor> want,
                            absl::Span<const Tensor> got) {
  if (want.size() != b.fetches.size() || got.size() != b.fetches.size()) {
    return absl::InternalError(absl::StrCat("expected ", b.fetches.size(), " fetches, got ",
                                            want.size(), " and ", got.size()));
  }
  for (size_t i = 0; i < b.fetches.size(); ++i) {
    DAGRAD_ASSIGN_OR_RETURN(const double terms, TermsScale(c, b, want, i));
    absl::Status st = CompareTensors(want[i], got[i], c.rtol, c.exact, terms);
    if (!st.ok()) return absl::InternalError(absl::StrCat(b.names[i], ": ", st.message()));
  }
  return absl::OkStatus();
}

absl::Status CrossCheck(const CrossCase& c, const DeviceFactory& factory) {
  DAGRAD_ASSIGN_OR_RETURN(BuiltCase b, BuildCase(c));
  ExecutorOptions options;
  options.seed = 1234;
  options.poison_arena = true;
  options.plan.fold_constants = c.fold_constants;
  DAGRAD_ASSIGN_OR_RETURN(std::unique_ptr<Device> device, factory());
  const std::string device_name = device->name();
  Executor cpu(*b.graph, CpuDevice(), options);
  Executor other(*b.graph, std::move(device), options);
  DAGRAD_ASSIGN_OR_RETURN(auto cpu_plan, cpu.Compile(b.fetches));
  DAGRAD_ASSIGN_OR_RETURN(auto other_plan, other.Compile(b.fetches));
  const uint64_t seed = StableHash64(c.name.data(), c.name.size());
  for (int run = 0; run < c.runs; ++run) {
    const Feeds feeds = b.builder->MakeFeeds(seed + run);
    const RunOptions ro{.training = c.training, .step = static_cast<uint64_t>(3 + run)};
    absl::StatusOr<std::vector<Tensor>> want = cpu.Run(*cpu_plan, feeds, ro);
    absl::StatusOr<std::vector<Tensor>> got = other.Run(*other_plan, feeds, ro);
    if (c.expect_error) {
      if (want.ok() || got.ok()) {
        return absl::InternalError(absl::StrCat("run ", run, ": expected both to fail; cpu: ",
                                                want.status().ToString(), "; ", device_name,
                                                ": ", got.status().ToString()));
      }
      if (want.status() != got.status()) {
        return absl::InternalError(absl::StrCat("run ", run, ": errors differ; cpu: ",
                                                want.status().ToString(), "; ", device_name,
                                                ": ", got.status().ToString()));
      }
      continue;
    }
    if (!want.ok()) return want.status();
    if (!got.ok()) {
      return absl::Status(got.status().code(),
                          absl::StrCat(device_name, ": ", got.status().message()));
    }
    absl::Status st = CompareFetches(c, b, *want, *got);
    if (!st.ok()) {
      return absl::InternalError(absl::StrCat("run ", run, " on ", device_name, ", ",
                                              st.message()));
    }
  }
  return absl::OkStatus();
}

}  // namespace dagrad::testing
