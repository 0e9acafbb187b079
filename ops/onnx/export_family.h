// ops/onnx/export_family.h
//
// ExportOnnxFamily: ONNX export of a graph whose sizes vary between runs,
// declared as a ShapeFamily is (engine/shape_family.h): inputs with named
// symbolic dims ("batch", "sequence") and a bound on each, and the function
// that builds the graph for a binding of them. Each symbol becomes a
// dim_param of the model, and every size computed from it at run time.
//
// The export builds the graph in `g` at sizes A, which it exports
// (ExportOnnx with A's inputs' axes as its dynamic dims), and, as checks it
// does not export, once more per symbol at sizes B with only that symbol's
// size moved. Walking A and each B side by side (the same ops in the same
// order), every dim and integer attribute of A equal to a symbol's A size
// must be that symbol's B size in B, and every other one the same in both,
// as must float attributes and constants: so a
// fixed size that happens to equal a symbol's (a layer of width 5 and a
// batch of 5) moves the search to other sizes A, and a size derived from
// a symbol in another way (T - 1, B * T), which ONNX export would write
// as a constant, is an error naming the node. A model then never comes out
// wrong at sizes it was not built at.
//
// A language model's logits, `dagrad export`'s (tests/models/onnx_family_test.cc
// runs this):
//   DAGRAD_RETURN_IF_ERROR(ExportOnnxFamily(
//       g, {.inputs = {{"tokens", DType::kInt64, {"batch", "sequence"}}},
//           .bounds = {{"batch", 64}, {"sequence", 8}}},
//       [&](Graph&, const Binding& b) -> absl::StatusOr<Specialized> {
//         return Specialized{.fetches = {model->Logits(b.input("tokens"))}};
//       },
//       "model.onnx", {.variables = &weights, .output_names = {"logits"}}));

#ifndef DAGRAD_OPS_ONNX_EXPORT_FAMILY_H_
#define DAGRAD_OPS_ONNX_EXPORT_FAMILY_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/graph.h"
#include "engine/shape_family.h"
#include "ops/onnx/export.h"

namespace dagrad {

// SerializeOnnxFamily returns the model's bytes (SerializeOnnx's, of the
// fetches of `build` at the chosen sizes; options.dynamic_dims is replaced
// by the declaration's). Errors: InvalidArgument for a declaration
// ShapeFamily refuses, a symbol whose bound leaves no two sizes >= 2, a
// graph whose ops or sizes depend on the binding other than through the
// symbols (naming the node), or no sizes without a coincidence; `build`'s
// errors; SerializeOnnx's.
absl::StatusOr<std::string> SerializeOnnxFamily(Graph& g, const ShapeFamilyOptions& family,
                                                const SpecializeFn& build,
                                                const OnnxExportOptions& options);

// ExportOnnxFamily writes SerializeOnnxFamily's model to `path` atomically.
absl::Status ExportOnnxFamily(Graph& g, const ShapeFamilyOptions& family,
                              const SpecializeFn& build, const std::string& path,
                              const OnnxExportOptions& options);

}  // namespace dagrad

#endif  // DAGRAD_OPS_ONNX_EXPORT_FAMILY_H_
