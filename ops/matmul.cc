// matmul and linear, each read top to bottom: shape inference, BLIS kernel,
// gradient rule, OpDef, builder. Both take float32, float64, and bfloat16
// operands multiplied with float32 accumulation (GemmBFloat16), the
// products of mixed-precision training.

#include "ops/matmul.h"

#include <memory>
#include <string>
#include <type_traits>

#include "engine/status_macros.h"
#include "ops/cpu/cpu_runtime.h"
#include "ops/cpu/internal/broadcast.h"
#include "ops/cpu/internal/cpu_isa.h"
#include "ops/cpu/internal/gemm.h"
#include "ops/cpu/internal/small_gemm.h"
#include "ops/cpu/parallel.h"
#include "ops/elementwise.h"
#include "ops/op_util.h"
#include "ops/reduce.h"
#include "ops/registry.h"
#include "ops/shape_ops.h"

namespace dagrad {
namespace {

// AsRows views v (..., n) as a matrix (rows, n); explicit sizes, not -1,
// so that n = 0 works too.
Value AsRows(Value v) {
  int64_t rows = 1;
  for (int i = 0; i + 1 < v.rank(); ++i) rows *= v.dim(i);
  return Reshape(v, {rows, v.dim(-1)});
}

// ProductGradient is the upstream gradient `g` (float32 or float64) as a
// product with operands of dtype `operands` takes it: rounded to bfloat16
// for bfloat16 operands, as autocast rounds grad_output, so the backward
// products are bfloat16 products too.
Value ProductGradient(Value g, DType operands) {
  return operands == DType::kBFloat16 ? Cast(g, DType::kBFloat16) : g;
}

// Multiply is one product C (m, n) = A·B + beta·C, with operands of In
// (float, double or BFloat16) read through (row, column) strides, into Out
// (In, or float for BFloat16) of leading dimension ldc.
template <typename In, typename Out>
absl::Status Multiply(int64_t m, int64_t n, int64_t k, const In* a, int64_t rsa, int64_t csa,
                      const In* b, int64_t rsb, int64_t csb, Out beta, Out* c, int64_t ldc,
                      bool one_thread = false) {
  if constexpr (std::is_same_v<In, BFloat16>) {
    return GemmBFloat16(m, n, k, 1.0f, a, rsa, csa, b, rsb, csb, beta, c, ldc, 1, one_thread);
  } else {
    return Gemm<In>(m, n, k, In(1), a, rsa, csa, b, rsb, csb, beta, c, ldc, 1, one_thread);
  }
}

}  // namespace

// ---- matmul -----------------------------------------------------------------

namespace {

// ProductDType is the output dtype the "dtype" attribute asks for: for
// bfloat16 operands float32 (the default) or bfloat16, else the operands'.
absl::StatusOr<DType> ProductDType(const InferContext& ctx) {
  const DType operands = ctx.in(0).dtype;
  const std::string asked = ctx.attrs.GetStr("dtype");
  const DType fallback = operands == DType::kBFloat16 ? DType::kFloat32 : operands;
  if (asked.empty()) return fallback;
  const std::optional<DType> out = DTypeFromName(asked);
  if (out == fallback || (operands == DType::kBFloat16 && out == DType::kBFloat16)) return *out;
  return absl::InvalidArgumentError(absl::StrCat(
      "output dtype ", asked, " for ", DTypeName(operands), " operands; ",
      operands == DType::kBFloat16 ? "float32 or bfloat16" : DTypeName(operands),
      " is what they give"));
}

absl::StatusOr<TensorType> InferMatMul(const InferContext& ctx) {
  const Shape& a = ctx.in(0).shape;
  const Shape& b = ctx.in(1).shape;
  if (a.rank() < 2 || b.rank() < 2) {
    return absl::InvalidArgumentError("both operands need rank >= 2");
  }
  if (ctx.in(0).dtype != DType::kBFloat16) {
    if (absl::Status st = RequireFloat(ctx, 0, "a"); !st.ok()) return st;
  }
  if (absl::Status st = RequireSameDType(ctx, 0, 1); !st.ok()) return st;
  DAGRAD_ASSIGN_OR_RETURN(const DType out_dtype, ProductDType(ctx));
  const bool ta = ctx.attrs.GetBool("transpose_a"), tb = ctx.attrs.GetBool("transpose_b");
  const MatrixDims ma = OperandDims(a, ta), mb = OperandDims(b, tb);
  if (ma.cols != mb.rows) {
    return absl::InvalidArgumentError(absl::StrCat(
        "contracting dims differ: ", ma.cols, " vs ", mb.rows,
        " (transpose_a=", ta, ", transpose_b=", tb, ")"));
  }
  auto batch = BroadcastShapes(BatchOf(a), BatchOf(b));
  if (!batch.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("batch dims: ", batch.status().message()));
  }
  Dims out = batch->dims();
  out.push_back(ma.rows);
  out.push_back(mb.cols);
  return TensorType{out_dtype, Shape(out)};
}

// Strides of an operand's op(matrix) as BLIS wants them: (row, col).
void MatrixStrides(const Shape& s, bool transpose, int64_t* rs, int64_t* cs) {
  const int64_t ld = s[s.rank() - 1];
  *rs = transpose ? 1 : ld;
  *cs = transpose ? ld : 1;
}

// MatMulProducts writes every product of `p` into c: In operands (float,
// double or BFloat16), Out results (In, or float for BFloat16).
template <typename In, typename Out>
absl::Status MatMulProducts(const MatMulProblem& p, const In* a, const In* b, Out* c) {
  const int64_t m = p.m, k = p.k, n = p.n, batches = p.batches;
  int64_t rsa, csa, rsb, csb;
  MatrixStrides(p.a, p.transpose_a, &rsa, &csa);
  MatrixStrides(p.b, p.transpose_b, &rsb, &csb);
  if (p.one_tall_product()) {
    return Multiply(m * batches, n, k, a, rsa, csa, b, rsb, csb, Out(0), c, n);
  }
  const Shape& batch = p.batch;
  const Dims stride_a = BroadcastStrides(BatchOf(p.a), batch);
  const Dims stride_b = BroadcastStrides(BatchOf(p.b), batch);
  const int64_t mat_a = p.matrix_a, mat_b = p.matrix_b;
  auto offsets = [&](int64_t i, int64_t* oa, int64_t* ob) {
    int64_t rem = i;
    *oa = *ob = 0;
    for (int d = batch.rank() - 1; d >= 0; --d) {
      const int64_t idx = rem % batch[d];
      rem /= batch[d];
      *oa += idx * stride_a[d];
      *ob += idx * stride_b[d];
    }
  };
  if (absl::Status st = ConfigureCpu(); !st.ok()) return st;
  const CpuKernels& kernels = **ActiveKernels();  // ok: ConfigureCpu checked it
  if constexpr (std::is_same_v<In, Out>) {
    if (IsSmallGemm(kernels, m, n, k)) {
      // Many small products: one per thread at a time, no BLIS.
      ParallelFor(batches, std::max<int64_t>(1, 32768 / (m * n * k + 1)),
                  [&](int64_t s, int64_t e) {
                    for (int64_t i = s; i < e; ++i) {
                      int64_t oa, ob;
                      offsets(i, &oa, &ob);
                      SmallGemm<In>(kernels, m, n, k, In(1), a + oa * mat_a, rsa, csa,
                                    b + ob * mat_b, rsb, csb, In(0), c + i * m * n, n);
                    }
                  });
      return absl::OkStatus();
    }
  }
  // Medium products, at least one per thread: each thread runs whole
  // products with single-threaded BLIS, which beats splitting every product
  // across the threads (and their synchronisation) at these sizes.
  const bool by_batch = NumThreads() > 1 && batches >= NumThreads() &&
                        m * n * k <= (int64_t{1} << 24);
  ParallelFor(by_batch ? batches : 1, 1, [&](int64_t s, int64_t e) {
    for (int64_t i = by_batch ? s : 0; i < (by_batch ? e : batches); ++i) {
      int64_t oa, ob;
      offsets(i, &oa, &ob);
      // Multiply fails only when ConfigureCpu does, which was checked above.
      (void)Multiply(m, n, k, a + oa * mat_a, rsa, csa, b + ob * mat_b, rsb, csb, Out(0),
                     c + i * m * n, n, /*one_thread=*/by_batch);
    }
  });
  return absl::OkStatus();
}

// MatMulTyped runs the products of `p` into c of Out: directly for a float
// output; for a bfloat16 one, into float32 that is rounded once at the end.
template <typename In, typename Out>
absl::Status MatMulTyped(const MatMulProblem& p, const In* a, const In* b, Out* c) {
  if constexpr (std::is_same_v<Out, BFloat16>) {
    const int64_t count = p.batches * p.m * p.n;
    const std::unique_ptr<float[]> wide = std::make_unique_for_overwrite<float[]>(count);
    DAGRAD_RETURN_IF_ERROR(MatMulProducts(p, a, b, wide.get()));
    const float* w = wide.get();
    ParallelFor(count, kElementGrain, [=](int64_t s, int64_t e) {
      for (int64_t i = s; i < e; ++i) c[i] = FloatToBFloat16(w[i]);
    });
    return absl::OkStatus();
  } else {
    return MatMulProducts(p, a, b, c);
  }
}

absl::Status MatMulKernel(const KernelContext& ctx) {
  return RunMatMul(ctx, [](const MatMulProblem& p, const auto* a, const auto* b, auto* c) {
    return MatMulTyped(p, a, b, c);
  });
}

// C = op(A)·op(B). Each gradient is itself a matmul with flags chosen so
// that no operand is transposed in memory:
//   dA = g·op(B)ᵀ (stored transposed when ta), dB = op(A)ᵀ·g (likewise tb).
// For bfloat16 operands g is rounded to bfloat16 first, and the products
// give float32, their gradients' dtype.
std::vector<Value> MatMulBackward(const GradContext& c) {
  const bool ta = c.attrs().GetBool("transpose_a"), tb = c.attrs().GetBool("transpose_b");
  Value a = c.inputs[0], b = c.inputs[1], g = ProductGradient(c.grad, a.dtype());
  Value da, db;
  if (c.needs[0]) {
    da = ta ? MatMul(b, g, {.transpose_a = tb, .transpose_b = true})
            : MatMul(g, b, {.transpose_a = false, .transpose_b = !tb});
  }
  if (c.needs[1]) {
    if (b.rank() == 2 && a.rank() > 2 && !ta) {
      // b was shared by every matrix of a: fold a's batch into rows so dB is
      // one product instead of a batch of them summed afterwards.
      a = AsRows(a);
      g = AsRows(g);
    }
    db = tb ? MatMul(g, a, {.transpose_a = true, .transpose_b = ta})
            : MatMul(a, g, {.transpose_a = !ta, .transpose_b = false});
  }
  return {da, db};
}

const OpDef kMatMul = {.name = "matmul", .dot_label = "MatMul", .infer = InferMatMul,
                       .cpu = MatMulKernel, .grad = MatMulBackward,
                       .reduced_floats = DTypeBit(DType::kBFloat16),
                       .onnx = kOnnxExporter};

}  // namespace

