// Dropout: shape inference, the CPU kernel (counter-based Philox mask, see
// the bit layout in dropout.h), the gradient rule (the same mask, recomputed)
// and the OpDef, then the builder.

#include "ops/dropout.h"

#include <algorithm>
#include <cstring>

#include "engine/philox.h"
#include "engine/status_macros.h"
#include "ops/dropout_math.h"
#include "ops/op_util.h"
#include "ops/parallel.h"
#include "ops/registry.h"

namespace dagrad {
namespace {

absl::StatusOr<TensorType> InferDropout(const InferContext& ctx) {
  DAGRAD_RETURN_IF_ERROR(RequireFloat(ctx, 0, "input"));
  const double p = ctx.attrs.GetFloat("p");
  if (!(p >= 0.0 && p < 1.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("dropout probability p must be in [0, 1), got p = ", p));
  }
  return ctx.in(0);
}

// StreamOf is the counter's stream word: the "stream" attribute that a
// backward dropout carries, else the forward node's own id.
uint32_t StreamOf(const Node& node) {
  return static_cast<uint32_t>(node.attrs.GetInt("stream", node.id));
}

absl::Status DropoutKernel(const KernelContext& ctx) {
  return DispatchFloat(ctx.output.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T* x = ctx.in(0).as<T>();
    T* y = ctx.output.as<T>();
    const int64_t n = ctx.output.num_elements();
    const double p = ctx.attrs().GetFloat("p");
    if (!ctx.run.training || p == 0.0) {
      if (y != x) std::memcpy(y, x, n * sizeof(T));  // in place: nothing to do
      return absl::OkStatus();
    }
    const RandomStream rs{ctx.run.seed, StreamOf(ctx.node), static_cast<uint32_t>(ctx.run.step)};
    const T scale = T(1) / (T(1) - static_cast<T>(p));
    const uint32_t threshold = DropoutThreshold(p);
    constexpr int64_t kChunk = 4 * RandomStream::kLanes;  // elements per FillBits
    const int64_t chunks = (n + kChunk - 1) / kChunk;
    ParallelFor(chunks, 64, [=](int64_t begin, int64_t end) {
      alignas(64) uint32_t bits[kChunk];
      for (int64_t c = begin; c < end; ++c) {
        rs.FillBits(static_cast<uint64_t>(c) * RandomStream::kLanes, bits);
        const int64_t base = c * kChunk;
        const int64_t len = std::min<int64_t>(kChunk, n - base);
        for (int64_t j = 0; j < len; ++j) {
          y[base + j] = DropoutElement(x[base + j], bits[j], threshold, scale);
        }
      }
    });
    return absl::OkStatus();
  });
}

// y = mask * x / (1 - p): dL/dx = mask * g / (1 - p), which is a dropout of
// g on the same stream (same seed and step at run time: the same mask).
std::vector<Value> DropoutGrad(const GradContext& c) {
  return {BuildOp(*c.node.op, {c.grad},
                  Attrs().Float("p", c.attrs().GetFloat("p")).Int("stream", StreamOf(c.node)))};
}

const OpDef kDropout = {.name = "dropout",
                        .dot_label = "Dropout",
                        .infer = InferDropout,
                        .cpu = DropoutKernel,
                        .grad = DropoutGrad,
                        .inplace = true,
                        .random = true};

}  // namespace

Value Dropout(Value x, double p) { return BuildOp(kDropout, {x}, Attrs().Float("p", p)); }

std::vector<const OpDef*> DropoutOps() { return {&kDropout}; }

}  // namespace dagrad
