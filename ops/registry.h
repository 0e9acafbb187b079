// ops/registry.h
//
// The list of every op dagrad defines, one entry per op family. Adding an op
// to a family adds it to that family's list in its own file; adding a family
// adds one declaration here and one line in registry.cc.
//
//   for (const OpDef* op : AllOps()) std::cout << op->name << "\n";
//
// A new op or a builder? Write a builder over existing ops (a function that
// only calls other builders, like Softmax, SumTo or Embedding) unless one of
// these holds; then it needs an OpDef:
//   - speed: the composition makes extra passes over memory on a path that
//     matters (a fused kernel such as layer_norm or cross_entropy);
//   - numerics: the composition rounds differently from torch, or gives
//     other values or gradients at the edges (0, -0, +-inf, NaN);
//   - dtypes: the parts do not cover the op's dtypes (Neg is float-only);
//   - state or effects: randomness, in-place updates, views.
// The gradient of a builder follows from its parts, so it needs no rule of
// its own; an OpDef needs a rule, a CUDA kernel and a gradcheck case.

#ifndef DAGRAD_OPS_REGISTRY_H_
#define DAGRAD_OPS_REGISTRY_H_

#include <vector>

#include "absl/strings/string_view.h"
#include "engine/op.h"

namespace dagrad {

// AllOps returns every op, grouped by family, in a fixed order.
const std::vector<const OpDef*>& AllOps();

// FindOp returns the op called `name`, or null.
const OpDef* FindOp(absl::string_view name);

// Per-family lists, defined in each family's .cc.
std::vector<const OpDef*> UnaryOps();
std::vector<const OpDef*> BinaryOps();
std::vector<const OpDef*> ReduceOps();
std::vector<const OpDef*> ShapeOps();
std::vector<const OpDef*> MatMulOps();
std::vector<const OpDef*> OptimOps();
std::vector<const OpDef*> LayerNormOps();
std::vector<const OpDef*> GatherOps();
std::vector<const OpDef*> SelectOps();
std::vector<const OpDef*> FillOps();
std::vector<const OpDef*> SoftmaxOps();
std::vector<const OpDef*> DropoutOps();
std::vector<const OpDef*> AttentionOps();
std::vector<const OpDef*> LossOps();
std::vector<const OpDef*> GeluOps();
std::vector<const OpDef*> SamplingOps();
std::vector<const OpDef*> CollectiveOps();
std::vector<const OpDef*> CastOps();
std::vector<const OpDef*> SumOfSquaresOps();

}  // namespace dagrad

#endif  // DAGRAD_OPS_REGISTRY_H_
