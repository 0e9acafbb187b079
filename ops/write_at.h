// ops/write_at.h
//
// WriteAt: an in-place write of a slice of a variable, at a position read
// at run time: what keeps a KV cache on the executor (models::Generator
// writes each new token's keys and values into per-layer cache variables
// instead of feeding the whole cache in and out). Like the optimizer
// updates (ops/optim.h) it outputs nothing (a zero-size value to use as a
// plan target), and the executor runs it after every other reader of the
// variable, so a plan's other ops read the variable as it was before.
//
//   // setup: Default
//   Value cache = g.Variable("cache", {2, 8, 3}, Initializer::Zeros());
//   Value at = g.Input("at", DType::kInt64, {1});
//   Value write = WriteAt(cache, g.Input("fresh", DType::kFloat32, {2, 1, 3}), at, 1);
//   // a run feeding at = [5] sets cache[:, 5:6, :] to fresh
//
// Errors when built: a target that is not a variable, a value of another
// dtype or rank, or longer along `axis` than the target, or of another size
// along the other axes, a start that is not int64 with one element, an
// axis outside the rank. When run: a start outside [0, target.dim(axis) -
// value.dim(axis)], before any update of the run (on CUDA, a start
// computed on the device fails from this op's kernel, after the updates
// queued before it: engine/executor.h).

#ifndef DAGRAD_OPS_WRITE_AT_H_
#define DAGRAD_OPS_WRITE_AT_H_

#include <cstdint>
#include <string>

#include "engine/dtype.h"
#include "engine/graph.h"
#include "engine/shape.h"

namespace dagrad {

// WriteAt sets target[..., start:start + n, ...] (along `axis`, n =
// value.dim(axis)) to value; `start` is int64 of one element, shape () or
// (1). Negative axes count from the end.
Value WriteAt(Value target, Value value, Value start, int64_t axis);

// WriteAtRows is the write as its kernels (CPU, CUDA) see it: the target
// is `outer` blocks of `rows` rows of `inner_bytes` bytes around the axis,
// the value `outer` blocks of `written` rows.
struct WriteAtRows {
  int64_t outer = 1, rows = 0, inner_bytes = 0, written = 0;
};
WriteAtRows WriteAtLayout(const Shape& target, const Shape& value, DType dtype, int64_t axis);

// WriteAtWordBytes is the widest word (4, 2 or 1 bytes) that divides a row
// of `w` and both addresses: the CUDA kernel copies in words of that size.
// The value may be a view (a slice) starting at any element, so a row of
// whole words need not start on a word.
//
//   alignas(4) char rows[16];
//   int word = WriteAtWordBytes({.rows = 2, .inner_bytes = 8, .written = 1}, rows, rows + 6);  // 2
int WriteAtWordBytes(const WriteAtRows& w, const void* target, const void* value);

// WriteAtStartMessage says that `start` lies outside [0, room], room =
// target.dim(axis) - value.dim(axis): the error of every kernel of the op.
std::string WriteAtStartMessage(int64_t start, const Shape& target, const Shape& value,
                                int64_t axis);

}  // namespace dagrad

#endif  // DAGRAD_OPS_WRITE_AT_H_
