// ops/optim.h
//
// Optimizer update ops. Each writes its variables in place (the param and
// its optimizer state) and outputs nothing (a zero-size value to use as a
// plan target). The executor runs an update after every other reader of the
// variables it writes. Formulas follow torch.optim exactly.
//
//   // setup: Adam
//   Value lr = g.Input("lr", DType::kFloat64, {});
//   Value t = g.Input("step", DType::kFloat64, {});   // 1, 2, 3, ...
//   Value update = AdamUpdate(w, dw, m, v, lr, t, {.weight_decay = 0.01, .decoupled = true});
//   DAGRAD_ASSIGN_OR_RETURN(auto plan, exec.Compile({loss}, {update}));
//
// `grad_scale` (optional, a float64 scalar) multiplies the gradient first;
// gradient clipping uses it so that clipping costs no extra pass.
// `guard` (optional, a float64 scalar): when it is NaN or +-Inf the op
// writes nothing, so a step whose loss or gradients went non-finite leaves
// the parameter and its state as they were (BuildTrainingStep's
// skip_nonfinite feeds it the gradient norm plus 0 * loss).
//
// Errors, when building: a param/state that is not a variable (or the same
// variable twice), shapes or dtypes that differ, lr/step not float64
// scalars, hyper-parameters out of range. When running, before any update
// writes: an lr that is not finite and >= 0, a step below 1 (on CUDA an lr
// computed on the device is not checked, and a step there fails the run
// from the kernel).

#ifndef DAGRAD_OPS_OPTIM_H_
#define DAGRAD_OPS_OPTIM_H_

#include "engine/graph.h"

namespace dagrad {

// Every hyper-parameter must be finite (building the op fails otherwise).
struct SgdOptions {
  double momentum = 0.0;      // >= 0; 0: plain SGD (velocity is still required)
  double weight_decay = 0.0;  // >= 0, L2 added to the gradient, as torch.optim.SGD
  bool nesterov = false;
};

// SgdUpdate: g' = grad_scale*g + wd*p; v = momentum*v + g'; p -= lr * (nesterov ? g' + momentum*v : v).
Value SgdUpdate(Value param, Value grad, Value velocity, Value lr, const SgdOptions& options,
                Value grad_scale = Value(), Value guard = Value());

struct AdamOptions {
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;
  bool decoupled = false;  // true: AdamW (p *= 1 - lr*wd), false: L2 into the gradient
};

// AdamUpdate: m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
// p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps).
Value AdamUpdate(Value param, Value grad, Value m, Value v, Value lr, Value step,
                 const AdamOptions& options, Value grad_scale = Value(),
                 Value guard = Value());

}  // namespace dagrad

#endif  // DAGRAD_OPS_OPTIM_H_
