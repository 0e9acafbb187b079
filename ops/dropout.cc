// Dropout, read top to bottom: shape inference, the CPU kernel (counter-based
// Philox mask, see the bit layout in dropout.h), the gradient rule (the same
// mask, recomputed), the OpDef and the builder.

#include "ops/dropout.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/philox.h"
#include "engine/status_macros.h"
#include "ops/cpu/internal/cpu_isa.h"
#include "ops/cpu/internal/philox_words.h"
#include "ops/cpu/parallel.h"
#include "ops/elementwise.h"
#include "ops/fill.h"
#include "ops/math/dropout_math.h"
#include "ops/op_util.h"
#include "ops/registry.h"

namespace dagrad {

absl::Status ValidateDropout(double p) {
  if (!(p >= 0.0 && p < 1.0)) {
    return absl::InvalidArgumentError(absl::StrCat("dropout must be in [0, 1), got p = ", p));
  }
  if (p > kMaxDropout) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "dropout must be at most 1 - 2^-10 = %.10g, got p = %.10g: the keep decision draws "
        "24 random bits, so nearer to 1 the kept mass would be off by more than 1e-4",
        kMaxDropout, p));
  }
  return absl::OkStatus();
}

namespace {

absl::StatusOr<TensorType> InferDropout(const InferContext& ctx) {
  DAGRAD_RETURN_IF_ERROR(RequireFloat(ctx, 0, "input"));
  DAGRAD_RETURN_IF_ERROR(ValidateDropout(ctx.attrs.GetFloat("p")));
  return ctx.in(0);
}

// ElementOffset is where this process's first element sits in the global
// batch's tensor (RunContext::batch_begin): batch_begin rows of n /
// batch_rows elements each, for an input whose rows are its batch's.
absl::StatusOr<uint64_t> ElementOffset(const KernelContext& ctx, int64_t n) {
  const int64_t first = DropoutFirstElement(ctx.run.batch_begin, ctx.run.batch_rows, n);
  if (first < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "data-parallel dropout needs an input whose elements split into the batch's ",
        ctx.run.batch_rows, " rows, got ", n, " elements"));
  }
  return static_cast<uint64_t>(first);
}

// DropoutFrom is the kernel for elements that start at global element
// `first`, not at 0: each chunk of the output draws the words of its
// global range (PhiloxWords: one philox_bits call, two where the blocks'
// low 32 bits wrap, at every 2^34th element, which one call got wrong).
template <typename T>
void DropoutFrom(const CpuKernels& kernels, const DropoutArgs<T>& d, uint64_t first) {
  constexpr int64_t kChunk = 4 * (kPhiloxBlocks - 1);  // + up to 3 words of misalignment
  const RandomStream rs{.seed = d.seed, .stream = d.stream, .step = d.step};
  ParallelFor((d.n + kChunk - 1) / kChunk, 64, [&](int64_t begin, int64_t end) {
    uint32_t word[kChunk];
    for (int64_t c = begin; c < end; ++c) {
      const int64_t base = c * kChunk;
      const int64_t len = std::min(kChunk, d.n - base);
      PhiloxWords(kernels, rs, first + static_cast<uint64_t>(base), len, word);
      for (int64_t j = 0; j < len; ++j) {
        d.y[base + j] = DropoutElement(d.x[base + j], word[j], d.threshold, d.scale);
      }
    }
  });
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
    DAGRAD_ASSIGN_OR_RETURN(const CpuKernels* kernels, ActiveKernels());
    const DropoutArgs<T> args = {ctx.run.seed,
                                 ctx.node.RandomStream(),
                                 static_cast<uint32_t>(ctx.run.step),
                                 n,
                                 DropoutThreshold(p),
                                 T(1) / (T(1) - static_cast<T>(p)),
                                 x,
                                 y};
    DAGRAD_ASSIGN_OR_RETURN(const uint64_t first, ElementOffset(ctx, n));
    if (first != 0) {
      DropoutFrom(*kernels, args, first);
      return absl::OkStatus();
    }
    constexpr int64_t kChunk = 4 * kPhiloxBlocks;  // elements per kernel chunk
    ParallelFor((n + kChunk - 1) / kChunk, 64, [&](int64_t begin, int64_t end) {
      if constexpr (std::is_same_v<T, float>) {
        kernels->dropout_f32(args, begin, end);
      } else {
        kernels->dropout_f64(args, begin, end);
      }
    });
    return absl::OkStatus();
  });
}

// y = mask * x / (1 - p): dL/dx = mask * g / (1 - p), which is a dropout of
// g on the same stream (same seed and step at run time: the same mask).
std::vector<Value> DropoutBackward(const GradContext& c) {
  return {BuildOp(*c.node.op, {c.grad},
                  Attrs().Float("p", c.attrs().GetFloat("p")).Int("stream", c.node.RandomStream()))};
}

const OpDef kDropout = {.name = "dropout",
                        .dot_label = "Dropout",
                        .infer = InferDropout,
                        .cpu = DropoutKernel,
                        .grad = DropoutBackward,
                        .inplace = true,
                        .random = true,
                        .onnx = OnnxTwin("Identity")};

}  // namespace

DAGRAD_REGISTER_OP(kDropout, dropout);

Value Dropout(Value x, double p) { return BuildOp(kDropout, {x}, Attrs().Float("p", p)); }

// The Dropout of ones on y's stream is 1 / (1 - p) (finite: p <= kMaxDropout)
// where y keeps, 0 where it drops.
Value DropoutKeepMask(Value y) {
  if (!y.ok()) return y;
  if (y.node().op != &kDropout) {
    return y.graph()->Error(absl::InvalidArgumentError(
        absl::StrCat("DropoutKeepMask: ", y.path(), " is not a Dropout's output")));
  }
  const Value scaled = BuildOp(kDropout, {OnesLike(y)}, Attrs()
                                                           .Float("p", y.node().attrs.GetFloat("p"))
                                                           .Int("stream", y.node().RandomStream()));
  return Greater(scaled, ZerosLike(y));
}

}  // namespace dagrad
