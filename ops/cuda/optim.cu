// CUDA kernels of the optimizer family (ops/optim.cc): sgd_update and
// adam_update, in place. The fed scalars (lr, step, grad_scale) are device
// memory, read by the kernels, so a training step needs no host round trip;
// each block derives the step's coefficients once, in double, exactly as
// the CPU kernel does on the host. The per-element arithmetic is the
// expression of the CPU's reference (baseline) kernel, and neither side
// contracts it into fused multiply-adds (tools/cmake/cuda.cmake), so the
// updates match that kernel bit for bit, up to the last-ulp differences of
// CUDA's pow in Adam's bias corrections; an ISA-specific CPU kernel only
// within its stated tolerance.

#include "absl/strings/str_cat.h"
#include "ops/cuda/kernel_util.cuh"
#include "ops/cuda/registry.h"
#include "ops/op_util.h"

namespace dagrad {
namespace {

using cuda::GridFor;
using cuda::kThreads;

// Read returns *p, or `fallback` for an absent optional scalar.
__device__ inline double Read(const double* p, double fallback) { return p ? *p : fallback; }

// Guarded is true when the optional guard is present and not finite: the
// update then writes nothing (ops/optim.h).
__device__ inline bool Guarded(const double* guard) { return !isfinite(Read(guard, 0)); }

// BadLr: a learning rate that is not finite and >= 0, which the CPU's
// LrCheck (ops/optim.cc) refuses before anything is written.
struct BadLr {
  __device__ bool operator()(double lr) const { return !(lr >= 0) || !isfinite(lr); }
};

// CheckLr queues LrCheck on the device, where the learning rate may have
// been computed (a parameter group's scaled rate): the run fails with the
// CPU's message, and the update, reading the same rate, writes nothing.
absl::Status CheckLr(const KernelContext& ctx, int i) {
  if (!ctx.has(i)) return absl::OkStatus();
  return cuda::CheckElements(ctx, ctx.in(i).as<double>(), 1, BadLr{},
                             [](const DeviceErrorDetail& d) {
                               return absl::StrCat("lr must be finite and >= 0, got ",
                                                   d.float_value);
                             });
}

// ---- sgd_update(param, grad, velocity, lr, grad_scale?, guard?) ------------------

template <typename T>
__global__ void SgdKernelImpl(T* p, const T* g, T* vel, int64_t n, const double* lr_in,
                              const double* scale_in, const double* guard, T mu, T wd,
                              bool nesterov) {
  if (Guarded(guard) || BadLr()(Read(lr_in, 0))) return;
  const T lr = static_cast<T>(Read(lr_in, 0));
  const T scale = static_cast<T>(Read(scale_in, 1));
  DAGRAD_CUDA_LOOP(i, n) {
    const T gi = scale * g[i] + wd * p[i];
    vel[i] = mu * vel[i] + gi;
    p[i] -= lr * (nesterov ? gi + mu * vel[i] : vel[i]);
  }
}

const double* OptionalScalar(const KernelContext& ctx, int i) {
  return ctx.has(i) ? ctx.in(i).as<double>() : nullptr;
}

absl::Status SgdKernel(const KernelContext& ctx) {
  return DispatchFloat(ctx.in(0).dtype, [&](auto tag) {
    using T = decltype(tag);
    const int64_t n = ctx.in(0).num_elements();
    DAGRAD_RETURN_IF_ERROR(CheckLr(ctx, 3));
    if (n == 0) return absl::OkStatus();
    SgdKernelImpl<<<GridFor(n), kThreads, 0, CudaContextOf(ctx).stream()>>>(
        ctx.in(0).as<T>(), ctx.in(1).as<T>(), ctx.in(2).as<T>(), n, OptionalScalar(ctx, 3),
        OptionalScalar(ctx, 4), OptionalScalar(ctx, 5),
        static_cast<T>(ctx.attrs().GetFloat("momentum")),
        static_cast<T>(ctx.attrs().GetFloat("weight_decay")), ctx.attrs().GetBool("nesterov"));
    return CheckLaunch("SgdKernelImpl");
  });
}

// ---- adam_update(param, grad, m, v, lr, step, grad_scale?, guard?) ---------------

struct AdamHyper {
  double b1, b2, eps, wd;
  bool decoupled;
};

template <typename T>
struct AdamCoefficients {
  T step_size, sqrt_bc2, eps, scale, l2, shrink, b1, b2, rest1, rest2;
};

// The CPU kernel's host computation, for step t.
template <typename T>
__device__ AdamCoefficients<T> Coefficients(const AdamHyper& h, double lr, double t,
                                            double scale) {
  AdamCoefficients<T> c;
  c.step_size = static_cast<T>(lr / (1 - pow(h.b1, t)));
  c.sqrt_bc2 = static_cast<T>(sqrt(1 - pow(h.b2, t)));
  c.eps = static_cast<T>(h.eps);
  c.scale = static_cast<T>(scale);
  c.l2 = static_cast<T>(h.decoupled ? 0 : h.wd);
  c.shrink = static_cast<T>(h.decoupled ? 1 - lr * h.wd : 1);
  c.b1 = static_cast<T>(h.b1);
  c.b2 = static_cast<T>(h.b2);
  c.rest1 = static_cast<T>(1 - h.b1);  // in double, as Python computes 1 - beta
  c.rest2 = static_cast<T>(1 - h.b2);
  return c;
}

// A step below 1 fails the run before anything is written (the CPU kernel
// checks it first): every block sees it and skips its elements, and the
// first block reports it.
template <typename T>
__global__ void AdamKernelImpl(T* p, const T* g, T* m, T* v, int64_t n, const double* lr_in,
                               const double* step_in, const double* scale_in,
                               const double* guard, AdamHyper h, DeviceErrorRecord* record,
                               int site) {
  __shared__ AdamCoefficients<T> c;
  const double t = Read(step_in, 1);
  if (!(t >= 1)) {
    if (blockIdx.x == 0 && threadIdx.x == 0) cuda::ReportBadElement(record, site, 0);
    return;
  }
  if (Guarded(guard) || BadLr()(Read(lr_in, 0))) return;
  if (threadIdx.x == 0) c = Coefficients<T>(h, Read(lr_in, 0), t, Read(scale_in, 1));
  __syncthreads();
  DAGRAD_CUDA_LOOP(i, n) {
    const T gi = c.scale * g[i] + c.l2 * p[i];
    m[i] = c.b1 * m[i] + c.rest1 * gi;
    v[i] = c.b2 * v[i] + c.rest2 * gi * gi;
    p[i] = c.shrink * p[i] - c.step_size * m[i] / (math::Sqrt(v[i]) / c.sqrt_bc2 + c.eps);
  }
}

absl::Status AdamKernel(const KernelContext& ctx) {
  const Attrs& a = ctx.attrs();
  const AdamHyper h{a.GetFloat("beta1"), a.GetFloat("beta2"), a.GetFloat("eps"),
                    a.GetFloat("weight_decay"), a.GetBool("decoupled")};
  const double* step = OptionalScalar(ctx, 5);
  return DispatchFloat(ctx.in(0).dtype, [&](auto tag) {
    using T = decltype(tag);
    CudaContext& cuda = CudaContextOf(ctx);
    // The step lives on the device: its check is reported from there, with
    // the value read back by CaptureErrorValue.
    const int site = cuda.AddErrorSite(ctx.node, [](const DeviceErrorDetail& d) {
      return absl::StrCat("step must be >= 1, got ", d.float_value);
    });
    const int64_t n = ctx.in(0).num_elements();
    AdamKernelImpl<<<GridFor(std::max<int64_t>(n, 1)), kThreads, 0, cuda.stream()>>>(
        ctx.in(0).as<T>(), ctx.in(1).as<T>(), ctx.in(2).as<T>(), ctx.in(3).as<T>(), n,
        OptionalScalar(ctx, 4), step, OptionalScalar(ctx, 6), OptionalScalar(ctx, 7), h,
        cuda.error_record(), site);
    DAGRAD_RETURN_IF_ERROR(CheckLaunch("AdamKernelImpl"));
    if (step != nullptr) {
      cuda::CaptureErrorValue<<<1, 1, 0, cuda.stream()>>>(cuda.error_record(), site, step);
      DAGRAD_RETURN_IF_ERROR(CheckLaunch("CaptureErrorValue"));
    }
    // After the step's check, as the CPU checks them (the first report wins).
    return CheckLr(ctx, 4);
  });
}

}  // namespace

DAGRAD_CUDA_KERNEL(sgd_update, SgdKernel);
DAGRAD_CUDA_KERNEL(adam_update, AdamKernel);

}  // namespace dagrad