DAGRAD_REGISTER_OP(kMatMul, matmul);

Value MatMul(Value a, Value b, MatMulOptions o) {
  Attrs attrs = Attrs().Bool("transpose_a", o.transpose_a).Bool("transpose_b", o.transpose_b);
  if (o.output.has_value()) attrs.Str("dtype", std::string(DTypeName(*o.output)));
  return BuildOp(kMatMul, {a, b}, std::move(attrs));
}

// ---- linear -----------------------------------------------------------------

namespace {

absl::StatusOr<TensorType> InferLinear(const InferContext& ctx) {
  const Shape& x = ctx.in(0).shape;
  const Shape& w = ctx.in(1).shape;
  const bool bf16 = ctx.in(0).dtype == DType::kBFloat16;
  if (!bf16) {
    if (absl::Status st = RequireFloat(ctx, 0, "x"); !st.ok()) return st;
  }
  if (absl::Status st = RequireSameDType(ctx, 0, 1); !st.ok()) return st;
  // A bfloat16 product gives float32, and its bias is added in float32.
  const DType out_dtype = bf16 ? DType::kFloat32 : ctx.in(0).dtype;
  if (w.rank() != 2) return absl::InvalidArgumentError("weight must be (out, in)");
  if (x.rank() < 1 || x[x.rank() - 1] != w[1]) {
    return absl::InvalidArgumentError(absl::StrCat(
        "x's last dim must equal the weight's in-features ", w[1]));
  }
  if (ctx.has(2)) {
    if (ctx.in(2).dtype != out_dtype) {
      return absl::InvalidArgumentError(absl::StrCat("bias must be ", DTypeName(out_dtype),
                                                     ", got ", DTypeName(ctx.in(2).dtype)));
    }
    if (ctx.in(2).shape != Shape({w[0]})) {
      return absl::InvalidArgumentError(absl::StrCat("bias must be (", w[0], ",)"));
    }
  }
  Dims out = x.dims();
  out.back() = w[0];
  return TensorType{out_dtype, Shape(out)};
}

// In: the operands' element type; Out: the output's and the bias's (float
// for BFloat16 operands).
template <typename In, typename Out>
absl::Status LinearTyped(const KernelContext& ctx) {
  const LinearDims dims = LinearDimsOf(ctx);
  const int64_t rows = dims.rows, in = dims.in, out = dims.out;
  Out* y = ctx.output.as<Out>();
  Out beta = Out(0);
  if (ctx.has(2)) {
    const Out* bias = ctx.in(2).as<Out>();
    ParallelFor(rows, 64, [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) std::copy(bias, bias + out, y + r * out);
    });
    beta = Out(1);
  }
  if (rows == 0 || out == 0) return absl::OkStatus();
  // y (rows, out) = x (rows, in) · wᵀ, wᵀ read with strides (1, in).
  return Multiply(rows, out, in, ctx.in(0).as<In>(), in, 1, ctx.in(1).as<In>(), 1, in, beta, y,
                  out);
}

