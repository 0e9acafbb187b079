// The op cases (tests/autodiff/support/op_case.h) of the optimizer updates,
// ops/optim.cc: the parameters and states they write, over several runs.

#include <cmath>
#include <string>

#include "ops/elementwise.h"
#include "ops/optim.h"
#include "tests/autodiff/support/op_case.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

void Sgd(CaseBuilder& b, DType d) {
  Graph& g = b.graph();
  const Value lr = b.Fixed("lr", Tensor::Scalar<double>(0.05));
  const Value scale = b.Fixed("scale", Tensor::Scalar<double>(0.7));
  for (bool nesterov : {false, true}) {
    const std::string s = nesterov ? "n" : "p";
    const Value p = g.Parameter("p" + s, {5, 77}, Initializer::Normal(0, 1), d);
    const Value v = g.Variable("v" + s, {5, 77}, Initializer::Zeros(), d);
    b.Out(SgdUpdate(p, b.Input("g" + s, d, {5, 77}), v, lr,
                    {.momentum = 0.9, .weight_decay = 0.01, .nesterov = nesterov},
                    nesterov ? scale : Value()));
    b.Out(p);
    b.Out(v);
  }
}

void Adam(CaseBuilder& b, DType d) {
  Graph& g = b.graph();
  const Value lr = b.Fixed("lr", Tensor::Scalar<double>(0.01));
  const Value step = b.Fixed("step", Tensor::Scalar<double>(3));
  for (bool decoupled : {false, true}) {
    const std::string s = decoupled ? "w" : "a";
    const Value p = g.Parameter("p" + s, {3, 301}, Initializer::Normal(0, 1), d);
    const Value m = g.Variable("m" + s, {3, 301}, Initializer::Zeros(), d);
    const Value v = g.Variable("v" + s, {3, 301}, Initializer::Zeros(), d);
    b.Out(AdamUpdate(p, b.Input("g" + s, d, {3, 301}), m, v, lr, step,
                     {.weight_decay = 0.1, .decoupled = decoupled},
                     decoupled ? b.Fixed("scale", Tensor::Scalar<double>(0.5)) : Value()));
    b.Out(p);
    b.Out(m);
    b.Out(v);
  }
}

// A non-finite guard makes the update write nothing; a finite one is inert.
template <bool kAdam>
void Guarded(CaseBuilder& b, DType d) {
  Graph& g = b.graph();
  const Value lr = b.Fixed("lr", Tensor::Scalar<double>(0.05));
  const Value step = b.Fixed("step", Tensor::Scalar<double>(2));
  int i = 0;
  for (double guard : {2.5, std::nan(""), -HUGE_VAL}) {
    const std::string s = std::to_string(i++);
    const Value gv = b.Fixed("guard" + s, Tensor::Scalar<double>(guard));
    const Value p = g.Parameter("p" + s, {4, 33}, Initializer::Normal(0, 1), d);
    const Value m = g.Variable("m" + s, {4, 33}, Initializer::Zeros(), d);
    const Value grad = b.Input("g" + s, d, {4, 33});
    if (kAdam) {
      const Value m2 = g.Variable("m2" + s, {4, 33}, Initializer::Zeros(), d);
      b.Out(AdamUpdate(p, grad, m, m2, lr, step, {}, Value(), gv));
      b.Out(m2);
    } else {
      b.Out(SgdUpdate(p, grad, m, lr, {.momentum = 0.9}, Value(), gv));
    }
    b.Out(p);
    b.Out(m);
  }
}

// A learning rate below 0 computed in the graph (on a device, on the
// device): the update fails alike on every backend, writing nothing.
template <bool kAdam>
void ComputedLrError(CaseBuilder& b, DType d) {
  Graph& g = b.graph();
  const Value lr = -Exp(b.Input("r", DType::kFloat64, {}));
  const Value p = g.Parameter("p", {4}, Initializer::Ones(), d);
  const Value m = g.Variable("m", {4}, Initializer::Zeros(), d);
  const Value grad = b.Input("g", d, {4});
  if (kAdam) {
    const Value v = g.Variable("v", {4}, Initializer::Zeros(), d);
    b.Out(AdamUpdate(p, grad, m, v, lr, b.Fixed("step", Tensor::Scalar<double>(1)), {}));
  } else {
    b.Out(SgdUpdate(p, grad, m, lr, {.momentum = 0.9}));
  }
}

}  // namespace

DAGRAD_OP_CASE(
    sgd_update,
    .configs =
        {{.name = "momentum_nesterov",
          .build = Sgd,
          .modes = kBackendModes,
          .gradients = false,
          .runs = 3},
         {.name = "guard", .build = Guarded<false>, .modes = kBackendModes, .gradients = false},
         {.name = "computed_lr_error",
          .build = ComputedLrError<false>,
          .dtypes = {DType::kFloat32},
          .modes = kBackendModes,
          .expect_error = true}},
    .bench = [](CaseBuilder& b, DType d) {
      Graph& g = b.graph();
      const Value p = g.Parameter("p", {1024, 1024}, Initializer::Normal(0, 1), d);
      const Value v = g.Variable("v", {1024, 1024}, Initializer::Zeros(), d);
      b.Out(SgdUpdate(p, b.Input("g", d, {1024, 1024}), v,
                      b.Fixed("lr", Tensor::Scalar<double>(0.05)), {.momentum = 0.9}));
    });

DAGRAD_OP_CASE(
    adam_update,
    .configs =
        {{.name = "decoupled_or_not",
          .build = Adam,
          .modes = kBackendModes,
          .gradients = false,
          .runs = 3},
         {.name = "guard", .build = Guarded<true>, .modes = kBackendModes, .gradients = false},
         // A step below 1 fails alike on every backend, writing nothing.
         {.name = "step_error",
          .build =
              [](CaseBuilder& b, DType d) {
                Graph& g = b.graph();
                const Value p = g.Parameter("p", {4}, Initializer::Ones(), d);
                const Value m = g.Variable("m", {4}, Initializer::Zeros(), d);
                const Value v = g.Variable("v", {4}, Initializer::Zeros(), d);
                b.Out(AdamUpdate(p, b.Input("g", d, {4}), m, v,
                                 b.Fixed("lr", Tensor::Scalar<double>(0.1)),
                                 b.Fixed("step", Tensor::Scalar<double>(0.5)), {}));
              },
          .dtypes = {DType::kFloat32},
          .modes = kBackendModes,
          .expect_error = true},
         {.name = "computed_lr_error",
          .build = ComputedLrError<true>,
          .dtypes = {DType::kFloat32},
          .modes = kBackendModes,
          .expect_error = true}},
    .bench = [](CaseBuilder& b, DType d) {
      Graph& g = b.graph();
      const Value p = g.Parameter("p", {1024, 1024}, Initializer::Normal(0, 1), d);
      const Value m = g.Variable("m", {1024, 1024}, Initializer::Zeros(), d);
      const Value v = g.Variable("v", {1024, 1024}, Initializer::Zeros(), d);
      b.Out(AdamUpdate(p, b.Input("g", d, {1024, 1024}), m, v,
                       b.Fixed("lr", Tensor::Scalar<double>(0.01)),
                       b.Fixed("step", Tensor::Scalar<double>(3)), {}));
    });

}  // namespace dagrad::testing
