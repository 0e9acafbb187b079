// ONNX round trip: a model dagrad exports (ops/onnx/export.h) imports
// back as the same model: the same parameters (names, shapes, values), the
// same inputs, and the same logits and parameter gradients on the same
// tokens, for the toy transformer and the GPT, at batch and sequence sizes
// other than the ones exported with (the file's sizes are symbolic).

#ifdef DAGRAD_HAVE_ONNX

#include <string>
#include <vector>

#include "engine/executor.h"
#include "engine/io/checkpoint.h"
#include "engine/io/safetensors.h"
#include "engine/status_macros.h"
#include "models/gpt/gpt.h"
#include "models/toy/transformer.h"
#include "ops/autodiff/autodiff.h"
#include "ops/elementwise.h"
#include "ops/onnx/export.h"
#include "ops/onnx/import.h"
#include "ops/reduce.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

constexpr int64_t kRoundtripVocab = 11;

// Run returns logits and the gradients of sum(logits * r) with respect to
// `params`, for `tokens` fed to `input`.
absl::StatusOr<std::vector<Tensor>> Run(Graph& g, Executor& exec, Value input, Value logits,
                                        const std::vector<Value>& params, const Tensor& tokens,
                                        const Tensor& r) {
  Value loss = Sum(Mul(logits, g.Constant(r, "r")));
  DAGRAD_ASSIGN_OR_RETURN(std::vector<Value> grads, Gradients(loss, params));
  std::vector<Value> fetches = {logits};
  fetches.insert(fetches.end(), grads.begin(), grads.end());
  DAGRAD_ASSIGN_OR_RETURN(auto plan, exec.Compile(fetches));
  return exec.Run(*plan, {{input, tokens}});
}

// ExpectSameModelAfterRoundTrip exports `logits` of `g` (tokens (B, T)
// symbolic), imports the file with tokens of shape (B2, T2) and compares.
void ExpectSameModelAfterRoundTrip(Graph& g, Value tokens, Value logits,
                                   const std::vector<Value>& params) {
  Executor exec(g);
  ASSERT_OK_AND_ASSIGN(SafetensorsFile vars, CollectVariables(exec, params));
  OnnxExportOptions options{.variables = &vars, .output_names = {"logits"},
                            .dynamic_dims = {{"tokens", 0, "batch"}, {"tokens", 1, "sequence"}}};
  ASSERT_OK_AND_ASSIGN(std::string bytes, SerializeOnnx(g, {logits}, options));
  ASSERT_OK_AND_ASSIGN(OnnxModel m, ImportOnnxFromBytes(bytes, "", {{"tokens", tokens.shape()}}));

  ASSERT_EQ(m.inputs.size(), 1u);
  EXPECT_EQ(m.inputs[0].name, "tokens");
  ASSERT_EQ(m.parameters.size(), params.size());
  std::vector<Value> imported;
  for (size_t i = 0; i < params.size(); ++i) {
    const OnnxParameter& p = m.parameters[i];
    EXPECT_EQ(p.name, CheckpointName(params[i].node()));
    EXPECT_EQ(p.value.shape(), params[i].shape());
    ExpectAllClose(p.initial, AsDoubles(*vars.Find(p.name)), 0, 0, p.name);
    imported.push_back(p.value);
  }
  const Tensor ids = RandomInts(tokens.shape(), 3, 0, kRoundtripVocab);
  const Tensor r = Random(DType::kFloat32, logits.shape(), 4);
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> want, Run(g, exec, tokens, logits, params, ids, r));
  Executor back(*m.graph);
  ASSERT_OK(m.LoadParameters(back));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> got, Run(*m.graph, back, m.inputs[0].value,
                                                    m.outputs[0].value, imported, ids, r));
  for (size_t i = 0; i < want.size(); ++i) {
    ExpectAllClose(got[i], AsDoubles(want[i]), 1e-5, 1e-6,
                   i == 0 ? "logits" : m.parameters[i - 1].name);
  }
}

TEST(OnnxRoundTrip, ToyTransformer) {
  Graph g;
  ASSERT_OK_AND_ASSIGN(models::ToyTransformer model, models::ToyTransformer::Create(
      g, {.vocab = kRoundtripVocab, .seq_len = 8, .dim = 16, .heads = 2, .layers = 2, .ffn = 24}));
  Value tokens = g.Input("tokens", DType::kInt64, {3, 7});
  Value logits = model(tokens, Value()).logits;
  ExpectSameModelAfterRoundTrip(g, tokens, logits, model.parameters());
}

TEST(OnnxRoundTrip, Gpt) {
  Graph g;
  ASSERT_OK_AND_ASSIGN(models::Gpt model, models::Gpt::Create(
      g, {.vocab = kRoundtripVocab, .block_size = 8, .dim = 16, .heads = 2, .layers = 2}));
  Value tokens = g.Input("tokens", DType::kInt64, {3, 7});
  Value logits = model(tokens);
  ExpectSameModelAfterRoundTrip(g, tokens, logits, model.parameters());
}

}  // namespace
}  // namespace dagrad::testing

#endif  // DAGRAD_HAVE_ONNX
