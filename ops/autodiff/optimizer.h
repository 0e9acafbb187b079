// ops/autodiff/optimizer.h
//
// Training steps as graph: BuildTrainingStep differentiates a loss with
// respect to parameters and adds, under its scope (OptimizerOptions::scope,
// "optimizer" by default), gradient
// clipping by global norm (ClipGradNorm) and one fused update op per
// parameter (SGD with momentum, Adam or AdamW, as torch.optim defines them),
// with parameter groups of their own weight decay and learning-rate scale
// (torch.optim's param_groups). The whole step —
// forward, backward, update — is one plan (two with accumulate_gradients),
// compiled once and run every step; the learning rate and the step number are fed, so a schedule needs
// no re-planning.
//
//   // setup: Model
//   DAGRAD_ASSIGN_OR_RETURN(TrainingStep ts,
//       BuildTrainingStep(loss, g.Parameters(), {.kind = OptimizerKind::kAdamW,
//                                                .weight_decay = 0.01, .clip_norm = 1.0}));
//   DAGRAD_ASSIGN_OR_RETURN(auto plan, exec.Compile({loss}, ts.updates));
//   DAGRAD_ASSIGN_OR_RETURN(const double lr, LearningRate(sched, t));
//   DAGRAD_ASSIGN_OR_RETURN(auto out, exec.Run(*plan, {{tokens, batch},
//       {ts.lr, Tensor::Scalar(lr)}, {ts.step, Tensor::Scalar<double>(t)}},
//       {.training = true, .step = t}));
//
// The GPT recipe, AdamW with weight decay on matrices only:
//
//   // setup: Model
//   DAGRAD_ASSIGN_OR_RETURN(TrainingStep gpt_step, BuildTrainingStep(loss,
//       DecayMatrices(g.Parameters(), 0.1), {.kind = OptimizerKind::kAdamW}));

#ifndef DAGRAD_OPS_AUTODIFF_OPTIMIZER_H_
#define DAGRAD_OPS_AUTODIFF_OPTIMIZER_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/graph.h"
#include "ops/autodiff/data_parallel.h"
#include "ops/autodiff/lr_schedule.h"  // the rate fed as lr (LearningRate, above)
#include "ops/autodiff/precision.h"

