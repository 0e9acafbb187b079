#include "tests/support/gradcheck.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "engine/autodiff/autodiff.h"
#include "engine/executor.h"
#include "engine/philox.h"
#include "engine/status_macros.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {

std::vector<GradCase>& MutableCases() {
  static auto* cases = new std::vector<GradCase>();
  return *cases;
}

bool RegisterGradCase(GradCase c) {
  MutableCases().push_back(std::move(c));
  return true;
}

const std::vector<GradCase>& AllGradCases() { return MutableCases(); }

absl::Status GradCheck(const GradCase& c, uint64_t seed) {
  Graph g;
  std::vector<Value> inputs;
  std::vector<Tensor> values;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const GradInput& in = c.inputs[i];
    Tensor v = in.value ? in.value->Clone()
                        : Random(DType::kFloat64, in.shape, seed * 977 + i, in.lo, in.hi);
    inputs.push_back(g.Input(in.name, v.dtype(), v.shape()));
    values.push_back(std::move(v));
  }
  Value y = c.build(g, inputs);
  if (!y.ok()) return y.status();
  if (y.dtype() != DType::kFloat64) {
    return absl::InvalidArgumentError("gradcheck output must be float64");
  }
  Value weights = g.Constant(Random(DType::kFloat64, y.shape(), seed + 17, 0.5, 1.5), "weights");
  Value loss = Sum(Mul(y, weights));
  // Differentiate every float64 input and every float64 parameter the
  // builder declared (a composed subgraph's weights).
  struct Wrt {
    Value value;
    std::string name;
    bool is_input;
    size_t input_index;
  };
  std::vector<Wrt> wrt;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (values[i].dtype() == DType::kFloat64) wrt.push_back({inputs[i], c.inputs[i].name, true, i});
  }
  for (const Value& p : g.Parameters()) {
    if (p.dtype() == DType::kFloat64) wrt.push_back({p, p.path(), false, 0});
  }
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
  const RunOptions run{.training = c.options.training, .step = 3};
  auto feeds = [&] {
    Feeds f;
    for (size_t i = 0; i < inputs.size(); ++i) f.push_back({inputs[i], values[i]});
    return f;
  };
  DAGRAD_ASSIGN_OR_RETURN(std::vector<Tensor> analytic, exec.Run(*grad_plan, feeds(), run));

  const double h = c.options.step;
  size_t fetched = 1;
  for (size_t w = 0; w < wrt.size(); ++w) {
    Tensor param;
    if (!wrt[w].is_input) {
      DAGRAD_ASSIGN_OR_RETURN(param, exec.Read(wrt[w].value));
    }
    Tensor& x = wrt[w].is_input ? values[wrt[w].input_index] : param;
    auto loss_at = [&](int64_t element, double delta) -> absl::StatusOr<double> {
      double& slot = x.data<double>()[element];
      const double saved = slot;
      slot = saved + delta;
      if (!wrt[w].is_input) DAGRAD_RETURN_IF_ERROR(exec.Assign(wrt[w].value, x));
      auto out = exec.Run(*loss_plan, feeds(), run);
      slot = saved;
      if (!wrt[w].is_input) DAGRAD_RETURN_IF_ERROR(exec.Assign(wrt[w].value, x));
      if (!out.ok()) return out.status();
      return (*out)[0].data<double>()[0];
    };
    const Tensor* an = grads[w].ok() ? &analytic[fetched++] : nullptr;
    for (int64_t e = 0; e < x.num_elements(); ++e) {
      DAGRAD_ASSIGN_OR_RETURN(double fp, loss_at(e, h));
      DAGRAD_ASSIGN_OR_RETURN(double fm, loss_at(e, -h));
      double numeric = (fp - fm) / (2 * h);
      if (c.options.four_point) {
        DAGRAD_ASSIGN_OR_RETURN(double fp2, loss_at(e, 2 * h));
        DAGRAD_ASSIGN_OR_RETURN(double fm2, loss_at(e, -2 * h));
        numeric = (fm2 - 8 * fm + 8 * fp - fp2) / (12 * h);
      }
      const double a = an ? an->data<double>()[e] : 0.0;
      if (!(std::abs(a - numeric) <= c.options.atol + c.options.rtol * std::abs(numeric))) {
        return absl::InternalError(absl::StrCat(
            "gradient of '", wrt[w].name, "' ", x.shape().ToString(), " element ", e,
            ": autodiff ", a, ", finite differences ", numeric,
            an ? "" : " (autodiff gave no gradient)"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace dagrad::testing
