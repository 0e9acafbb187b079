// engine/cuda/cuda_context.h
//
// CudaContext: what a CUDA kernel wrapper in ops/cuda/ gets from the device
// (through RunContext::device_state): the stream everything is queued on,
// the cuBLAS functions and handle bound to it, stream-ordered scratch
// memory, and the
// device-side error record with which kernels report bad data (an index
// out of range, an integer division by zero) without a host round trip.
//
// Also the checks every CUDA and cuBLAS call goes through: a failure
// becomes an absl::Status naming the call.
//
//   CudaContext& cuda = CudaContextOf(ctx);
//   DAGRAD_ASSIGN_OR_RETURN(CudaBuffer tmp, cuda.Scratch(bytes));
//   const int site = cuda.AddErrorSite(ctx.node, [](const DeviceErrorDetail& d) {
//     return absl::StrCat("element ", d.position, " is bad");
//   });
//   MyKernel<<<grid, block, 0, cuda.stream()>>>(..., cuda.error_record(), site);
//   DAGRAD_RETURN_IF_ERROR(CheckLaunch("MyKernel"));
//
// Data errors found on the device surface at the next Device::Synchronize
// (the executor calls it at the end of every run) as InvalidArgument,
// formatted "<op> '<node path>': <message>" like a CPU kernel's error.
//
// A kernel wrapper's launches may be captured into a CUDA graph and
// replayed on later runs (ExecutorOptions::record_runs), so a wrapper must
// queue everything on stream() and never wait for the device or copy to or
// from the host, and every value that changes between runs must come from
// device memory: tensors, or run_step() for the dropout step, never a
// kernel argument computed from RunContext::step. Scratch and error sites
// are captured with the launches and stay valid for replays.

#ifndef DAGRAD_ENGINE_CUDA_CUDA_CONTEXT_H_
#define DAGRAD_ENGINE_CUDA_CUDA_CONTEXT_H_

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/cuda/cublas_api.h"
#include "engine/graph.h"
#include "engine/op.h"

