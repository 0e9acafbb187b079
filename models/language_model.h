// models/language_model.h
//
// LanguageModel: the interface every model of token sequences implements —
// the toy transformer (models/toy/transformer.h), the GPT
// (models/gpt/gpt.h), a user's own model of nn:: layers — so that one
// evaluation, ONNX export and generation path serves them all
// (`dagrad eval`, `dagrad export`, `dagrad generate`, models::Generator).
//
// A model is built in a graph, from a config or from a checkpoint's
// metadata (LoadLanguageModel, which knows the library's models and those
// a program registers with RegisterLanguageModel), and gives:
//  - Logits: int64 tokens (B, T), T <= max_len(), to logits (B, T, vocab()).
//  - parameters(), in its checkpoints' order, and Metadata(), what a
//    checkpoint records to rebuild it ("model" names the kind).
//  - For a causal model with a KV cache, ForwardCached: the logits of new
//    tokens attending to the keys and values of earlier positions, one
//    nn::KvCache (models/nn/attention.h) per layer.
//
//   // setup: SavedGpt
//   DAGRAD_ASSIGN_OR_RETURN(SafetensorsFile file, ReadCheckpoint("run/model.safetensors"));
//   Graph g;
//   DAGRAD_ASSIGN_OR_RETURN(std::unique_ptr<LanguageModel> model,
//                           LoadLanguageModel(g, file, "run/model.safetensors"));
//   Value logits = model->Logits(g.Input("tokens", DType::kInt64, {2, 8}));

#ifndef DAGRAD_MODELS_LANGUAGE_MODEL_H_
#define DAGRAD_MODELS_LANGUAGE_MODEL_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "engine/dtype.h"
#include "engine/graph.h"
#include "engine/io/safetensors.h"
#include "models/nn/attention.h"

namespace dagrad::models {

// The shape of a model's KV cache, per layer (1, heads, P, head_dim).
struct KvCacheShape {
  int64_t layers = 0, heads = 0, head_dim = 0;
  DType dtype = DType::kFloat32;
};

class LanguageModel {
 public:
  virtual ~LanguageModel() = default;

  virtual int64_t vocab() const = 0;
  // The longest sequence the model takes (its positions), and the name its
  // config gives that size (in messages: "T <= block_size 8").
  virtual int64_t max_len() const = 0;
  virtual std::string max_len_name() const { return "max_len"; }
  // Causal: the logits at t depend on tokens 0..t alone, so the model can
  // continue a prompt (Generator) and right-padding changes nothing before it.
  virtual bool causal() const = 0;
  // Whether Logits reads `lengths`, int64 (B): the valid tokens of each
  // row, keys past them masked (padding at the end); else it ignores them.
  virtual bool takes_lengths() const { return false; }
  // Logits builds, in the model's graph, logits (B, T, vocab) of int64
  // tokens (B, T) with T <= max_len(); an error Value for other inputs.
  // By default it is ForwardCached at positions 0..T-1 without a cache, so
  // a model with a KV cache writes ForwardCached alone.
  virtual Value Logits(Value tokens, Value lengths = Value()) const;
  // The parameters, in the order (and under the names) of its checkpoints.
  virtual const std::vector<Value>& parameters() const = 0;
  // Metadata: what a model file records so that LoadLanguageModel rebuilds
  // the model ("model" names its kind; the toy transformer's files, which
  // the PyTorch reference reads, have none).
  virtual std::map<std::string, std::string> Metadata() const = 0;
  // A causal model with a KV cache says its shape, and ForwardCached builds
  // the logits (B, T, vocab) of tokens (B, T) at positions, int64 (T),
  // attending to each layer's cache (its past_keys, past_values and keep,
  // nn::KvCache) and to each other causally, and sets each layer's keys
  // and values to the new tokens'; with no caches, it is Logits at those
  // positions. Others return nullopt (a Generator then recomputes the
  // window for every token), and their ForwardCached is an error Value. A
  // model of nn::TransformerBlocks passes block l `{.cache = &cache[l]}`
  // (tools/examples/gpt.cc).
  virtual std::optional<KvCacheShape> kv_cache() const { return std::nullopt; }
  virtual Value ForwardCached(Value tokens, Value positions,
                              absl::Span<nn::KvCache> cache) const;
};

// ModelBuilder builds a model in the graph it is given (what Generator and
// LmTrainer take, to build the model in a graph of their own).
using ModelBuilder = std::function<absl::StatusOr<std::unique_ptr<LanguageModel>>(Graph&)>;

// BuildModel calls `build` on `g`: its errors, InvalidArgument when it
// returns no model, and the graph's first error (a layer the builder made
// with a bad shape, say).
absl::StatusOr<std::unique_ptr<LanguageModel>> BuildModel(const ModelBuilder& build, Graph& g);

// How LoadLanguageModel builds a model; not recorded in checkpoints.
struct LanguageModelOptions {
  nn::AttentionPath attention = nn::AttentionPath::kFused;
};

// A factory builds a kind of model in `g` from a checkpoint at `path`,
// checking that the file holds exactly that model's tensors.
using LanguageModelFactory = std::function<absl::StatusOr<std::unique_ptr<LanguageModel>>(
    Graph& g, const SafetensorsFile& checkpoint, absl::string_view path,
    const LanguageModelOptions& options)>;

// RegisterLanguageModel makes LoadLanguageModel build the checkpoints whose
// metadata say model=`kind` with `factory`; AlreadyExists for a kind
// registered before (gpt, gpt2 (models/gpt2/gpt2.h) and the toy
// transformer, "toy", are built in).
absl::Status RegisterLanguageModel(const std::string& kind, LanguageModelFactory factory);

// ModelKind is the kind a checkpoint's metadata names: "model", or "toy"
// for the toy transformer's files, which have none.
std::string ModelKind(const std::map<std::string, std::string>& metadata);

// ReadModelFile reads the model at `path` as one checkpoint whose metadata
// name its kind (what LoadLanguageModel, EvaluateModel and Generator take):
// a directory is a Hugging Face GPT-2 (models/gpt2/hf_checkpoint.h:
// config.json, its weights), anything else a dagrad model file or
// checkpoint (ReadCheckpoint); of a training checkpoint (checkpoint.
// safetensors, a run stopped before its end included) it keeps the
// parameters, without the optimizer's state. Their errors, naming the
// file; InvalidArgument naming the model file to give for a training run's
// folder.
//
//   // setup: Gpt2Files
//   DAGRAD_ASSIGN_OR_RETURN(SafetensorsFile gpt2, ReadModelFile("models/gpt2"));
absl::StatusOr<SafetensorsFile> ReadModelFile(const std::string& path);

// RefuseRunDirectory is InvalidArgument, naming the model file to give,
// when `path` is a training run's folder (model.safetensors or
// checkpoint.safetensors, no config.json): no model, though a directory.
absl::Status RefuseRunDirectory(const std::string& path);

// LoadLanguageModel builds in `g` the model of the checkpoint at `path`
// (whose parameters the caller then loads, e.g. with AssignVariables):
// InvalidArgument naming the path for an unknown kind (listing the known
// ones), or the factory's errors (metadata or tensors that do not fit;
// for a file that names no model, prefixed with "metadata 'model' is
// missing").
absl::StatusOr<std::unique_ptr<LanguageModel>> LoadLanguageModel(
    Graph& g, const SafetensorsFile& checkpoint, absl::string_view path,
    const LanguageModelOptions& options = {});

}  // namespace dagrad::models

#endif  // DAGRAD_MODELS_LANGUAGE_MODEL_H_
