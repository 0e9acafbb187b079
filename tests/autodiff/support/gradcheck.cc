#include "tests/autodiff/support/gradcheck.h"

#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/executor.h"
#include "engine/status_macros.h"
#include "ops/autodiff/autodiff.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

// WeightedLoss is the sum over the float outputs y of sum(y * R), R fixed
// random per output.
absl::StatusOr<Value> WeightedLoss(Graph& g, const std::vector<Value>& outputs, uint64_t seed) {
  Value loss;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Value& y = outputs[i];
    DAGRAD_RETURN_IF_ERROR(y.status());
    if (!IsFloating(y.dtype())) continue;
    if (y.dtype() != DType::kFloat64) {
      return absl::InvalidArgumentError(
          absl::StrCat("gradcheck output ", i, " '", y.path(), "' must be float64"));
    }
    const Value weights =
        g.Constant(Random(DType::kFloat64, y.shape(), seed + 17 + i, 0.5, 1.5), "weights");
    const Value term = Sum(Mul(y, weights));
    loss = loss.is_null() ? term : Add(loss, term);
  }
  if (loss.is_null()) return absl::InvalidArgumentError("gradcheck needs a float64 output");
  return loss;
}

// What the gradient is taken with respect to: an input (its index in the
// feeds) or a parameter (feed -1).
struct Wrt {
  Value value;
  int feed;
};

std::vector<Wrt> Differentiated(CaseBuilder& b, const Feeds& feeds) {
  std::vector<Wrt> wrt;
  for (const Value& v : b.FloatInputs()) {
    if (v.dtype() != DType::kFloat64) continue;
    for (size_t j = 0; j < feeds.size(); ++j) {
      if (feeds[j].first.id() == v.id()) wrt.push_back({v, static_cast<int>(j)});
    }
  }
  for (const Value& p : b.graph().Parameters()) {
    if (p.dtype() == DType::kFloat64) wrt.push_back({p, -1});
  }
  return wrt;
}

// NumericGradient is the finite-difference gradient of the loss (run by
// `loss_at(element, delta)`) at each of `n` elements.
absl::StatusOr<std::vector<double>> NumericGradient(
    int64_t n, const GradCheckOptions& options,
    const std::function<absl::StatusOr<double>(int64_t, double)>& loss_at) {
  const double h = options.step;
  std::vector<double> out(n);
  for (int64_t e = 0; e < n; ++e) {
    DAGRAD_ASSIGN_OR_RETURN(double fp, loss_at(e, h));
    DAGRAD_ASSIGN_OR_RETURN(double fm, loss_at(e, -h));
    out[e] = (fp - fm) / (2 * h);
    if (options.four_point) {
      DAGRAD_ASSIGN_OR_RETURN(double fp2, loss_at(e, 2 * h));
      DAGRAD_ASSIGN_OR_RETURN(double fm2, loss_at(e, -2 * h));
      out[e] = (fm2 - 8 * fm + 8 * fp - fp2) / (12 * h);
    }
  }
  return out;
}

// Compare checks autodiff's gradient (null: none) of `wrt` against the
// numeric one.
absl::Status Compare(const Wrt& wrt, const Tensor& x, const Tensor* analytic,
                     const std::vector<double>& numeric, const GradCheckOptions& options) {
  for (int64_t e = 0; e < x.num_elements(); ++e) {
    const double a = analytic ? analytic->data<double>()[e] : 0.0;
    if (!(std::abs(a - numeric[e]) <= options.atol + options.rtol * std::abs(numeric[e]))) {
      return absl::InternalError(absl::StrCat("gradient of '", wrt.value.path(), "' ",
                                              x.shape().ToString(), " element ", e, ": autodiff ",
                                              a, ", finite differences ", numeric[e],
                                              analytic ? "" : " (autodiff gave no gradient)"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status GradCheck(const std::function<void(CaseBuilder&)>& build,
                       const GradCheckOptions& options, bool training, uint64_t seed) {
  Graph g;
  CaseBuilder b(g);
  build(b);
  DAGRAD_RETURN_IF_ERROR(g.status());
  DAGRAD_ASSIGN_OR_RETURN(Value loss, WeightedLoss(g, b.outputs(), seed));
  Feeds feeds = b.MakeFeeds(seed);
  const std::vector<Wrt> wrt = Differentiated(b, feeds);
  std::vector<Value> wrt_values;
  for (const Wrt& w : wrt) wrt_values.push_back(w.value);
  DAGRAD_ASSIGN_OR_RETURN(std::vector<Value> grads, Gradients(loss, wrt_values));

  Executor exec(g, {.seed = seed});
  std::vector<Value> fetches = {loss};
  for (const Value& gr : grads) {
    if (gr.ok()) fetches.push_back(gr);
  }
  DAGRAD_ASSIGN_OR_RETURN(auto grad_plan, exec.Compile(fetches));
  DAGRAD_ASSIGN_OR_RETURN(auto loss_plan, exec.Compile({loss}));
  const RunOptions run{.training = training, .step = 3};
  DAGRAD_ASSIGN_OR_RETURN(std::vector<Tensor> analytic, exec.Run(*grad_plan, feeds, run));

  size_t fetched = 1;
  for (size_t w = 0; w < wrt.size(); ++w) {
    const bool is_input = wrt[w].feed >= 0;
    Tensor param;
    if (!is_input) {
      DAGRAD_ASSIGN_OR_RETURN(param, exec.Read(wrt[w].value));
    }
    Tensor& x = is_input ? feeds[wrt[w].feed].second : param;
    // The loss with element `e` of x moved by `delta` (a parameter is
    // assigned to the executor's copy).
    auto loss_at = [&](int64_t e, double delta) -> absl::StatusOr<double> {
      double& slot = x.data<double>()[e];
      const double saved = slot;
      slot = saved + delta;
      if (!is_input) DAGRAD_RETURN_IF_ERROR(exec.Assign(wrt[w].value, x));
      auto out = exec.Run(*loss_plan, feeds, run);
      slot = saved;
      if (!is_input) DAGRAD_RETURN_IF_ERROR(exec.Assign(wrt[w].value, x));
      if (!out.ok()) return out.status();
      return (*out)[0].data<double>()[0];
    };
    DAGRAD_ASSIGN_OR_RETURN(std::vector<double> numeric,
                            NumericGradient(x.num_elements(), options, loss_at));
    const Tensor* an = grads[w].ok() ? &analytic[fetched++] : nullptr;
    DAGRAD_RETURN_IF_ERROR(Compare(wrt[w], x, an, numeric, options));
  }
  return absl::OkStatus();
}

}  // namespace dagrad::testing
