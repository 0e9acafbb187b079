#include "engine/cuda/cuda_context.h"

#include "absl/strings/str_cat.h"
#include "engine/status_macros.h"

namespace dagrad {
namespace {

// cuBLAS's recommended workspace on Hopper; handing it one of ours keeps
// cuBLAS from allocating behind the stream's back.
constexpr size_t kCublasWorkspaceBytes = size_t{32} << 20;

const DeviceErrorRecord kCleanRecord = {kNoErrorSite, 0, kNoErrorPosition, 0, 0.0};

}  // namespace

absl::Status CudaStatus(cudaError_t error, absl::string_view call) {
  if (error == cudaSuccess) return absl::OkStatus();
  const std::string message = absl::StrCat(call, " failed: ", cudaGetErrorName(error), " (",
                                           cudaGetErrorString(error), ")");
  switch (error) {
    case cudaErrorMemoryAllocation:
      return absl::ResourceExhaustedError(message);
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorDevicesUnavailable:
    case cudaErrorCallRequiresNewerDriver:
      return absl::UnavailableError(message);
    default:
      return absl::InternalError(message);
  }
}

absl::Status CublasStatus(cublasStatus_t status, absl::string_view call) {
  if (status == CUBLAS_STATUS_SUCCESS) return absl::OkStatus();
  absl::StatusOr<const CublasApi*> blas = LoadCublas();
  const std::string message =
      blas.ok() ? absl::StrCat(call, " failed: ", (*blas)->status_name(status), " (",
                               (*blas)->status_string(status), ")")
                : absl::StrCat(call, " failed: cuBLAS status ", static_cast<int>(status));
  if (status == CUBLAS_STATUS_ALLOC_FAILED) return absl::ResourceExhaustedError(message);
  return absl::InternalError(message);
}

absl::Status CheckLaunch(absl::string_view kernel) {
  // cudaPeekAtLastError leaves a sticky error for Synchronize to report
  // too; a launch error is not sticky, so clear it.
  const cudaError_t error = cudaGetLastError();
  if (error == cudaSuccess) return absl::OkStatus();
  return CudaStatus(error, absl::StrCat("launching ", kernel));
}

CudaBuffer& CudaBuffer::operator=(CudaBuffer&& o) noexcept {
  if (this != &o) {
    Release();
    owner_ = std::exchange(o.owner_, nullptr);
    data_ = std::exchange(o.data_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
  }
  return *this;
}

void CudaBuffer::Release() {
  if (data_ == nullptr) return;
  owner_->NoteError(CudaStatus(cudaFreeAsync(data_, owner_->stream()), "cudaFreeAsync (scratch)"));
  data_ = nullptr;
}

CudaContext::~CudaContext() {
  if (ordinal_ < 0) return;
  // Destructors cannot report: errors here are dropped, after the stream
  // has drained so that no queued kernel outlives its memory.
  cudaSetDevice(ordinal_);
  if (stream_ != nullptr) cudaStreamSynchronize(stream_);
  if (cublas_ != nullptr) blas_->destroy(cublas_);
  if (cublas_workspace_ != nullptr) cudaFree(cublas_workspace_);
  if (error_record_ != nullptr) cudaFree(error_record_);
  if (error_host_ != nullptr) cudaFreeHost(error_host_);
  if (run_step_ != nullptr) cudaFree(run_step_);
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

absl::Status CudaContext::Init(int ordinal, bool allow_tf32) {
  ordinal_ = ordinal;
  allow_tf32_ = allow_tf32;
  DAGRAD_CUDA_RETURN_IF_ERROR(cudaSetDevice(ordinal));
  DAGRAD_ASSIGN_OR_RETURN(blas_, LoadCublas());
  DAGRAD_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  DAGRAD_CUBLAS_RETURN_IF_ERROR(blas_->create(&cublas_));
  DAGRAD_CUBLAS_RETURN_IF_ERROR(blas_->set_stream(cublas_, stream_));
  DAGRAD_CUDA_RETURN_IF_ERROR(cudaMalloc(&cublas_workspace_, kCublasWorkspaceBytes));
  DAGRAD_CUBLAS_RETURN_IF_ERROR(
      blas_->set_workspace(cublas_, cublas_workspace_, kCublasWorkspaceBytes));
  // CUBLAS_DEFAULT_MATH computes float32 products in float32; TF32 tensor
  // cores only when the user opted in.
  DAGRAD_CUBLAS_RETURN_IF_ERROR(blas_->set_math_mode(
      cublas_, allow_tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
  DAGRAD_CUBLAS_RETURN_IF_ERROR(blas_->set_pointer_mode(cublas_, CUBLAS_POINTER_MODE_HOST));
  DAGRAD_CUDA_RETURN_IF_ERROR(cudaMalloc(&error_record_, sizeof(DeviceErrorRecord)));
  DAGRAD_CUDA_RETURN_IF_ERROR(cudaMallocHost(&error_host_, sizeof(DeviceErrorRecord)));
  DAGRAD_CUDA_RETURN_IF_ERROR(cudaMalloc(&run_step_, sizeof(uint64_t)));
  DAGRAD_RETURN_IF_ERROR(SetRunStep(0));
  DAGRAD_RETURN_IF_ERROR(ResetErrorRecord());
  DAGRAD_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
  return absl::OkStatus();
}

absl::Status CudaContext::SetRunStep(uint64_t step) {
  // From pageable memory the call returns once the source has been
  // staged, so the member can be rewritten by the next run right away.
  run_step_host_ = step;
  DAGRAD_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(run_step_, &run_step_host_, sizeof(uint64_t),
                                              cudaMemcpyHostToDevice, stream_));
  return absl::OkStatus();
}

absl::Status CudaContext::ResetErrorRecord() {
  *error_host_ = kCleanRecord;
  DAGRAD_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(error_record_, error_host_,
                                              sizeof(DeviceErrorRecord),
                                              cudaMemcpyHostToDevice, stream_));
  // The source is pinned: wait before anyone writes it again.
  DAGRAD_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
  return absl::OkStatus();
}

absl::StatusOr<CudaBuffer> CudaContext::Scratch(size_t bytes) {
  void* p = nullptr;
  DAGRAD_CUDA_RETURN_IF_ERROR(cudaMallocAsync(&p, bytes == 0 ? 1 : bytes, stream_));
  return CudaBuffer(this, p, bytes);
}

int CudaContext::AddErrorSite(const Node& node, DeviceErrorFormatter format) {
  sites_.push_back({&node, std::move(format)});
  return static_cast<int>(sites_.size()) - 1;
}

void CudaContext::NoteError(absl::Status status) {
  if (deferred_.ok()) deferred_ = std::move(status);
}

absl::Status CudaContext::Synchronize() {
  // Only runs that launched a kernel able to report bad data read the
  // record back; the copy is queued behind those kernels, so one stream
  // synchronisation covers both.
  std::vector<ErrorSite> sites = std::move(sites_);
  sites_.clear();
  const bool check_record = !sites.empty();
  if (check_record) {
    DAGRAD_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(error_host_, error_record_,
                                                sizeof(DeviceErrorRecord),
                                                cudaMemcpyDeviceToHost, stream_));
  }
  const cudaError_t sync = cudaStreamSynchronize(stream_);
  if (sync != cudaSuccess) {
    return CudaStatus(sync, absl::StrCat(
        "cudaStreamSynchronize (an asynchronous error from a kernel or copy queued "
        "earlier; the CUDA context may now be unusable; ExecutorOptions::"
        "synchronize_each_kernel names the node)"));
  }
  absl::Status data_error;
  if (check_record && error_host_->site != kNoErrorSite) {
    const DeviceErrorRecord record = *error_host_;
    DAGRAD_RETURN_IF_ERROR(ResetErrorRecord());
    if (record.site < 0 || record.site >= static_cast<int>(sites.size())) {
      return absl::InternalError(absl::StrCat("device error record names site ", record.site,
                                              " of ", sites.size(), " registered"));
    }
    const ErrorSite& site = sites[record.site];
    const DeviceErrorDetail detail{static_cast<int64_t>(record.position),
                                   record.has_value == 1, record.int_value, record.float_value};
    data_error = absl::InvalidArgumentError(absl::StrCat(
        site.node->op->name, " '", site.node->path(), "': ", site.format(detail)));
  }
  // A failure of the device itself comes before the data's.
  if (!deferred_.ok()) return std::exchange(deferred_, absl::OkStatus());
  return data_error;
}

}  // namespace dagrad
