// ops/gather.h
//
// Indexing by integer tensors: Gather (numpy.take / tf.gather), Embedding
// (a lookup table's rows), and ScatterAdd, Gather's adjoint, which is how
// Gather's gradient reaches params.
//
//   Value e = Embedding(table, tokens);            // (V, E), (B, T) -> (B, T, E)
//   Value h = Gather(x, idx, 1);                   // (B, T, E), (K,) -> (B, K, E)
//
// Indices are checked when the graph runs (they are data): one outside
// [0, n) fails the run with InvalidArgument naming the op, the node, the
// index value and its position. Negative indices are errors, not counted
// from the end. Indices take no gradient.

#ifndef DAGRAD_OPS_GATHER_H_
#define DAGRAD_OPS_GATHER_H_

#include <cstdint>

#include "engine/graph.h"

namespace dagrad {

// Gather returns the slices of `params` along `axis` picked by `indices`:
//   out[a..., i..., b...] = params[a..., indices[i...], b...]
//   params: (A..., N, B...) any dtype; indices: (I...) int32/int64
//   -> (A..., I..., B...)
// `axis` may be negative. Differentiable with respect to params (float).
//
// Errors: InvalidArgument when building for indices that are not int32 or
// int64, params of rank 0 or an axis out of range; when running, for an
// index outside [0, N).
//
//   Value x = g.Input("x", DType::kFloat32, {4, 5, 6});
//   Value idx = g.Input("idx", DType::kInt64, {2, 3});
//   Value y = Gather(x, idx, 1);                   // (4, 2, 3, 6)
Value Gather(Value params, Value indices, int64_t axis = 0);

// GatherFromEnd is Gather that also takes an index in [-N, 0), counted from
// the end (numpy.take's, ONNX Gather's): -1 picks the last slice. An index
// outside [-N, N) fails the run, naming the index as given.
//
//   Value last = GatherFromEnd(x, idx, 1);         // idx may hold -5 .. 4
Value GatherFromEnd(Value params, Value indices, int64_t axis = 0);

// Embedding returns table's rows picked by ids: Gather(table, ids, 0), as
// torch.nn.functional.embedding.
//   table: (V, E...); ids: (I...) int32/int64  ->  (I..., E...)
//
// Errors: those of Gather (an id outside [0, V) when running).
//
//   Graph::Scope scope(g, "tok_emb");              // names hold no '/': scopes nest
//   Value table = g.Parameter("weight", {V, E}, Initializer::Normal(0, 1));
//   Value tokens = g.Input("tokens", DType::kInt64, {B, T});
//   Value x = Embedding(table, tokens);            // (B, T, E)
Value Embedding(Value table, Value ids);

// ScatterAdd returns zeros of shape (A..., n, B...) with each slice of
// `updates` added at its index along `axis`; repeated indices accumulate,
// in index order and in double (a float reduction like Sum), so an
// embedding row hit by a million tokens agrees with float64.
// It is Gather's adjoint: ScatterAdd(idx, Gather(p, idx, axis), n, axis)
// sums what Gather read back into p's shape. Differentiable with respect to
// updates (its gradient is a Gather).
//   indices: (I...) int32/int64; updates: (A..., I..., B...) float
//   -> (A..., n, B...)
// `axis` is the position of I... in updates and of n in the output (not
// negative: A... cannot be told from I... otherwise).
//
// Errors: InvalidArgument when building for non-integer indices, non-float
// updates, a negative n or axis, or updates whose dims at axis are not
// indices' shape; when running, for an index outside [0, n).
//
//   Value idx = g.Input("idx", DType::kInt64, {3});
//   Value upd = g.Input("upd", DType::kFloat32, {3, 4});
//   Value out = ScatterAdd(idx, upd, 5);           // (5, 4)
Value ScatterAdd(Value indices, Value updates, int64_t n, int64_t axis = 0);

}  // namespace dagrad

#endif  // DAGRAD_OPS_GATHER_H_