namespace dagrad {

enum class OptimizerKind { kSgd, kAdam, kAdamW };

// ParseOptimizerKind accepts "sgd", "adam", "adamw"; InvalidArgument else.
absl::StatusOr<OptimizerKind> ParseOptimizerKind(const std::string& name);

// OptimizerName returns the name ParseOptimizerKind accepts for `kind`.
const char* OptimizerName(OptimizerKind kind);

// OptimizerOptions: every field must be finite; the ranges are those
// ValidateOptimizerOptions checks.
struct OptimizerOptions {
  OptimizerKind kind = OptimizerKind::kAdam;
  double momentum = 0.9;  // SGD, in [0, 1)
  bool nesterov = false;  // SGD, needs momentum > 0
  // Adam, AdamW: betas in [0, 1), eps > 0.
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  // >= 0. SGD and Adam: L2 penalty added to the gradient; AdamW: decoupled
  // decay. The default of parameter groups that set none.
  double weight_decay = 0.0;
  // > 0: scale gradients by min(1, clip_norm / (norm + 1e-6)), where norm is
  // the global L2 norm of all gradients (torch.nn.utils.clip_grad_norm_).
  double clip_norm = 0.0;
  // skip_nonfinite: when a step's loss or global gradient norm is NaN or
  // +-Inf, its update ops write nothing: parameters and optimizer state keep
  // their values, as torch.cuda.amp.GradScaler skips optimizer.step(). The
  // caller learns it from the fetched loss and grad_norm (UpdateSkipped) and
  // feeds `step` as the number of updates applied so far + 1, so that Adam's
  // step count does not advance over a skipped update either.
  bool skip_nonfinite = false;
  // allow_unused: parameters the loss does not depend on get no update
  // (torch leaves their .grad None), and from the fixed-shape
  // BuildTrainingStep no state, and are listed in
  // TrainingStep::unused_params and its warning. false: they are an error
  // that names them all. A step on an Optimizer under Adam, AdamW or
  // accumulate_gradients refuses them whatever this says (see Optimizer).
  bool allow_unused = false;
  // data_parallel: with a communicator, the gradients are summed over the
  // ranks, in buckets overlapped with backward, before the norm, the
  // clipping and the updates (ops/autodiff/data_parallel.h).
  DataParallelOptions data_parallel;
  // precision: the loss's forward is rewritten so (ApplyPrecision,
  // ops/autodiff/precision.h) before it is differentiated: under
  // kBFloat16 the matrix products read bfloat16 casts of their float32
  // operands, and the parameters, their gradients, the moments and the
  // updates stay float32. kTF32 changes no node (a device setting).
  //
  //   // setup: Model
  //   DAGRAD_ASSIGN_OR_RETURN(TrainingStep mixed,
  //       BuildTrainingStep(loss, g.Parameters(), {.precision = Precision::kBFloat16}));
  //   DAGRAD_ASSIGN_OR_RETURN(auto mixed_plan, exec.Compile({mixed.loss}, mixed.updates));
  Precision precision = Precision::kFloat32;
  // accumulate_gradients: each parameter gets a gradient sum
  // ("<scope>/<parameter path>/grad_sum"), and the step a second set of
  // targets, TrainingStep::accumulate, which adds a micro-batch's gradients
  // to the sums and updates nothing; `updates` adds the last micro-batch's,
  // updates from the sums (the clipping, the ranks' sum and the skip guard
  // see them) and clears them: torch's loss.backward() per micro-batch,
  // then optimizer.step() and zero_grad(). Scale the loss by 1 / the
  // micro-batches for their mean, as with torch. Give each micro-batch's
  // run a RunOptions::step of its own (the k-th micro-batch of all: k), or
  // every micro-batch of a step draws the same dropout masks. Every step on
  // an Optimizer must reach all its parameters (BuildTrainingStep(loss,
  // optimizer) refuses one that does not). The two plans hold an arena each, so N
  // micro-batches of b rows take the memory of about 2b rows of
  // activations, not N b.
  //
  //   // setup: Model
  //   DAGRAD_ASSIGN_OR_RETURN(TrainingStep ts, BuildTrainingStep(Scale(loss, 0.25),
  //       g.Parameters(), {.accumulate_gradients = true}));
  //   DAGRAD_ASSIGN_OR_RETURN(auto micro, exec.Compile({ts.loss}, ts.accumulate));  // 3 runs
  //   DAGRAD_ASSIGN_OR_RETURN(auto last, exec.Compile({ts.loss}, ts.updates));      // then 1
  bool accumulate_gradients = false;
  // scope: where the step's inputs (`lr`, `step`) and optimizer state
  // ("optimizer/<parameter path>/exp_avg") live, their checkpoint names. A
  // second training step in one graph (a GAN's discriminator beside its
  // generator) takes another scope, as torch builds a second optimizer:
  //
  //   // setup: Model
  //   DAGRAD_ASSIGN_OR_RETURN(TrainingStep second,
  //       BuildTrainingStep(loss, g.Parameters(), {.scope = "second_optimizer"}));
  std::string scope = "optimizer";
};

// ParamGroup: parameters that share a weight decay and a learning-rate
// scale, as an entry of torch.optim's param_groups.
struct ParamGroup {
  std::vector<Value> params;
  // Finite, >= 0; unset: OptimizerOptions::weight_decay.
  std::optional<double> weight_decay;
  // Finite, >= 0: the group's learning rate is the fed lr times this.
  double lr_scale = 1.0;
};

// DecayMatrices is the GPT rule, "decay matrices, not biases or norms", as
// two groups: the parameters of rank >= 2 (embeddings, linear weights) with
// `weight_decay`, the others (biases, LayerNorm's gamma and beta) with 0.
//
//   std::vector<ParamGroup> groups = DecayMatrices(g.Parameters(), 0.1);
std::vector<ParamGroup> DecayMatrices(const std::vector<Value>& params, double weight_decay);

// ClippedGrads: what ClipGradNorm builds, each a node of the grads' graph.
struct ClippedGrads {
  std::vector<Value> grads;  // grads[i] * scale in grads[i]'s dtype; null stays null
  Value norm;                // float64 scalar: the global L2 norm before clipping
  Value scale;               // float64 scalar: min(1, max_norm / (norm + 1e-6))
};

// ClipGradNorm is torch.nn.utils.clip_grad_norm_ as graph: norm = sqrt(sum
// over grads of sum(g^2)), one sum_of_squares op (ops/sum_of_squares.h:
// squares and sums in float64, in a fixed order), and every gradient scaled
// by `scale`. Null gradients are skipped, as torch skips a None .grad.
// BuildTrainingStep clips with its norm and scale, fused into the updates.
// Errors: max_norm not finite and > 0; no gradient that is not null; the
// first gradient that holds an error.
//
//   // setup: Model
//   DAGRAD_ASSIGN_OR_RETURN(ClippedGrads c, ClipGradNorm(grads, 1.0));
//   DAGRAD_ASSIGN_OR_RETURN(auto clip_plan, exec.Compile({c.norm, c.grads[0]}));
absl::StatusOr<ClippedGrads> ClipGradNorm(const std::vector<Value>& grads, double max_norm);

// ValidateOptimizerOptions returns InvalidArgument naming the first field
// that is not finite or out of its range, with its value, e.g.
// "weight_decay must be finite and >= 0, got nan".
absl::Status ValidateOptimizerOptions(const OptimizerOptions& options);

struct TrainingStep {
  // The loss the step computes and differentiates: the given one, or its
  // rewrite under OptimizerOptions::precision. Fetch this one.
  Value loss;
  Value lr;         // feed a float64 scalar each step
  Value step;       // feed a float64 scalar: 1 on the first applied update
  // The global gradient norm before clipping, float64; null unless
  // clip_norm > 0 or skip_nonfinite.
  Value grad_norm;
  std::vector<Value> params;   // the parameters updated, group by group
  // Their gradients, unclipped (summed over the ranks, and with
  // accumulate_gradients over the micro-batches).
  std::vector<Value> grads;
  // Data parallel: the loss summed over the ranks, float64 (each rank's
  // loss being its share, the job's loss); the skip guard reads it. Null
  // without a communicator.
  Value global_loss;
  int num_buckets = 0;         // data parallel: the gradient buckets
  std::vector<Value> updates;  // plan targets
  // With OptimizerOptions::accumulate_gradients: the targets of a
  // micro-batch that only adds its gradients to the sums.
  std::vector<Value> accumulate;
  // The optimizer's variables of the parameters updated: momenta, moments,
  // and with accumulate_gradients the gradient sums.
  std::vector<Value> state;
  // With allow_unused: the paths of the parameters the loss does not reach,
  // and a warning naming them ("" when there are none).
  std::vector<std::string> unused_params;
  std::string warning;
};

// BuildTrainingStep adds the step's nodes to loss's graph, one group of
// `params` with options.weight_decay, or the given groups. Errors: those of
// Gradients; no parameters; a parameter in two groups, or not a variable;
// parameters the loss does not depend on, all named, unless allow_unused;
// bad options (ValidateOptimizerOptions) or group fields, naming the group;
// a scope that already holds a training step's inputs (a second step needs
// its own OptimizerOptions::scope).
absl::StatusOr<TrainingStep> BuildTrainingStep(Value loss, const std::vector<Value>& params,
                                               const OptimizerOptions& options);
absl::StatusOr<TrainingStep> BuildTrainingStep(Value loss, const std::vector<ParamGroup>& groups,
                                               const OptimizerOptions& options);

// Optimizer is an optimizer made from its parameters alone, as torch.optim's
// is: the step's inputs `lr` and `step`, and each parameter's state (SGD's
// "momentum"; Adam's "exp_avg" and "exp_avg_sq"), under
// OptimizerOptions::scope, made once for training steps built on any
// number of losses. A model trains so at shapes that vary between runs:
// one ShapeFamily specialisation per shape (engine/shape_family.h), each a
// BuildTrainingStep of its own loss on the one Optimizer, so that every
// step moves the same parameters and moments:
//
//   // setup: Model
//   DAGRAD_ASSIGN_OR_RETURN(Optimizer adamw, MakeOptimizer(g.Parameters(),
//                                                          {.kind = OptimizerKind::kAdamW}));
//   DAGRAD_ASSIGN_OR_RETURN(TrainingStep ts, BuildTrainingStep(loss, adamw));
//
// Adam's bias correction counts the fed `step`, one count for all the
// parameters, where torch counts each parameter's own steps: so every step
// built on an Adam or AdamW Optimizer must reach all its parameters
// (BuildTrainingStep refuses one that does not, even with allow_unused).
class Optimizer {
 public:
  Optimizer() = default;  // made by MakeOptimizer; BuildTrainingStep refuses this one
  Value lr() const { return lr_; }      // feed a float64 scalar each step
  Value step() const { return step_; }  // feed a float64 scalar: 1 on the first applied update
  const OptimizerOptions& options() const { return options_; }
  const std::vector<ParamGroup>& groups() const { return groups_; }
  // state is `param`'s state variables (SGD's momentum, Adam's exp_avg and
  // exp_avg_sq, then a grad_sum with accumulate_gradients); empty for a
  // parameter this optimizer does not update.
  const std::vector<Value>& state(Value param) const;

