// models/nn/module.h
//
// What every dagrad::nn layer shares: how it names its parameters and the
// helpers its Create and operator() use. models/nn/nn.h states the layer
// convention; this header is the part of it written as code.
//
// Names. A layer is created under a prefix, relative to the graph's current
// scope: one or more non-empty segments separated by '/', none containing
// '.' ("fc1", "encoder/layers/0"). Its parameters are graph nodes named
// "<scope>/<prefix>/<name>" (engine/graph.h: a node's own name never holds
// '/', and its path is unique). named_parameters() gives the path below the
// layer's scope with '/' replaced by '.': PyTorch's state_dict keys, e.g.
// "weight", "out_proj.bias", "layers.0.self_attn.in_proj_weight".
//
//   nn::NamedParameters named = block.named_parameters();
//   // {{"self_attn.in_proj_weight", w}, ..., {"norm2.bias", b}}

#ifndef DAGRAD_MODELS_NN_MODULE_H_
#define DAGRAD_MODELS_NN_MODULE_H_

#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "engine/graph.h"
#include "engine/io/checkpoint.h"
#include "engine/io/safetensors.h"

namespace dagrad::nn {

// NamedParameters lists a layer's parameters in creation order (PyTorch's
// state_dict order for the torch.nn twins) with names relative to the layer.
using NamedParameters = std::vector<std::pair<std::string, Value>>;

// ValidatePrefix returns InvalidArgument, naming `layer` and the prefix,
// for an empty prefix, an empty segment ("a//b", "/a", "a/") or a '.'.
absl::Status ValidatePrefix(absl::string_view layer, absl::string_view prefix);

// RelativeNames names each parameter by its path below `scope`, with '/'
// replaced by '.'; null Values are skipped.
NamedParameters RelativeNames(absl::string_view scope, absl::Span<const Value> parameters);

// FirstError returns the status of the first error Value among `values`
// (null Values are skipped), else OK.
absl::Status FirstError(absl::Span<const Value> values);

// NotCreated returns, for a layer applied before Create gave it a graph, an
// error Value (FailedPrecondition naming `layer`) in x's graph, or x itself
// when x is null or an error.
Value NotCreated(Value x, absl::string_view layer);

// CheckLayersSaved returns InvalidArgument, naming `path`, when `checkpoint`
// holds no tensor of its last layer (a name starting "<layer_prefix><layers
// - 1>."): metadata that claims more layers than were saved (layers=10^8 in
// a file of 200 bytes) is refused before a graph of that many is built.
absl::Status CheckLayersSaved(const SafetensorsFile& checkpoint, absl::string_view path,
                              absl::string_view layer_prefix, int64_t layers);

// ConfigFromCheckpoint returns Config::FromMetadata of the checkpoint at
// `path` (its errors prefixed with the path) once the file is known to hold
// exactly the tensors of the Model that config describes: CheckLayersSaved
// for its layers (so that no graph of 10^8 layers is built), then
// MatchVariables against the parameters of that Model, built in a graph of
// its own: metadata that understates the model (layers=1 in a file of two)
// is refused, naming the tensors it does not account for. The
// FromCheckpoint of models::GptConfig and models::ToyConfig.
template <typename Config, typename Model>
absl::StatusOr<Config> ConfigFromCheckpoint(const SafetensorsFile& checkpoint,
                                            absl::string_view path,
                                            absl::string_view layer_prefix) {
  absl::StatusOr<Config> c = Config::FromMetadata(checkpoint.metadata);
  if (!c.ok()) return absl::InvalidArgumentError(absl::StrCat(path, ": ", c.status().message()));
  absl::Status saved = CheckLayersSaved(checkpoint, path, layer_prefix, c->layers);
  if (!saved.ok()) return saved;
  Graph scratch;
  absl::StatusOr<Model> model = Model::Create(scratch, *c);
  if (!model.ok()) return model.status();
  const std::string config = absl::StrJoin(c->ToMetadata(), ", ", absl::PairFormatter("="));
  absl::Status fits = MatchVariables(model->parameters(), checkpoint,
                                     absl::StrCat("'", path, "'"), {.from_metadata = config});
  if (!fits.ok()) return fits;
  return c;
}

// ConcatParameters appends the Values of each list in order: a composite layer's
// parameters() from its children's.
std::vector<Value> ConcatParameters(
    std::initializer_list<std::vector<Value>> lists);

}  // namespace dagrad::nn

#endif  // DAGRAD_MODELS_NN_MODULE_H_