absl::Status LinearKernel(const KernelContext& ctx) {
  if (ctx.in(0).dtype == DType::kBFloat16) return LinearTyped<BFloat16, float>(ctx);
  return DispatchFloat(ctx.output.dtype, [&](auto tag) {
    using T = decltype(tag);
    return LinearTyped<T, T>(ctx);
  });
}

// y = x·wᵀ + b:  dx = g·w,  dw = gᵀ·x over all rows,  db = Σ_rows g.
// Every leading axis of x (none, for a 1-D x) is a row: dx is one product
// (rows, out)·(out, in), reshaped back to x's shape. For bfloat16 x and w
// the products take g rounded to bfloat16 and give float32; db sums the
// float32 g.
std::vector<Value> LinearBackward(const GradContext& c) {
  Value x = c.inputs[0], w = c.inputs[1], g = ProductGradient(c.grad, x.dtype());
  Value dx;
  if (c.needs[0]) {
    dx = Reshape(MatMul(AsRows(g), w),
                 std::vector<int64_t>(x.shape().dims().begin(), x.shape().dims().end()));
  }
  Value dw, db;
  if (c.needs[1]) {
    dw = MatMul(AsRows(g), AsRows(x), {.transpose_a = true});
  }
  if (c.needs.size() > 2 && c.needs[2]) db = SumTo(c.grad, c.inputs[2].shape());
  return {dx, dw, db};
}

const OpDef kLinear = {.name = "linear", .dot_label = "Linear", .infer = InferLinear,
                       .cpu = LinearKernel, .grad = LinearBackward,
                       .reduced_floats = DTypeBit(DType::kBFloat16),
                       .onnx = kOnnxExporter};

}  // namespace

DAGRAD_REGISTER_OP(kLinear, linear);

Value Linear(Value x, Value w, Value b) {
  return BuildOp(kLinear, {x, w, b}, Attrs(), /*optional=*/0b100);
}

}  // namespace dagrad
