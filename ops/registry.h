// ops/registry.h
//
// Every op dagrad defines. Each OpDef registers itself where it is defined,
// with DAGRAD_REGISTER_OP right after it (a family's macro, such as
// DAGRAD_UNARY_OP, does it for its ops): no list names the ops. The ops'
// archive is linked whole (tools/cmake/layers.cmake), so every op's file,
// and its registration, is in every program that links dagrad.
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

// AllOps returns every registered op, ordered by name.
const std::vector<const OpDef*>& AllOps();

// FindOp returns the op called `name`, or null.
const OpDef* FindOp(absl::string_view name);

// OpRegistrar adds `op` to AllOps() when the program starts (a static
// initialiser: OpDefs are constants, ready before any). An OpDef outlives
// the program; two ops of one name abort the program, naming it.
class OpRegistrar {
 public:
  explicit OpRegistrar(const OpDef& op);
};

// DAGRAD_REGISTER_OP(kRelu, relu); after the OpDef kRelu, in namespace
// dagrad, registers it and names it op_defs::relu (`symbol`, the op's name)
// for the op's other parts to key by, such as its CUDA kernel
// (ops/cuda/registry.h): a misspelt op is then a link error.
#define DAGRAD_REGISTER_OP(var, symbol)          \
  namespace op_defs {                            \
  extern const OpDef& symbol;                    \
  const OpDef& symbol = var;                     \
  }                                              \
  const OpRegistrar dagrad_registrar_##symbol(var)

}  // namespace dagrad

#endif  // DAGRAD_OPS_REGISTRY_H_
