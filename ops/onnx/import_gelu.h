// ops/onnx/import_gelu.h
//
// FuseGelu (internal to ops/onnx/) rewrites the exact GELU that
// torch.onnx.export writes before opset 20,
//
//   Div(x, sqrt(2)) -> Erf -> Add(., 1) -> Mul(x, .) -> Mul(., 0.5)
//
// (and dagrad's export writes: Mul(Mul(x, 0.5), 1 + Erf(Mul(x, 1/sqrt(2)))))
// into one Gelu node (ONNX's, opset 20), so that the import runs dagrad's
// fused GELU kernel and its exact gradient instead of five elementwise ops
// around an erf. Only a chain whose intermediate values nothing else reads
// is fused; everything else is left as it was. The result keeps the
// chain's shape: constants of shape (1, 1) broadcast x (5) to (1, 5), and
// so does the Expand(Gelu(x), [1, 1]) they are fused into.
//
//   onnx::GraphProto graph = model.graph();
//   int fused = FuseGelu(graph);   // the number of GELUs fused

#ifndef DAGRAD_OPS_ONNX_IMPORT_GELU_H_
#define DAGRAD_OPS_ONNX_IMPORT_GELU_H_

#include <onnx/onnx_pb.h>

#include <vector>

namespace dagrad {

// FuseGelu rewrites every fusable GELU chain of `graph` in place and
// returns how many it fused. `file_index`, when given, receives for each
// node of the rewritten graph its index in `graph` before (the chain's last
// node's for the Gelu and the nodes added with it), for messages that name
// nodes as the file numbers them.
int FuseGelu(onnx::GraphProto& graph, std::vector<int>* file_index = nullptr);

}  // namespace dagrad

#endif  // DAGRAD_OPS_ONNX_IMPORT_GELU_H_
