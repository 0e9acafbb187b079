#include "ops/registry.h"

namespace dagrad {

const std::vector<const OpDef*>& AllOps() {
  static const std::vector<const OpDef*>* const ops = [] {
    auto* all = new std::vector<const OpDef*>();
    for (auto family : {
             UnaryOps,
             BinaryOps,
             ReduceOps,
             ShapeOps,
             MatMulOps,
             OptimOps,
             LayerNormOps,
             GatherOps,
             SelectOps,
             FillOps,
             SoftmaxOps,
             DropoutOps,
             AttentionOps,
             LossOps,
             GeluOps,
             SamplingOps,
             CollectiveOps,
             CastOps,
             SumOfSquaresOps,
         }) {
      for (const OpDef* op : family()) all->push_back(op);
    }
    return all;
  }();
  return *ops;
}

const OpDef* FindOp(absl::string_view name) {
  for (const OpDef* op : AllOps()) {
    if (op->name == name) return op;
  }
  return nullptr;
}

}  // namespace dagrad
