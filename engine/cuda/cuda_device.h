// engine/cuda/cuda_device.h
//
// The CUDA device: an executor backend that keeps arenas, variables and
// constants in GPU memory and runs every op with its kernel from ops/cuda/
// on one dedicated stream. A whole training step (forward, backward,
// optimizer update) runs on the device; the host only stages the fed inputs
// and copies back the fetched values.
//
// This header has no CUDA types, so every build can include it: without
// the CUDA backend (DAGRAD_CUDA=OFF, or no nvcc) CudaDevice returns
// Unavailable, which is also what it returns when no GPU is visible, so a
// caller handles both the same way:
//
//   absl::StatusOr<std::unique_ptr<Device>> device = CudaDevice();
//   if (absl::IsUnavailable(device.status())) device = CpuDevice();  // no GPU here
//   if (!device.ok()) return device.status();
//   Executor exec(g, *std::move(device));
//
// Numerics: float32 matrix products use full float32 arithmetic unless
// CudaOptions::allow_tf32 is set; reductions accumulate in double; and the
// kernels, like the CPU's reference (baseline) kernels, are compiled
// without contraction into fused multiply-adds (tools/cmake/cuda.cmake).
// So results match the CPU backend to float32 rounding, and the CPU's
// reference kernels bit for bit for arithmetic-only elementwise ops,
// dropout (masks and values, -0.0 and NaN included) and scatter_add;
// transcendental functions differ by a few ulps.

#ifndef DAGRAD_ENGINE_CUDA_CUDA_DEVICE_H_
#define DAGRAD_ENGINE_CUDA_CUDA_DEVICE_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/device/device.h"

namespace dagrad {

struct CudaOptions {
  // allow_tf32 lets cuBLAS round float32 matrix-product inputs to TF32 on
  // tensor cores: several times faster on an H100, with a relative error
  // near 1e-3 instead of 1e-7. Off by default, so that results match the
  // CPU backend.
  bool allow_tf32 = false;
};

// CudaBuiltIn is true when this binary contains the CUDA backend.
bool CudaBuiltIn();

// CudaDevice returns a device on GPU `ordinal`, with its own stream and
// cuBLAS handle. Errors: Unavailable when the backend is not built in, when
// no GPU is visible (no driver, CUDA_VISIBLE_DEVICES empty), or when the
// GPU lacks stream-ordered memory pools; FailedPrecondition when the
// kernels were not built for this GPU's architecture (the message says how
// to rebuild); InvalidArgument for an ordinal out of range; Internal for
// any other CUDA or cuBLAS failure, naming the call.
//
//   DAGRAD_ASSIGN_OR_RETURN(std::unique_ptr<Device> gpu, CudaDevice(0));
//   gpu->name();   // "cuda:0 (NVIDIA H100 80GB HBM3)"
absl::StatusOr<std::unique_ptr<Device>> CudaDevice(int ordinal = 0,
                                                   const CudaOptions& options = {});

// CudaDeviceNames returns "cuda:<i> (<product name>)" for every visible GPU;
// empty without the backend or without GPUs.
std::vector<std::string> CudaDeviceNames();

// DescribeCuda returns one line for `dagrad info`: whether the backend is
// built in, the runtime and driver versions, and the visible GPUs (with
// compute capability and memory) or why there are none.
std::string DescribeCuda();

// TimeOnDevice runs `step` `iterations` times and returns the milliseconds
// each took on `device`'s stream, measured with CUDA events recorded before
// and after it (step must queue its work on that stream, as Executor::Run
// on that device does). Errors: FailedPrecondition when `device` is not a
// CUDA device; the first error of `step`; CUDA failures.
//
//   auto ms = TimeOnDevice(exec.device(), 20, [&] { return exec.Run(*plan, feeds).status(); });
absl::StatusOr<std::vector<double>> TimeOnDevice(const Device& device, int iterations,
                                                 const std::function<absl::Status()>& step);

}  // namespace dagrad

#endif  // DAGRAD_ENGINE_CUDA_CUDA_DEVICE_H_
