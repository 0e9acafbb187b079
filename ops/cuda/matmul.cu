// CUDA kernels of the matmul family (ops/matmul.cc): matmul and linear
// through cuBLAS (64-bit-size API), with transposed operands passed as
// cuBLAS transposes, never copied. Bfloat16 operands go through the typed
// gemms (cublasGemmEx and its batched forms) with CUDA_R_16BF inputs and
// float32 accumulation (CUBLAS_COMPUTE_32F), into float32 or bfloat16.
//
// cuBLAS is column-major: a row-major (r, c) matrix is a column-major
// (c, r) one with leading dimension c. So row-major C = op(A)·op(B) is
// computed as column-major Cᵀ = op(B)ᵀ·op(A)ᵀ, i.e. gemm with the operands
// swapped, M = n, N = m, and each operand's leading dimension its stored
// row length.
//
// Batch dims broadcast as on the CPU: a rank-2 untransposed `b` under a
// batched `a` is one tall product; operands whose batch is either whole or
// fully broadcast use a strided batch (stride 0 when broadcast); any other
// broadcast builds per-matrix pointer arrays on the device.

#include <type_traits>

#include "engine/bfloat16.h"
#include "ops/cuda/kernel_util.cuh"
#include "ops/cuda/registry.h"
#include "ops/op_util.h"

