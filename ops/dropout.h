// ops/dropout.h
//
// Inverted dropout with a mask that is never stored: every element's keep
// decision is a pure function of (seed, stream, step, element index) through
// Philox4x32-10 (engine/philox.h), so the backward pass recomputes the very
// same mask, and a CUDA kernel can reproduce it bit for bit.
//
//   Value h = Dropout(Relu(Linear(x, w1, b1)), 0.1);   // (B, T, F) -> (B, T, F)
//   DAGRAD_ASSIGN_OR_RETURN(auto plan, exec.Compile({h}));
//   DAGRAD_ASSIGN_OR_RETURN(auto train, exec.Run(*plan, feeds, {.training = true, .step = step}));
//   DAGRAD_ASSIGN_OR_RETURN(auto eval, exec.Run(*plan, feeds));  // dropout is the identity
//
// The bit layout, which a GPU kernel must follow exactly:
//   key     = (k0, k1) = (low, high 32 bits of RunContext::seed, the
//             executor's seed);
//   counter = (c0, c1, c2, c3) = (low, high 32 bits of i / 4, stream,
//             low 32 bits of RunContext::step: RunOptions::step, or when a
//             run sets none, the executor's count of such runs, so that
//             each draws a new mask), for element i of the row-major
//             flattened tensor;
//   stream  = the node's int attribute "stream" when present (the backward
//             op carries its forward node's stream), else the node's id,
//             or, built under a Graph::StreamOrigin (as a ShapeFamily
//             builds each shape), 2^31 + its offset from the origin, so
//             that such a subgraph draws the same wherever and whenever it
//             is built (Node::RandomStream);
//   bits    = Philox4x32_10(counter, key).v[i % 4];
//   keep    = (bits >> 8) >= ceil(p * 2^24), computed in double; the same
//             as u >= p for u = (bits >> 8) * 2^-24 (UniformFromBits);
//   y       = x * (keep ? s : 0), with s = 1 / (1 - p) computed in the element
//             type: T(1) / (T(1) - T(p)). A dropped element is x * 0, as in
//             torch: -0.0 for a negative x, NaN for a NaN or infinite x.
// ops/math/dropout_math.h holds this rule for both backends.
// That is RandomStream{seed, stream, step}.Bits(i).

#ifndef DAGRAD_OPS_DROPOUT_H_
#define DAGRAD_OPS_DROPOUT_H_

#include "absl/status/status.h"
#include "engine/graph.h"

namespace dagrad {

// kMaxDropout is the largest dropout probability accepted, 1 - 2^-10. The
// keep decision compares 24 random bits with ceil(p * 2^24), so the keep
// probability is 1 - p rounded down to a multiple of 2^-24, and float32
// rounds p before the scale 1 / (1 - p) is taken. Both errors grow as
// 2^-24 / (1 - p): at p = 1 - 1e-7 the expected kept mass (keep probability
// times scale) is about half of x's. Up to kMaxDropout it is within 1e-4 of
// x's, for float32 and float64 alike.
inline constexpr double kMaxDropout = 1.0 - 1.0 / 1024.0;

// ValidateDropout returns OK for p in [0, kMaxDropout], else InvalidArgument
// naming p: "dropout must be in [0, 1), got p = 1.5" outside [0, 1) (NaN
// included), "dropout must be at most 1 - 2^-10 ..." above kMaxDropout.
// Dropout, MultiheadAttention and the model configs all check with it.
absl::Status ValidateDropout(double p);

// Dropout returns x with each element zeroed with probability p and the
// others scaled by 1 / (1 - p) when the run is in training mode
// (RunOptions::training), and a copy of x otherwise: x (...) -> (...), float.
// The node is random (never constant-folded) and may run in place. Its
// gradient is a dropout of the incoming gradient with the same stream, so
// it applies the same mask and scale.
//
// Errors: p outside [0, kMaxDropout] (ValidateDropout), x not float.
//
//   Value y = Dropout(x, 0.5);   // training: about half of x zeroed, the rest doubled
//   Value z = Dropout(x, 0.0);   // always a copy
Value Dropout(Value x, double p);

// DropoutKeepMask returns bool (...), true where the Dropout `y` keeps its
// element: in a training run the very mask y applies (drawn on y's stream,
// so a kept element of x = 0 is true, unlike y != 0), all true otherwise.
// ONNX Dropout's mask output. An error Value when y is not a Dropout's.
//
//   Value y = Dropout(x, 0.5);
//   Value kept = DropoutKeepMask(y);   // bool, x's shape
Value DropoutKeepMask(Value y);

}  // namespace dagrad

#endif  // DAGRAD_OPS_DROPOUT_H_
