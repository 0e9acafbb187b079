// The examples of ops/autodiff/precision.h, OptimizerOptions::precision
// (ops/autodiff/optimizer.h) and models/trainer.h's RewriteForPrecision,
// line for line, run (tests/support/header_examples.h says how they are kept in
// step with the headers).
#include <vector>

#include "engine/executor.h"
#include "engine/graph.h"
#include "engine/status_macros.h"
#include "models/trainer.h"
#include "ops/autodiff/optimizer.h"
#include "ops/autodiff/precision.h"
#include "ops/elementwise.h"
#include "ops/loss.h"
#include "ops/matmul.h"
#include "tests/support/header_examples.h"

namespace dagrad {
namespace {

// A forward with one product: logits = tanh(x) · wᵀ.
struct Forward {
  Graph g;
  Value tokens = g.Input("x", DType::kFloat32, {4, 8});
  Value targets = g.Input("targets", DType::kInt64, {4});
  Value w = g.Parameter("w", {3, 8}, Initializer::XavierUniform());
  Value Model(Value x) { return Linear(Tanh(x), w); }
};

HEADER_EXAMPLE(ApplyPrecision) {
  Forward f;
  Value tokens = f.tokens, targets = f.targets;
  auto model = [&f](Value x) { return f.Model(x); };
  Value logits = model(tokens);
  Value loss = CrossEntropy(logits, targets);
  DAGRAD_ASSIGN_OR_RETURN(std::vector<Value> bf16,
                          ApplyPrecision({loss, logits}, Precision::kBFloat16));
  // bf16[0] is the loss to differentiate and fetch, bf16[1] its logits.
  EXPECT_NE(bf16[0], loss);
  EXPECT_EQ(bf16[1].dtype(), DType::kFloat32);
  return absl::OkStatus();
}

HEADER_EXAMPLE(ParsePrecision) {
  DAGRAD_ASSIGN_OR_RETURN(Precision p, ParsePrecision("bf16"));
  EXPECT_EQ(p, Precision::kBFloat16);
  return absl::OkStatus();
}

HEADER_EXAMPLE(OptimizerPrecision) {
  Forward f;
  Graph& g = f.g;
  Value loss = CrossEntropy(f.Model(f.tokens), f.targets);
  Executor exec(g);
  DAGRAD_ASSIGN_OR_RETURN(TrainingStep mixed,
      BuildTrainingStep(loss, g.Parameters(), {.precision = Precision::kBFloat16}));
  DAGRAD_ASSIGN_OR_RETURN(auto mixed_plan, exec.Compile({mixed.loss}, mixed.updates));
  EXPECT_NE(mixed.loss, loss);
  EXPECT_NE(mixed_plan, nullptr);
  return absl::OkStatus();
}

HEADER_EXAMPLE(RewriteForPrecision) {
  using models::RewriteForPrecision;
  Forward f;
  Value logits = f.Model(f.tokens);
  Value loss = CrossEntropy(logits, f.targets);
  const Value before = loss;
  DAGRAD_RETURN_IF_ERROR(RewriteForPrecision(Precision::kBFloat16, {&loss, &logits}));
  EXPECT_NE(loss, before);
  return absl::OkStatus();
}

}  // namespace
}  // namespace dagrad