namespace dagrad {

// CudaStatus returns OK for cudaSuccess, else a status naming `call` and the
// error: ResourceExhausted for out-of-memory, Unavailable when there is no
// usable device or driver, Internal otherwise.
absl::Status CudaStatus(cudaError_t error, absl::string_view call);
// CublasStatus does the same for a cuBLAS status.
absl::Status CublasStatus(cublasStatus_t status, absl::string_view call);

#define DAGRAD_CUDA_RETURN_IF_ERROR(call)                                         \
  do {                                                                            \
    const cudaError_t dagrad_cuda_error_ = (call);                                \
    if (dagrad_cuda_error_ != cudaSuccess) return ::dagrad::CudaStatus(dagrad_cuda_error_, #call); \
  } while (false)

#define DAGRAD_CUBLAS_RETURN_IF_ERROR(call)                                       \
  do {                                                                            \
    const cublasStatus_t dagrad_cublas_status_ = (call);                          \
    if (dagrad_cublas_status_ != CUBLAS_STATUS_SUCCESS) {                         \
      return ::dagrad::CublasStatus(dagrad_cublas_status_, #call);               \
    }                                                                             \
  } while (false)

// CheckLaunch reports a failed kernel launch (bad configuration, no kernel
// image for this GPU), naming `kernel`. Call it right after each <<<...>>>.
absl::Status CheckLaunch(absl::string_view kernel);

// DeviceErrorRecord lives in device memory. A kernel that finds bad data
// claims the record for its site (the first site to fail in stream order
// wins) and lowers `position` to the smallest failing element, so the
// report names the same element a sequential CPU kernel would.
struct DeviceErrorRecord {
  int site;                     // kNoErrorSite: no error
  int has_value;                // 1 when the value fields are set
  unsigned long long position;  // smallest failing element of `site`
  long long int_value;          // the offending value, for the message
  double float_value;
};
inline constexpr int kNoErrorSite = -1;
inline constexpr unsigned long long kNoErrorPosition = ~0ull;

// DeviceErrorDetail is the record as a formatter sees it.
struct DeviceErrorDetail {
  int64_t position = 0;
  bool has_value = false;
  int64_t int_value = 0;
  double float_value = 0;
};
using DeviceErrorFormatter = std::function<std::string(const DeviceErrorDetail&)>;

class CudaContext;

// CudaBuffer is stream-ordered device memory (cudaMallocAsync), freed in
// stream order when it is destroyed: kernels queued before that may still
// use it.
class CudaBuffer {
 public:
  CudaBuffer() = default;
  CudaBuffer(CudaContext* owner, void* data, size_t bytes)
      : owner_(owner), data_(data), bytes_(bytes) {}
  CudaBuffer(CudaBuffer&& o) noexcept { *this = std::move(o); }
  CudaBuffer& operator=(CudaBuffer&& o) noexcept;
  CudaBuffer(const CudaBuffer&) = delete;
  CudaBuffer& operator=(const CudaBuffer&) = delete;
  ~CudaBuffer() { Release(); }

  template <typename T>
  T* as() const {
    return static_cast<T*>(data_);
  }
  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }

 private:
  void Release();

  CudaContext* owner_ = nullptr;
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

class CudaContext {
 public:
  CudaContext() = default;
  CudaContext(const CudaContext&) = delete;
  CudaContext& operator=(const CudaContext&) = delete;
  ~CudaContext();

  // Init creates the stream, the cuBLAS handle and the error record on the
  // current device.
  absl::Status Init(int ordinal, bool allow_tf32);

  int ordinal() const { return ordinal_; }
  // allow_tf32 is CudaOptions::allow_tf32: float32 products may round their
  // inputs to TF32 on tensor cores (cuBLAS's, and fused kernels' own).
  bool allow_tf32() const { return allow_tf32_; }
  cudaStream_t stream() const { return stream_; }
  // blas holds the cuBLAS functions (engine/cuda/cublas_api.h); cublas is
  // the handle to pass them, bound to stream().
  const CublasApi& blas() const { return *blas_; }
  cublasHandle_t cublas() const { return cublas_; }
  DeviceErrorRecord* error_record() const { return error_record_; }
  // run_step points to the current run's dropout step in device memory
  // (SetRunStep writes it), so that a recorded run replays with the step
  // of the run that replays it.
  const uint64_t* run_step() const { return run_step_; }
  absl::Status SetRunStep(uint64_t step);

  // Scratch returns `bytes` (at least 1) of uninitialised stream-ordered
  // memory; ResourceExhausted when the device is out of memory.
  absl::StatusOr<CudaBuffer> Scratch(size_t bytes);

  // AddErrorSite registers a kernel launch of `node` that may report a data
  // error and returns the site id to pass to the kernel; `format` writes
  // the message (without the op and node, which are prepended). Sites last
  // until the next TakeError.
  int AddErrorSite(const Node& node, DeviceErrorFormatter format);

  // Synchronize waits for the stream, then returns the first data error a
  // kernel reported since the last call (and clears it), or the CUDA error
  // that stopped the stream, or an error a stream-ordered free hit.
  absl::Status Synchronize();

  // NoteError keeps the first error of an operation that cannot return one
  // (a destructor's free) for the next Synchronize; TakeNotedError returns
  // it and forgets it.
  void NoteError(absl::Status status);
  absl::Status TakeNotedError() { return std::exchange(deferred_, absl::OkStatus()); }

  // The error sites registered since the last Synchronize. A recording of
  // launches keeps the sites they were given and restores them when it
  // replays, so that an error it finds is reported against the right node.
  struct ErrorSite {
    const Node* node;
    DeviceErrorFormatter format;
  };
  const std::vector<ErrorSite>& error_sites() const { return sites_; }
  void set_error_sites(std::vector<ErrorSite> sites) { sites_ = std::move(sites); }

 private:
  absl::Status ResetErrorRecord();

  int ordinal_ = -1;
  bool allow_tf32_ = false;
  cudaStream_t stream_ = nullptr;
  const CublasApi* blas_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  void* cublas_workspace_ = nullptr;
  DeviceErrorRecord* error_record_ = nullptr;  // device memory
  DeviceErrorRecord* error_host_ = nullptr;    // pinned host copy
  uint64_t* run_step_ = nullptr;               // device memory
  uint64_t run_step_host_ = 0;                 // pageable: reusable once copied
  std::vector<ErrorSite> sites_;
  absl::Status deferred_;
};

// CudaContextOf returns the context of the device a kernel runs on.
inline CudaContext& CudaContextOf(const KernelContext& ctx) {
  return *static_cast<CudaContext*>(ctx.run.device_state);
}

}  // namespace dagrad

#endif  // DAGRAD_ENGINE_CUDA_CUDA_CONTEXT_H_
