// models/gpt2/hf_checkpoint.h
//
// A Hugging Face GPT-2 directory as a dagrad model: config.json
// (models/gpt2/hf_config.h) and the weights, model.safetensors or the
// shards a model.safetensors.index.json lists, in float32, bfloat16 or
// float16 (16-bit weights load widened into float32 parameters).
//
// The weights keep HF's names (GPT2LMHeadModel's state_dict). Files saved
// from GPT2Model, without the "transformer." prefix, load too; the causal
// mask buffers older files store (h.<l>.attn.bias, h.<l>.attn.masked_bias)
// are dropped, and so is lm_head.weight when it equals wte's (a tied head
// saved twice).
//
//   // setup: Gpt2Files
//   Graph g;
//   DAGRAD_ASSIGN_OR_RETURN(HfGpt2 hf, LoadHfGpt2(g, "gpt2"));
//   Value logits = hf.model->Logits(g.Input("ids", DType::kInt64, {1, 8}));
//   Executor exec(g);
//   DAGRAD_RETURN_IF_ERROR(AssignVariables(exec, hf.model->parameters(), hf.weights, "gpt2"));
//
// To generate, or to evaluate as `dagrad eval` does, the weights are a
// checkpoint of their own (their metadata say model=gpt2 and the config):
//   // setup: Gpt2Files
//   DAGRAD_ASSIGN_OR_RETURN(HfGpt2Files files, ReadHfGpt2("gpt2"));
//   DAGRAD_ASSIGN_OR_RETURN(auto gen, Generator::Create(Gpt2::Builder(files.config), files.weights));

#ifndef DAGRAD_MODELS_GPT2_HF_CHECKPOINT_H_
#define DAGRAD_MODELS_GPT2_HF_CHECKPOINT_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/graph.h"
#include "engine/io/safetensors.h"
#include "models/gpt2/gpt2.h"
#include "models/gpt2/hf_config.h"
#include "models/language_model.h"

namespace dagrad::models {

// ReadHfGpt2Config reads `dir`/config.json (ParseHfGpt2Config): ReadFile's
// errors (NotFound naming the path) and the parser's.
absl::StatusOr<Gpt2Config> ReadHfGpt2Config(absl::string_view dir);

// ReadHfWeights reads `dir`/model.safetensors, or else the shards that
// `dir`/model.safetensors.index.json maps each tensor to ("weight_map"),
// and normalises the names as above; F64 tensors are rounded to float32, as
// transformers loads them by default. NotFound when neither file exists;
// InvalidArgument naming the file and tensor or field for a malformed
// index, a shard outside `dir`, a tensor missing from the shard the index
// names or present in two, an untied lm_head.weight; ReadSafetensors's
// errors (a truncated or malformed file, named).
absl::StatusOr<SafetensorsFile> ReadHfWeights(absl::string_view dir);

// A Hugging Face GPT-2 directory, read and checked: the config, and the
// weights, whose metadata are config.ToMetadata() (a checkpoint that
// LoadLanguageModel, EvaluateModel and Generator::Load know).
struct HfGpt2Files {
  Gpt2Config config;
  SafetensorsFile weights;
};

// ReadHfGpt2 reads `dir`: ReadHfGpt2Config's and ReadHfWeights's errors,
// then InvalidArgument naming config.json, the weights file and each
// tensor that is missing, unexpected, or of a shape or dtype other than
// the config's model has (MatchVariables); a config of more layers than
// the weights hold is refused before any model is built.
absl::StatusOr<HfGpt2Files> ReadHfGpt2(absl::string_view dir);

// A model built from a directory, and the weights to assign to it.
struct HfGpt2 {
  std::unique_ptr<Gpt2> model;
  SafetensorsFile weights;
};

// LoadHfGpt2 reads `dir` (ReadHfGpt2's errors) and builds its model in
// `g`, attention by options.attention; the caller assigns hf.weights
// (AssignVariables), as the example above.
absl::StatusOr<HfGpt2> LoadHfGpt2(Graph& g, absl::string_view dir,
                                  const LanguageModelOptions& options = {});

}  // namespace dagrad::models

#endif  // DAGRAD_MODELS_GPT2_HF_CHECKPOINT_H_
