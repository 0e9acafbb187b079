// sum_of_squares, in one place: shape inference, CPU kernel, gradient rule,
// OpDef, builder. It is an OpDef rather than a builder over Mul, Sum, Cast
// and Add for speed: the composed gradient norm is three kernels per
// parameter and a serial chain of float64 adds, where this is one pass
// over every gradient (one launch on CUDA), in an order fixed by
// ops/math/sum_of_squares_math.h.

#include "ops/sum_of_squares.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/status_macros.h"
#include "ops/cpu/parallel.h"
#include "ops/elementwise.h"
#include "ops/math/sum_of_squares_math.h"
#include "ops/op_util.h"
#include "ops/registry.h"

namespace dagrad {
namespace {

absl::StatusOr<TensorType> InferSumOfSquares(const InferContext& ctx) {
  if (ctx.inputs.empty()) return absl::InvalidArgumentError("needs at least one input");
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    DAGRAD_RETURN_IF_ERROR(RequireFloat(ctx, static_cast<int>(i), "input"));
  }
  // Copied from a constant: GCC 12 warns (-Wmaybe-uninitialized, a false
  // positive of absl's InlinedVector) when it sees an empty Shape moved.
  static const TensorType kScalarFloat64{DType::kFloat64, Shape()};
  return kScalarFloat64;
}

// LaneTreeSum adds value(0), ..., value(n - 1) in the order of
// ops/math/sum_of_squares_math.h: lane l takes values l, l + kSquaresLanes, ...;
// the lanes are folded by the tree. A row of kSquaresLanes values at a
// time, so the inner loop is contiguous and vectorises.
template <typename F>
double LaneTreeSum(int64_t n, F value) {
  double lanes[kSquaresLanes] = {};
  for (int64_t row = 0; row < n; row += kSquaresLanes) {
    const int64_t m = std::min<int64_t>(kSquaresLanes, n - row);
    for (int64_t l = 0; l < m; ++l) lanes[l] += value(row + l);
  }
  for (int width = kSquaresLanes / 2; width > 0; width /= 2) {
    for (int l = 0; l < width; ++l) FoldLanes(lanes, width, l);
  }
  return lanes[0];
}

// ChunkSum is chunk `chunk` of the sum of squares of x (n elements of T).
template <typename T>
double ChunkSum(const void* x, int64_t n, int64_t chunk) {
  const int64_t begin = chunk * kSquaresChunk;
  const T* p = static_cast<const T*>(x) + begin;
  return LaneTreeSum(std::min(kSquaresChunk, n - begin),
                     [p](int64_t i) { return SquareOf(p[i]); });
}

// A chunk of the inputs, numbered input by input.
struct Chunk {
  double (*sum)(const void*, int64_t, int64_t);  // ChunkSum<T> of its input's dtype
  const TensorRef* input;
  int64_t index;
};

absl::StatusOr<std::vector<Chunk>> ChunksOf(const KernelContext& ctx) {
  std::vector<Chunk> chunks;
  for (const TensorRef& x : ctx.inputs) {
    double (*sum)(const void*, int64_t, int64_t) = nullptr;
    DAGRAD_RETURN_IF_ERROR(DispatchFloat(x.dtype, [&](auto tag) {
      sum = ChunkSum<decltype(tag)>;
      return absl::OkStatus();
    }));
    for (int64_t c = 0; c < SquaresChunks(x.num_elements()); ++c) chunks.push_back({sum, &x, c});
  }
  return chunks;
}

// Threads split the chunks, each taking about kElementGrain elements or
// more; every chunk's sum lands in its own slot, so the total does not
// depend on the split.
absl::Status SumOfSquaresKernel(const KernelContext& ctx) {
  DAGRAD_ASSIGN_OR_RETURN(const std::vector<Chunk> chunks, ChunksOf(ctx));
  const int64_t count = static_cast<int64_t>(chunks.size());
  int64_t elements = 0;
  for (const TensorRef& x : ctx.inputs) elements += x.num_elements();
  std::vector<double> sums(chunks.size());
  const int64_t grain =
      std::max<int64_t>(1, count * kElementGrain / std::max<int64_t>(elements, 1));
  ParallelFor(count, grain, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      const Chunk& k = chunks[c];
      sums[c] = k.sum(k.input->data, k.input->num_elements(), k.index);
    }
  });
  *ctx.output.as<double>() = LaneTreeSum(count, [&](int64_t c) { return sums[c]; });
  return absl::OkStatus();
}

// d/dx sum(x^2) = 2 x: each input's gradient is 2 x g, computed in float64
// (g is a float64 scalar, which may not fit the input's dtype: the norm's
// 1 / (2 sqrt(s)) of a tiny s) and then cast to the input's dtype.
std::vector<Value> SumOfSquaresBackward(const GradContext& c) {
  std::vector<Value> grads;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const Value& x = c.inputs[i];
    grads.push_back(c.needs[i] ? Cast(Cast(x, DType::kFloat64) * (c.grad * 2.0), x.dtype())
                               : Value());
  }
  return grads;
}

const OpDef kSumOfSquares = {.name = "sum_of_squares",
                             .dot_label = "SumOfSquares",
                             .infer = InferSumOfSquares,
                             .cpu = SumOfSquaresKernel,
                             .grad = SumOfSquaresBackward,
                             .onnx = NoOnnx("the gradient norm of a training step's clipping")};

}  // namespace

DAGRAD_REGISTER_OP(kSumOfSquares, sum_of_squares);

Value SumOfSquares(const std::vector<Value>& xs) { return BuildOp(kSumOfSquares, xs); }

}  // namespace dagrad