namespace dagrad {
namespace {

using cuda::GridFor;
using cuda::kThreads;

// Blas<In, Out> is cuBLAS's gemm for In operands and Out results, with
// Scalar the type of alpha and beta: sgemm and dgemm, or for bfloat16
// operands the typed gemms with float32 accumulation (CUBLAS_COMPUTE_32F)
// into float32 or bfloat16.
template <typename In, typename Out>
struct Blas;

template <>
struct Blas<float, float> {
  using Scalar = float;
  static auto Gemm(const CublasApi& b) { return b.sgemm; }
  static auto GemmStridedBatched(const CublasApi& b) { return b.sgemm_strided_batched; }
  static auto GemmBatched(const CublasApi& b) { return b.sgemm_batched; }
};

template <>
struct Blas<double, double> {
  using Scalar = double;
  static auto Gemm(const CublasApi& b) { return b.dgemm; }
  static auto GemmStridedBatched(const CublasApi& b) { return b.dgemm_strided_batched; }
  static auto GemmBatched(const CublasApi& b) { return b.dgemm_batched; }
};

template <typename Out>
struct Blas<BFloat16, Out> {
  using Scalar = float;
  static constexpr cudaDataType kIn = CUDA_R_16BF;
  static constexpr cudaDataType kOut = std::is_same_v<Out, float> ? CUDA_R_32F : CUDA_R_16BF;
  static auto Gemm(const CublasApi& b) {
    return [&b](cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int64_t m,
                int64_t n, int64_t k, const float* alpha, const BFloat16* x, int64_t ldx,
                const BFloat16* y, int64_t ldy, const float* beta, Out* z, int64_t ldz) {
      return b.gemm_ex(h, ta, tb, m, n, k, alpha, x, kIn, ldx, y, kIn, ldy, beta, z, kOut, ldz,
                       CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    };
  }
  static auto GemmStridedBatched(const CublasApi& b) {
    return [&b](cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int64_t m,
                int64_t n, int64_t k, const float* alpha, const BFloat16* x, int64_t ldx,
                long long sx, const BFloat16* y, int64_t ldy, long long sy, const float* beta,
                Out* z, int64_t ldz, long long sz, int64_t batches) {
      return b.gemm_strided_batched_ex(h, ta, tb, m, n, k, alpha, x, kIn, ldx, sx, y, kIn, ldy,
                                       sy, beta, z, kOut, ldz, sz, batches, CUBLAS_COMPUTE_32F,
                                       CUBLAS_GEMM_DEFAULT);
    };
  }
  static auto GemmBatched(const CublasApi& b) {
    return [&b](cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int64_t m,
                int64_t n, int64_t k, const float* alpha, const BFloat16* const* x, int64_t ldx,
                const BFloat16* const* y, int64_t ldy, const float* beta, Out* const* z,
                int64_t ldz, int64_t batches) {
      return b.gemm_batched_ex(h, ta, tb, m, n, k, alpha,
                               reinterpret_cast<const void* const*>(x), kIn, ldx,
                               reinterpret_cast<const void* const*>(y), kIn, ldy, beta,
                               reinterpret_cast<void* const*>(z), kOut, ldz, batches,
                               CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    };
  }
};

// BatchKind says how an operand's matrices map to the output's batch.
enum class BatchKind { kWhole, kShared, kBroadcast };

BatchKind KindOf(const Shape& operand_batch, const Shape& batch) {
  const int64_t count = operand_batch.num_elements();
  if (count == 1) return BatchKind::kShared;
  return count == batch.num_elements() ? BatchKind::kWhole : BatchKind::kBroadcast;
}

// Pointers of every batch entry's matrices, for cublas*gemmBatched.
template <typename In, typename Out>
__global__ void BatchPointersKernel(const In* a, const In* b, Out* c, int64_t batches,
                                    cuda::Strided<2> s, int64_t mat_a, int64_t mat_b,
                                    int64_t mat_c, const In** pa, const In** pb, Out** pc) {
  DAGRAD_CUDA_LOOP(i, batches) {
    int64_t off[2];
    s.Offsets(i, off);
    pa[i] = a + off[0] * mat_a;
    pb[i] = b + off[1] * mat_b;
    pc[i] = c + i * mat_c;
  }
}

template <typename In, typename Out>
absl::Status MatMulTyped(const KernelContext& ctx, const MatMulProblem& p, const In* a,
                         const In* b, Out* c) {
  using B = Blas<In, Out>;
  const int64_t m = p.m, k = p.k, n = p.n, batches = p.batches;
  const Shape& batch = p.batch;
  CudaContext& cuda = CudaContextOf(ctx);
  if (k == 0) {
    DAGRAD_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(c, 0, ctx.output.nbytes(), cuda.stream()));
    return absl::OkStatus();
  }
  const cublasOperation_t op_a = p.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = p.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int64_t lda = p.a[p.a.rank() - 1], ldb = p.b[p.b.rank() - 1];
  const typename B::Scalar one = 1, zero = 0;
  cublasHandle_t h = cuda.cublas();
  const CublasApi& blas = cuda.blas();
  if (p.one_tall_product()) {
    DAGRAD_CUBLAS_RETURN_IF_ERROR(B::Gemm(blas)(h, op_b, CUBLAS_OP_N, n, m * batches, k,
                                                      &one, b, ldb, a, lda, &zero, c, n));
    return absl::OkStatus();
  }
  const int64_t mat_a = p.matrix_a, mat_b = p.matrix_b;
  const BatchKind kind_a = KindOf(BatchOf(p.a), batch), kind_b = KindOf(BatchOf(p.b), batch);
  if (kind_a != BatchKind::kBroadcast && kind_b != BatchKind::kBroadcast) {
    DAGRAD_CUBLAS_RETURN_IF_ERROR(B::GemmStridedBatched(blas)(
        h, op_b, op_a, n, m, k, &one, b, ldb, kind_b == BatchKind::kWhole ? mat_b : 0, a, lda,
        kind_a == BatchKind::kWhole ? mat_a : 0, &zero, c, n, m * n, batches));
    return absl::OkStatus();
  }
  DAGRAD_ASSIGN_OR_RETURN(const cuda::Strided<2> s,
                          cuda::MakeStrided<2>(batch, {BroadcastStrides(BatchOf(p.a), batch),
                                                       BroadcastStrides(BatchOf(p.b), batch)}));
  DAGRAD_ASSIGN_OR_RETURN(CudaBuffer pointers, cuda.Scratch(3 * batches * sizeof(void*)));
  const In** pa = pointers.as<const In*>();
  const In** pb = pa + batches;
  Out** pc = static_cast<Out**>(static_cast<void*>(pa + 2 * batches));
  BatchPointersKernel<<<GridFor(batches), kThreads, 0, cuda.stream()>>>(
      a, b, c, batches, s, mat_a, mat_b, m * n, pa, pb, pc);
  DAGRAD_RETURN_IF_ERROR(CheckLaunch("BatchPointersKernel"));
  DAGRAD_CUBLAS_RETURN_IF_ERROR(B::GemmBatched(blas)(h, op_b, op_a, n, m, k, &one, pb,
                                                           ldb, pa, lda, &zero, pc, n, batches));
  return absl::OkStatus();
}

absl::Status MatMulKernel(const KernelContext& ctx) {
  return RunMatMul(ctx, [&](const MatMulProblem& p, const auto* a, const auto* b, auto* c) {
    return MatMulTyped(ctx, p, a, b, c);
  });
}

// ---- linear ------------------------------------------------------------------

template <typename T>
__global__ void BiasRowsKernel(const T* bias, T* y, int64_t n, int64_t out) {
  DAGRAD_CUDA_LOOP(i, n) y[i] = bias[i % out];
}

// y (rows, out) = x (rows, in) · wᵀ + b: column-major yᵀ = w · xᵀ, where w
// is the transpose of its stored (in, out) column-major view and xᵀ is x's.
// In: the operands' element type; Out: the output's and the bias's.
template <typename In, typename Out>
absl::Status LinearTyped(const KernelContext& ctx) {
  using B = Blas<In, Out>;
  const LinearDims dims = LinearDimsOf(ctx);
  const int64_t rows = dims.rows, in = dims.in, out = dims.out;
  Out* y = ctx.output.as<Out>();
  CudaContext& cuda = CudaContextOf(ctx);
  if (rows == 0 || out == 0) return absl::OkStatus();
  typename B::Scalar beta = 0;
  if (ctx.has(2)) {
    BiasRowsKernel<<<GridFor(rows * out), kThreads, 0, cuda.stream()>>>(ctx.in(2).as<Out>(), y,
                                                                       rows * out, out);
    DAGRAD_RETURN_IF_ERROR(CheckLaunch("BiasRowsKernel"));
    beta = 1;
  } else if (in == 0) {
    DAGRAD_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(y, 0, ctx.output.nbytes(), cuda.stream()));
  }
  if (in == 0) return absl::OkStatus();
  const typename B::Scalar one = 1;
  DAGRAD_CUBLAS_RETURN_IF_ERROR(B::Gemm(cuda.blas())(
      cuda.cublas(), CUBLAS_OP_T, CUBLAS_OP_N, out, rows, in, &one, ctx.in(1).as<In>(), in,
      ctx.in(0).as<In>(), in, &beta, y, out));
  return absl::OkStatus();
}

absl::Status LinearKernel(const KernelContext& ctx) {
  if (ctx.in(0).dtype == DType::kBFloat16) return LinearTyped<BFloat16, float>(ctx);
  return DispatchFloat(ctx.output.dtype, [&](auto tag) {
    using T = decltype(tag);
    return LinearTyped<T, T>(ctx);
  });
}

}  // namespace

DAGRAD_CUDA_KERNEL(matmul, MatMulKernel);
DAGRAD_CUDA_KERNEL(linear, LinearKernel);

}  // namespace dagrad
