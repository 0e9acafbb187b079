// CUDA kernels of the sampling ops (ops/sampling.cc): one thread per row,
// with the CPU's per-row rules (ops/math/sampling_math.h), so the results, the
// draws included, are the CPU's bit for bit. TopK selects its k elements
// in k passes over the row (O(n k) per row: sampling's rows are short, its
// k small).

#include "absl/strings/str_cat.h"
#include "ops/cuda/kernel_util.cuh"
#include "ops/cuda/registry.h"
#include "ops/math/sampling_math.h"
#include "ops/op_util.h"
#include "ops/sampling.h"

namespace dagrad {
namespace {

using cuda::GridFor;
using cuda::kThreads;

template <typename T>
__global__ void ArgMaxImpl(const T* x, int64_t* y, AxisRows r) {
  DAGRAD_CUDA_LOOP(row, r.outer * r.inner) {
    const int64_t o = row / r.inner, i = row % r.inner;
    y[row] = ArgMaxRow(x + o * r.n * r.inner + i, r.n, r.inner);
  }
}

absl::Status ArgMaxKernel(const KernelContext& ctx) {
  auto r = AxisRowsOf(*ctx.in(0).shape, ctx.attrs().GetInt("axis"));
  if (!r.ok()) return r.status();
  return DispatchNumeric(
      ctx.in(0).dtype, "a sampling op on bool", [&](auto tag) {
        using T = decltype(tag);
        const int64_t rows = r->outer * r->inner;
        if (rows == 0) return absl::OkStatus();
        ArgMaxImpl<<<GridFor(rows), kThreads, 0, CudaContextOf(ctx).stream()>>>(
            ctx.in(0).as<T>(), ctx.output.as<int64_t>(), *r);
        return CheckLaunch("ArgMaxImpl");
      });
}

// Each pass takes the first element, in SortsBefore's order, of those
// after the previous pick. Writes values or indices (the other is null).
template <typename T>
__global__ void TopKImpl(const T* x, T* values, int64_t* indices, AxisRows r,
                         int64_t k) {
  DAGRAD_CUDA_LOOP(row, r.outer * r.inner) {
    const int64_t o = row / r.inner, i = row % r.inner;
    const T* in = x + o * r.n * r.inner + i;
    const int64_t base = o * k * r.inner + i;
    int64_t prev = -1;
    for (int64_t j = 0; j < k; ++j) {
      int64_t best = -1;
      for (int64_t q = 0; q < r.n; ++q) {
        if (prev >= 0 &&
            !SortsBefore(in[prev * r.inner], prev, in[q * r.inner], q))
          continue;
        if (best < 0 ||
            SortsBefore(in[q * r.inner], q, in[best * r.inner], best))
          best = q;
      }
      if (values) values[base + j * r.inner] = in[best * r.inner];
      if (indices) indices[base + j * r.inner] = best;
      prev = best;
    }
  }
}

absl::Status TopKKernel(const KernelContext& ctx, bool want_indices) {
  auto r = AxisRowsOf(*ctx.in(0).shape, ctx.attrs().GetInt("axis"));
  if (!r.ok()) return r.status();
  const int64_t k = ctx.attrs().GetInt("k");
  return DispatchNumeric(
      ctx.in(0).dtype, "a sampling op on bool", [&](auto tag) {
        using T = decltype(tag);
        const int64_t rows = r->outer * r->inner;
        if (rows == 0 || k == 0) return absl::OkStatus();
        TopKImpl<<<GridFor(rows), kThreads, 0, CudaContextOf(ctx).stream()>>>(
            ctx.in(0).as<T>(), want_indices ? nullptr : ctx.output.as<T>(),
            want_indices ? ctx.output.as<int64_t>() : nullptr, *r, k);
        return CheckLaunch("TopKImpl");
      });
}
absl::Status TopKValuesKernel(const KernelContext& ctx) {
  return TopKKernel(ctx, false);
}
absl::Status TopKIndicesKernel(const KernelContext& ctx) {
  return TopKKernel(ctx, true);
}

// A row that is no distribution is reported at its index (and gets 0). The
// step is read from device memory (CudaContext::run_step), as dropout's.
template <typename T>
__global__ void MultinomialImpl(const T* p, int64_t* y, int64_t rows, int64_t d,
                                uint64_t seed, const uint64_t* step,
                                DeviceErrorRecord* record, int site) {
  DAGRAD_CUDA_LOOP(row, rows) {
    const double u = MultinomialU(seed, kMultinomialStream,
                                  static_cast<uint32_t>(*step), row);
    const int64_t drawn = MultinomialRow(p + row * d, d, u);
    if (drawn < 0) cuda::ReportBadElement(record, site, row);
    y[row] = drawn < 0 ? 0 : drawn;
  }
}

absl::Status MultinomialKernel(const KernelContext& ctx) {
  const Rows r = RowsOf(*ctx.in(0).shape);
  if (r.rows == 0) return absl::OkStatus();
  CudaContext& cuda = CudaContextOf(ctx);
  const int site = cuda.AddErrorSite(ctx.node, [](const DeviceErrorDetail& d) {
    return absl::StrCat(
        "row ", d.position,
        " of probs is no distribution: its values must be finite and >= 0, "
        "with a positive sum");
  });
  return DispatchFloat(ctx.in(0).dtype, [&](auto tag) {
    using T = decltype(tag);
    MultinomialImpl<<<GridFor(r.rows), kThreads, 0, cuda.stream()>>>(
        ctx.in(0).as<T>(), ctx.output.as<int64_t>(), r.rows, r.d,
        static_cast<uint64_t>(ctx.attrs().GetInt("seed")), cuda.run_step(),
        cuda.error_record(), site);
    return CheckLaunch("MultinomialImpl");
  });
}

}  // namespace

DAGRAD_CUDA_KERNEL(argmax, ArgMaxKernel);
DAGRAD_CUDA_KERNEL(topk_values, TopKValuesKernel);
DAGRAD_CUDA_KERNEL(topk_indices, TopKIndicesKernel);
DAGRAD_CUDA_KERNEL(multinomial, MultinomialKernel);

}  // namespace dagrad