 private:
  friend absl::StatusOr<Optimizer> MakeOptimizer(const std::vector<ParamGroup>& groups,
                                                 const OptimizerOptions& options);
  OptimizerOptions options_;
  std::vector<ParamGroup> groups_;
  Value lr_, step_;
  std::map<NodeId, std::vector<Value>> state_;
};

// MakeOptimizer makes the inputs and the state of an optimizer of `params`
// (one group with options.weight_decay) or of `groups`, in their graph, with
// BuildTrainingStep's errors on the options, the groups and the scope.
absl::StatusOr<Optimizer> MakeOptimizer(const std::vector<ParamGroup>& groups,
                                        const OptimizerOptions& options);
absl::StatusOr<Optimizer> MakeOptimizer(const std::vector<Value>& params,
                                        const OptimizerOptions& options);

// BuildTrainingStep on an Optimizer adds the step of `loss` on its inputs and
// state, as the overloads above do (with its options: the precision,
// clipping, data parallelism, allow_unused); steps on one Optimizer share
// lr, step and every moment. Errors: an optimizer MakeOptimizer did not make
// in loss's graph; Gradients'; the parameters the loss does not reach,
// unless allow_unused (and for Adam and AdamW always: see Optimizer).
absl::StatusOr<TrainingStep> BuildTrainingStep(Value loss, const Optimizer& optimizer);

// UpdateSkipped says whether a skip_nonfinite step wrote nothing: its loss
// or gradient norm (both fetched from the same run) is NaN or +-Inf.
//
//   // setup: StepOutputs
//   const bool skipped = UpdateSkipped(out[0].data<float>()[0], out[1].data<double>()[0]);
//   if (!skipped) ++applied;   // feed applied + 1 as ts.step next time
bool UpdateSkipped(double loss, double grad_norm);

}  // namespace dagrad

#endif  // DAGRAD_OPS_AUTODIFF_OPTIMIZER_H_
