// Collectives, read top to bottom, one op at a time: all_reduce (blocking),
// then all_reduce_start and all_reduce_wait (a bucket's non-blocking sum),
// each as shape inference, CPU kernel, gradient rule, OpDef, builder. The
// kernels only move bytes and call the run's Communicator, which does the
// summing (engine/device/communicator.h).

#include "ops/collective.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "engine/device/communicator.h"
#include "engine/status_macros.h"
#include "ops/fill.h"
#include "ops/op_util.h"
#include "ops/registry.h"
#include "ops/shape_ops.h"

namespace dagrad {
namespace {

ReduceBuffer BufferOf(const TensorRef& t) {
  return {.data = t.data, .count = t.num_elements(), .dtype = t.dtype};
}

// ---- all_reduce -------------------------------------------------------------------

absl::StatusOr<TensorType> InferAllReduce(const InferContext& ctx) {
  DAGRAD_RETURN_IF_ERROR(RequireFloat(ctx, 0, "input"));
  return ctx.in(0);
}

absl::Status AllReduceKernel(const KernelContext& ctx) {
  if (ctx.output.data != ctx.in(0).data) {
    std::memcpy(ctx.output.data, ctx.in(0).data, ctx.output.nbytes());
  }
  return ctx.run.communicator->AllReduceSum(BufferOf(ctx.output));
}

// y = sum over ranks r of x_r, and the job's loss sums every rank's: each
// rank's x_r gets the sum of every rank's dL/dy.
std::vector<Value> AllReduceBackward(const GradContext& c) { return {AllReduce(c.grad)}; }

const OpDef kAllReduce = {.name = "all_reduce",
                          .dot_label = "AllReduce",
                          .infer = InferAllReduce,
                          .cpu = AllReduceKernel,
                          .grad = AllReduceBackward,
                          .inplace = true,
                          .collective = true,
                          .onnx = NoOnnx("a collective; an ONNX model runs in one process")};

// ---- all_reduce_start -------------------------------------------------------------

// Piece is the flat element range [begin, end) of input i that a start
// packs (see StartAllReduce).
struct Piece {
  int64_t begin, end;
};
Piece PieceOf(const Attrs& attrs, size_t i, size_t count, int64_t elements) {
  return {i == 0 ? attrs.GetInt("first_begin") : 0,
          i + 1 == count ? attrs.GetInt("last_end") : elements};
}

absl::StatusOr<TensorType> InferStart(const InferContext& ctx) {
  int64_t total = 0;
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    DAGRAD_RETURN_IF_ERROR(RequireFloat(ctx, static_cast<int>(i), "input"));
    DAGRAD_RETURN_IF_ERROR(RequireSameDType(ctx, static_cast<int>(i), 0));
    const int64_t n = ctx.in(static_cast<int>(i)).shape.num_elements();
    const Piece p = PieceOf(ctx.attrs, i, ctx.inputs.size(), n);
    if (!(0 <= p.begin && p.begin < p.end && p.end <= n)) {
      return absl::InvalidArgumentError(absl::StrCat("input ", i, " of ", n,
                                                     " elements has no range [", p.begin, ", ",
                                                     p.end, ") to pack"));
    }
    total += p.end - p.begin;
  }
  return TensorType{ctx.in(0).dtype, Shape({total})};
}

absl::Status StartKernel(const KernelContext& ctx) {
  char* out = static_cast<char*>(ctx.output.data);
  const size_t size = SizeOf(ctx.output.dtype);
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    const Piece p = PieceOf(ctx.attrs(), i, ctx.inputs.size(), ctx.inputs[i].num_elements());
    const size_t bytes = (p.end - p.begin) * size;
    std::memcpy(out, static_cast<const char*>(ctx.inputs[i].data) + p.begin * size, bytes);
    out += bytes;
  }
  return ctx.run.communicator->StartAllReduceSum(BufferOf(ctx.output));
}

// The start is AllReduce of the packed pieces: each input's gradient is
// its piece of the reduced gradient, zero outside the piece, in its shape.
std::vector<Value> StartBackward(const GradContext& c) {
  const Value reduced = AllReduce(c.grad);
  std::vector<Value> grads;
  int64_t offset = 0;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const Value& x = c.inputs[i];
    const int64_t n = x.shape().num_elements();
    const Piece p = PieceOf(c.attrs(), i, c.inputs.size(), n);
    std::vector<Value> parts;
    Graph& g = *x.graph();
    if (p.begin > 0) parts.push_back(Fill(g, Shape({p.begin}), 0.0, x.dtype()));
    parts.push_back(Slice(reduced, 0, offset, offset + p.end - p.begin));
    if (p.end < n) parts.push_back(Fill(g, Shape({n - p.end}), 0.0, x.dtype()));
    offset += p.end - p.begin;
    const Value flat = parts.size() == 1 ? parts[0] : Concat(parts, 0);
    grads.push_back(c.needs[i] ? Reshape(flat, {x.shape().dims().begin(), x.shape().dims().end()}) : Value());
  }
  return grads;
}

const OpDef kStart = {.name = "all_reduce_start",
                      .dot_label = "AllReduceStart",
                      .infer = InferStart,
                      .cpu = StartKernel,
                      .grad = StartBackward,
                      .collective = true,
                      .early = true,
                      .onnx = NoOnnx("a collective; an ONNX model runs in one process")};

// ---- all_reduce_wait --------------------------------------------------------------

absl::StatusOr<TensorType> InferWait(const InferContext& ctx) {
  DAGRAD_RETURN_IF_ERROR(RequireFloat(ctx, 0, "input"));
  if (ctx.in(0).shape.rank() != 1) {
    return absl::InvalidArgumentError("input must be all_reduce_start's 1-D buffer");
  }
  return ctx.in(0);
}

// In place (the usual case), the wait only waits; the start's buffer is
// its input, so the planner keeps it alive until here.
absl::Status WaitKernel(const KernelContext& ctx) {
  DAGRAD_RETURN_IF_ERROR(ctx.run.communicator->WaitAllReduce(ctx.in(0).data));
  if (ctx.output.data != ctx.in(0).data) {
    std::memcpy(ctx.output.data, ctx.in(0).data, ctx.output.nbytes());
  }
  return absl::OkStatus();
}

// The start did the summing: the wait passes the gradient through.
std::vector<Value> WaitBackward(const GradContext& c) { return {c.grad}; }

const OpDef kWait = {.name = "all_reduce_wait",
                     .dot_label = "AllReduceWait",
                     .infer = InferWait,
                     .cpu = WaitKernel,
                     .grad = WaitBackward,
                     .inplace = true,
                     .collective = true,
                     .onnx = NoOnnx("a collective; an ONNX model runs in one process")};

}  // namespace

DAGRAD_REGISTER_OP(kAllReduce, all_reduce);
DAGRAD_REGISTER_OP(kStart, all_reduce_start);
DAGRAD_REGISTER_OP(kWait, all_reduce_wait);

Value AllReduce(Value x) { return BuildOp(kAllReduce, {x}); }

Value StartAllReduce(const std::vector<Value>& values, int64_t first_begin, int64_t last_end) {
  if (values.empty()) return Value();
  return BuildOp(kStart, values, Attrs().Int("first_begin", first_begin).Int("last_end", last_end));
}

Value WaitAllReduce(Value started) { return BuildOp(kWait, {started}); }

}  // namespace dagrad
