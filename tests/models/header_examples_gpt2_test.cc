// The examples of models/gpt2/hf_config.h, gpt2.h and hf_checkpoint.h, and
// of CausalSelfAttention (models/gpt/gpt.h), line for line, run
// (tests/support/header_examples.h).

#include <filesystem>
#include <memory>
#include <string>

#include "engine/executor.h"
#include "engine/io/checkpoint.h"
#include "engine/io/file_io.h"
#include "engine/status_macros.h"
#include "models/generator.h"
#include "models/gpt/gpt.h"
#include "models/gpt2/gpt2.h"
#include "models/gpt2/hf_checkpoint.h"
#include "models/gpt2/hf_config.h"
#include "tests/support/header_examples.h"

namespace dagrad::models {
namespace {

// CopyTinyGpt2 copies the tiny Hugging Face GPT-2 of tests/data to "gpt2".
absl::Status CopyTinyGpt2() {
  std::error_code error;
  std::filesystem::copy(std::string(DAGRAD_TEST_DATA_DIR) + "/hf_gpt2_tiny", "gpt2", error);
  return error ? absl::InternalError(error.message()) : absl::OkStatus();
}

HEADER_EXAMPLE(ModelsGpt2HfConfig) {
  DAGRAD_RETURN_IF_ERROR(CopyTinyGpt2());
  DAGRAD_ASSIGN_OR_RETURN(std::string json, ReadFile("gpt2/config.json"));
  DAGRAD_ASSIGN_OR_RETURN(Gpt2Config c, ParseHfGpt2Config(json, "gpt2/config.json"));
  // c.dim 768, c.layers 12, ...
  return c.dim == 64 ? absl::OkStatus() : absl::InternalError("the fixture is 64 wide");
}

HEADER_EXAMPLE(ModelsGpt2) {
  Graph g;
  DAGRAD_ASSIGN_OR_RETURN(Gpt2 model, Gpt2::Create(g, {.vocab = 64, .positions = 16,
                                                       .dim = 32, .heads = 4, .layers = 2}));
  Value logits = model.Logits(g.Input("ids", DType::kInt64, {2, 16}));   // (2, 16, 64)
  return logits.shape() == Shape({2, 16, 64}) ? g.status() : absl::InternalError("shape");
}

HEADER_EXAMPLE(ModelsGpt2LoadHfGpt2) {
  DAGRAD_RETURN_IF_ERROR(CopyTinyGpt2());
  Graph g;
  DAGRAD_ASSIGN_OR_RETURN(HfGpt2 hf, LoadHfGpt2(g, "gpt2"));
  Value logits = hf.model->Logits(g.Input("ids", DType::kInt64, {1, 8}));
  Executor exec(g);
  DAGRAD_RETURN_IF_ERROR(AssignVariables(exec, hf.model->parameters(), hf.weights, "gpt2"));
  return logits.ok() ? absl::OkStatus() : g.status();
}

HEADER_EXAMPLE(ModelsGpt2ReadHfGpt2) {
  DAGRAD_RETURN_IF_ERROR(CopyTinyGpt2());
  DAGRAD_ASSIGN_OR_RETURN(HfGpt2Files files, ReadHfGpt2("gpt2"));
  DAGRAD_ASSIGN_OR_RETURN(auto gen, Generator::Create(Gpt2::Builder(files.config), files.weights));
  return gen->Generate({1, 2}, {.tokens = 2}).status();
}

HEADER_EXAMPLE(ModelsCausalSelfAttention) {
  Graph g;
  Value qkv = g.Input("qkv", DType::kFloat32, {2, 5, 24});
  GptOutputs out;
  Value merged = CausalSelfAttention(qkv, 0, {.heads = 2}, {}, out);   // qkv (B, T, 24)
  return merged.shape() == Shape({2, 5, 8}) ? g.status() : absl::InternalError("shape");
}

}  // namespace
}  // namespace dagrad::models
