// ops/op_util.h
//
// Small helpers shared by op definitions: dtype dispatch for kernels, and
// the argument checks shape inference repeats.

#ifndef DAGRAD_OPS_OP_UTIL_H_
#define DAGRAD_OPS_OP_UTIL_H_

#include <cstdint>
#include <initializer_list>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "engine/op.h"

namespace dagrad {

// DispatchFloat calls f(T{}) with T = float or double per `dtype`;
// Unimplemented for other dtypes.
template <typename F>
absl::Status DispatchFloat(DType dtype, F&& f) {
  switch (dtype) {
    case DType::kFloat32: return f(float{});
    case DType::kFloat64: return f(double{});
    default:
      return absl::UnimplementedError(
          absl::StrCat("kernel has no ", DTypeName(dtype), " variant"));
  }
}

// DispatchAny calls f(T{}) for any dtype that kernels compute in (bool as
// bool): all but the 16-bit floats, which only the ops that take them see
// (OpDef::reduced_floats; DispatchAll), so they are Unimplemented here.
template <typename F>
absl::Status DispatchAny(DType dtype, F&& f) {
  switch (dtype) {
    case DType::kFloat32: return f(float{});
    case DType::kFloat64: return f(double{});
    case DType::kInt32: return f(int32_t{});
    case DType::kInt64: return f(int64_t{});
    case DType::kBool: return f(bool{});
    case DType::kBFloat16:
    case DType::kFloat16:
      break;
  }
  return absl::UnimplementedError(
      absl::StrCat("kernel has no ", DTypeName(dtype), " variant"));
}

// DispatchAll is DispatchAny with the 16-bit floats too (BFloat16 and
// Float16, engine/bfloat16.h), for kernels that convert every dtype (cast).
template <typename F>
absl::Status DispatchAll(DType dtype, F&& f) {
  switch (dtype) {
    case DType::kBFloat16: return f(BFloat16{});
    case DType::kFloat16: return f(Float16{});
    default: return DispatchAny(dtype, f);
  }
}

// DispatchBySize calls f(U{}) with U the unsigned integer of the dtype's
// element size (uint8_t, uint16_t, uint32_t or uint64_t): for kernels that
// only move elements (layout ops), on both backends, for every dtype.
template <typename F>
absl::Status DispatchBySize(DType dtype, F&& f) {
  switch (SizeOf(dtype)) {
    case 1: return f(uint8_t{});
    case 2: return f(uint16_t{});
    case 4: return f(uint32_t{});
    case 8: return f(uint64_t{});
  }
  return absl::InternalError(absl::StrCat("no copy for ", SizeOf(dtype), "-byte elements"));
}

// DispatchNumeric is DispatchAny for kernels with no bool variant: shape
// inference rejects bool first, so a bool reaching it is Internal
// (`bool_message`).
template <typename F>
absl::Status DispatchNumeric(DType dtype, const char* bool_message, F&& f) {
  return DispatchAny(dtype, [&](auto tag) {
    if constexpr (std::is_same_v<decltype(tag), bool>) {
      return absl::InternalError(bool_message);
    } else {
      return f(tag);
    }
  });
}

// DispatchIndex calls f(T{}) for int32 or int64.
template <typename F>
absl::Status DispatchIndex(DType dtype, F&& f) {
  switch (dtype) {
    case DType::kInt32: return f(int32_t{});
    case DType::kInt64: return f(int64_t{});
    default:
      return absl::UnimplementedError(
          absl::StrCat("index kernel has no ", DTypeName(dtype), " variant"));
  }
}

// CheckReducedFloats returns InvalidArgument when `op` would be given, or
// would produce, a 16-bit float (bfloat16, float16) that its OpDef does
// not take (OpDef::reduced_floats), naming the op, the input and the ops
// that do take it; BuildOp calls it for every op, so such an op is refused
// when the graph is built, never when it runs.
//
//   absl::Status st = CheckReducedFloats(*FindOp("tanh"), {x16}, Attrs());  // InvalidArgument
absl::Status CheckReducedFloats(const OpDef& op, absl::Span<const Value> inputs,
                                const Attrs& attrs);

// RequireFloat returns InvalidArgument unless input `i` is float32/float64.
absl::Status RequireFloat(const InferContext& ctx, int i, const char* what);
// RequireIndex returns InvalidArgument unless input `i` is int32/int64.
absl::Status RequireIndex(const InferContext& ctx, int i, const char* what);
// RequireSameDType returns InvalidArgument unless inputs i and j agree.
absl::Status RequireSameDType(const InferContext& ctx, int i, int j);

// NormalizeAxes maps the "axes" attribute (possibly negative; empty means
// all) to sorted unique axes in [0, rank); InvalidArgument when one is out
// of range or repeated.
absl::StatusOr<std::vector<int>> NormalizeAxes(const std::vector<int64_t>& axes,
                                               int rank);

// ---- Shape helpers shared by the CPU kernels and their CUDA twins. ----

// FormatIndex returns the multi-index of flat element `flat` of `shape`,
// as "i, j, k", for error messages.
std::string FormatIndex(int64_t flat, const Shape& shape);

// Rows is the (rows, d) view of a (..., d) tensor.
struct Rows {
  int64_t rows, d;
};
Rows RowsOf(const Shape& shape);

// MatrixDims are a matmul operand's (rows, cols) after its optional
// transposition; BatchOf is its batch shape (all but the last two axes).
struct MatrixDims {
  int64_t rows, cols;
};
MatrixDims OperandDims(const Shape& s, bool transpose);
Shape BatchOf(const Shape& s);

// MatMulProblem is a matmul node as both backends' kernels read it:
// (m, k) x (k, n) products, one per element of the output's batch.
struct MatMulProblem {
  const Shape& a;  // the operands' shapes, as stored
  const Shape& b;
  bool transpose_a, transpose_b;
  int64_t m, k, n;
  Shape batch;                  // the output's batch shape
  int64_t batches;              // its element count
  int64_t matrix_a, matrix_b;   // elements of one stored matrix of a and b
  bool empty() const { return m == 0 || n == 0 || batches == 0; }
  // one_tall_product: b is one matrix and a is not transposed, so every
  // batch's product is one (batches * m, k) x (k, n) product.
  bool one_tall_product() const { return b.rank() == 2 && !transpose_a; }
};
MatMulProblem MatMulProblemOf(const KernelContext& ctx);

// RunMatMul is both backends' matmul kernel prologue: it calls run(problem,
// a, b, c) with the operands' data as their element type (float, double or
// BFloat16) and the output's as its own (the operands', or float or
// BFloat16 for BFloat16 operands), unless the product is empty (then there
// is nothing to write).
template <typename Run>
absl::Status RunMatMul(const KernelContext& ctx, Run&& run) {
  const MatMulProblem p = MatMulProblemOf(ctx);
  if (p.empty()) return absl::OkStatus();
  if (ctx.in(0).dtype == DType::kBFloat16) {
    const BFloat16* a = ctx.in(0).as<BFloat16>();
    const BFloat16* b = ctx.in(1).as<BFloat16>();
    if (ctx.output.dtype == DType::kBFloat16) return run(p, a, b, ctx.output.as<BFloat16>());
    return run(p, a, b, ctx.output.as<float>());
  }
  return DispatchFloat(ctx.output.dtype, [&](auto tag) {
    using T = decltype(tag);
    return run(p, ctx.in(0).as<T>(), ctx.in(1).as<T>(), ctx.output.as<T>());
  });
}

// LinearDims is a linear node as both backends' kernels read it:
// y (rows, out) = x (rows, in) · wᵀ, rows counted from y when in = 0.
struct LinearDims {
  int64_t rows, in, out;
};
LinearDims LinearDimsOf(const KernelContext& ctx);

// SliceSpec is a slice's attributes resolved against its input: Python-
// style bounds (negative from the end, clamped), `count` elements kept.
struct SliceSpec {
  int axis;
  int64_t start, count, step;
};
// ResolveSlice returns InvalidArgument for an axis out of range or step < 1;
// `count` is SliceLength's, Python's, for any int64 bounds.
absl::StatusOr<SliceSpec> ResolveSlice(const Attrs& attrs, const Shape& input);

// BuildOp is how op builders add their node: it returns the first error
// among `inputs`, records an error when an input outside `optional` (bit i:
// input i may be null) is null or the inputs come from different graphs,
// and otherwise adds the node. All-null inputs give a null Value.
Value BuildOp(const OpDef& op, absl::Span<const Value> inputs,
              Attrs attrs = Attrs(), uint32_t optional = 0);

// BuildOpIn is BuildOp for ops whose inputs may all be absent (fill,
// arange): the node is added to `g`.
Value BuildOpIn(Graph& g, const OpDef& op, absl::Span<const Value> inputs,
                Attrs attrs = Attrs(), uint32_t optional = 0);

// MustBe is InvalidArgument "<field> must be <range>, got <value>": a
// setting outside its range (ValidateOptimizerOptions, ValidateLrSchedule).
//
//   absl::Status st = MustBe("beta1", "in [0, 1)", 1.5);  // "beta1 must be in [0, 1), got 1.5"
absl::Status MustBe(absl::string_view field, absl::string_view range, double value);

// ScalarLike returns a 0-d constant holding `v` in like's graph: float64
// when `like` is float64, float32 otherwise.
Value ScalarLike(Value like, double v);

}  // namespace dagrad

#endif  // DAGRAD_OPS_OP_UTIL_H_
