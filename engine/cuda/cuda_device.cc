// The CUDA device: memory from the device's stream-ordered pool, one
// non-blocking stream per device, kernels looked up by OpDef in the table
// the ops register (engine/cuda/kernel_registry.h).

#include "engine/cuda/cuda_device.h"

#include <cuda_runtime.h>

#include <chrono>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/cuda/cuda_context.h"
#include "engine/cuda/kernel_image.h"
#include "engine/cuda/kernel_registry.h"
#include "engine/status_macros.h"

namespace dagrad {
namespace {

// DeviceCount returns the number of visible GPUs, or Unavailable saying
// why there are none.
absl::StatusOr<int> DeviceCount() {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    // The runtime latches this error; clear it so later calls see their own.
    cudaGetLastError();
    int driver = 0;
    const bool no_driver = cudaDriverGetVersion(&driver) == cudaSuccess && driver == 0;
    return absl::UnavailableError(absl::StrCat(
        "no usable CUDA device", no_driver ? " (no NVIDIA driver is loaded)" : "",
        ": cudaGetDeviceCount: ", cudaGetErrorName(error), " (", cudaGetErrorString(error), ")"));
  }
  if (count == 0) return absl::UnavailableError("no CUDA device is visible");
  return count;
}

// CudaRecording is a run captured as a CUDA graph, with the error sites
// its kernels were given.
class CudaRecording final : public Recording {
 public:
  CudaRecording(std::shared_ptr<CudaContext> context, cudaGraphExec_t exec,
                std::vector<CudaContext::ErrorSite> sites)
      : context_(std::move(context)), exec_(exec), sites_(std::move(sites)) {}
  CudaRecording(const CudaRecording&) = delete;
  CudaRecording& operator=(const CudaRecording&) = delete;
  ~CudaRecording() override {
    // Errors are dropped here, as in any destructor, after the stream has
    // drained so that no launch of the graph is still running.
    cudaSetDevice(context_->ordinal());
    cudaStreamSynchronize(context_->stream());
    cudaGraphExecDestroy(exec_);
  }

  absl::Status Replay() override {
    DAGRAD_CUDA_RETURN_IF_ERROR(cudaSetDevice(context_->ordinal()));
    context_->set_error_sites(sites_);
    DAGRAD_CUDA_RETURN_IF_ERROR(cudaGraphLaunch(exec_, context_->stream()));
    return absl::OkStatus();
  }

 private:
  std::shared_ptr<CudaContext> context_;
  cudaGraphExec_t exec_;
  std::vector<CudaContext::ErrorSite> sites_;
};

// CaptureFailure says why a capture that `enqueue` queued without error
// cannot be replayed: the capture was invalidated (a call that cannot be
// captured), a free failed, or the graph did not instantiate.
absl::Status CaptureFailure(cudaError_t ended, absl::Status noted) {
  if (ended != cudaSuccess) return CudaStatus(ended, "cudaStreamEndCapture");
  return noted;
}

class CudaDeviceImpl final : public Device {
 public:
  CudaDeviceImpl(std::shared_ptr<CudaContext> context, std::string name)
      : context_(std::move(context)), name_(std::move(name)) {}

  std::string name() const override { return name_; }
  bool is_host() const override { return false; }

  absl::StatusOr<std::shared_ptr<void>> Allocate(size_t bytes) override {
    DAGRAD_RETURN_IF_ERROR(Activate());
    void* p = nullptr;
    const cudaError_t error = cudaMallocAsync(&p, bytes == 0 ? 1 : bytes, context_->stream());
    if (error != cudaSuccess) {
      return CudaStatus(error, absl::StrCat("cudaMallocAsync of ", bytes, " bytes on ", name_));
    }
    // The deleter keeps the context (and its stream) alive: a plan's arena
    // may outlive the executor and its device.
    // A deleter cannot return an error: the context reports it at its next
    // Synchronize.
    std::shared_ptr<void> buffer(p, [context = context_](void* q) {
      context->NoteError(CudaStatus(cudaSetDevice(context->ordinal()), "cudaSetDevice"));
      context->NoteError(CudaStatus(cudaFreeAsync(q, context->stream()), "cudaFreeAsync"));
    });
    DAGRAD_CUDA_RETURN_IF_ERROR(
        cudaMemsetAsync(p, 0, bytes == 0 ? 1 : bytes, context_->stream()));
    return buffer;
  }

  absl::Status CopyToDevice(void* dst, const void* src, size_t bytes) override {
    if (bytes == 0) return absl::OkStatus();
    DAGRAD_RETURN_IF_ERROR(Activate());
    DAGRAD_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, context_->stream()));
    // From pageable memory the copy has consumed `src` when the call
    // returns, but not from pinned memory: wait, so the contract holds for
    // any host buffer. Callers copy before they queue kernels (staged
    // inputs, variable initialisation), so this costs no overlap.
    DAGRAD_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(context_->stream()));
    return absl::OkStatus();
  }

  // Page-locked, so that CopyToDeviceAsync's copies run while the host goes
  // on. Freed with cudaFreeHost, which waits for the device: a plan's
  // staging goes with the plan, after its runs have finished.
  absl::StatusOr<std::shared_ptr<void>> AllocateStaging(size_t bytes) override {
    DAGRAD_RETURN_IF_ERROR(Activate());
    void* p = nullptr;
    const cudaError_t error = cudaHostAlloc(&p, bytes == 0 ? 1 : bytes, cudaHostAllocDefault);
    if (error != cudaSuccess) {
      return CudaStatus(error, absl::StrCat("cudaHostAlloc of ", bytes, " bytes for ", name_));
    }
    return std::shared_ptr<void>(p, [context = context_](void* q) {
      context->NoteError(CudaStatus(cudaFreeHost(q), "cudaFreeHost"));
    });
  }

  // No wait: the caller keeps `src` (staging) as it is until it has
  // synchronized, and the kernels queued after the copy see its bytes.
  absl::Status CopyToDeviceAsync(void* dst, const void* src, size_t bytes) override {
    if (bytes == 0) return absl::OkStatus();
    DAGRAD_RETURN_IF_ERROR(Activate());
    DAGRAD_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, context_->stream()));
    return absl::OkStatus();
  }

  absl::Status CopyToHost(void* dst, const void* src, size_t bytes) override {
    if (bytes == 0) return absl::OkStatus();
    DAGRAD_RETURN_IF_ERROR(Activate());
    DAGRAD_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, context_->stream()));
    DAGRAD_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(context_->stream()));
    return absl::OkStatus();
  }

  absl::Status CopyOnDevice(void* dst, const void* src, size_t bytes) override {
    if (bytes == 0 || dst == src) return absl::OkStatus();
    DAGRAD_RETURN_IF_ERROR(Activate());
    DAGRAD_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, context_->stream()));
    return absl::OkStatus();
  }

  absl::Status Fill(void* dst, unsigned char byte, size_t bytes) override {
    if (bytes == 0) return absl::OkStatus();
    DAGRAD_RETURN_IF_ERROR(Activate());
    DAGRAD_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(dst, byte, bytes, context_->stream()));
    return absl::OkStatus();
  }

  Kernel KernelFor(const OpDef& op) const override { return CudaKernelFor(op); }

  void* kernel_state() const override {
    // The executor asks for this once per run, on the thread that then
    // launches the kernels: make this GPU current for them. A failure is
    // reported by the run's Synchronize.
    context_->NoteError(CudaStatus(cudaSetDevice(context_->ordinal()), "cudaSetDevice"));
    return context_.get();
  }

  absl::Status Synchronize() override {
    DAGRAD_RETURN_IF_ERROR(Activate());
    return context_->Synchronize();
  }

  absl::Status PrepareRun(const RunContext& run) override {
    DAGRAD_RETURN_IF_ERROR(Activate());
    return context_->SetRunStep(run.step);
  }

  // Record captures the stream's work into a CUDA graph, instantiates it
  // and launches it once (capturing runs nothing). When the capture cannot
  // be replayed, the sites and noted errors it left are forgotten and the
  // work is queued again, uncaptured.
  absl::StatusOr<std::unique_ptr<Recording>> Record(const std::function<absl::Status()>& enqueue,
                                                    absl::Status* why_not) override {
    DAGRAD_RETURN_IF_ERROR(Activate());
    CudaContext& cuda = *context_;
    std::vector<CudaContext::ErrorSite> sites_before = cuda.error_sites();
    const absl::Status noted_before = cuda.TakeNotedError();
    DAGRAD_CUDA_RETURN_IF_ERROR(
        cudaStreamBeginCapture(cuda.stream(), cudaStreamCaptureModeThreadLocal));
    const absl::Status queued = enqueue();
    cudaGraph_t graph = nullptr;
    const cudaError_t ended = cudaStreamEndCapture(cuda.stream(), &graph);
    std::unique_ptr<CUgraph_st, cudaError_t (*)(cudaGraph_t)> graph_owner(graph,
                                                                         cudaGraphDestroy);
    cudaGetLastError();  // a failed capture leaves its error behind
    absl::Status failure = CaptureFailure(ended, cuda.TakeNotedError());
    cuda.NoteError(noted_before);
    if (failure.ok() && !queued.ok()) {
      // The kernel's own error (checked on the host): nothing ran.
      cuda.set_error_sites(std::move(sites_before));
      return queued;
    }
    cudaGraphExec_t exec = nullptr;
    if (failure.ok()) {
      failure = CudaStatus(cudaGraphInstantiate(&exec, graph, 0), "cudaGraphInstantiate");
    }
    if (!failure.ok()) {
      cuda.set_error_sites(std::move(sites_before));
      *why_not = absl::Status(failure.code(),
                              absl::StrCat("recording the run as a CUDA graph: ",
                                           failure.message(), "; it runs unrecorded"));
      if (absl::Status again = enqueue(); !again.ok()) return again;
      return nullptr;
    }
    auto recording = std::make_unique<CudaRecording>(context_, exec, cuda.error_sites());
    DAGRAD_RETURN_IF_ERROR(recording->Replay());
    return recording;
  }

  CudaContext& context() const { return *context_; }

 private:
  absl::Status Activate() const {
    DAGRAD_CUDA_RETURN_IF_ERROR(cudaSetDevice(context_->ordinal()));
    return absl::OkStatus();
  }

  std::shared_ptr<CudaContext> context_;
  std::string name_;
};

absl::StatusOr<cudaDeviceProp> Properties(int ordinal) {
  cudaDeviceProp prop;
  DAGRAD_CUDA_RETURN_IF_ERROR(cudaGetDeviceProperties(&prop, ordinal));
  return prop;
}

std::string DeviceName(int ordinal, const cudaDeviceProp& prop) {
  return absl::StrCat("cuda:", ordinal, " (", prop.name, ")");
}

}  // namespace

bool CudaBuiltIn() { return true; }

absl::StatusOr<std::unique_ptr<Device>> CudaDevice(int ordinal, const CudaOptions& options) {
  DAGRAD_ASSIGN_OR_RETURN(const int count, DeviceCount());
  if (ordinal < 0 || ordinal >= count) {
    return absl::InvalidArgumentError(
        absl::StrCat("CUDA device ", ordinal, " does not exist (", count, " visible)"));
  }
  DAGRAD_ASSIGN_OR_RETURN(const cudaDeviceProp prop, Properties(ordinal));
  int pools = 0;
  DAGRAD_CUDA_RETURN_IF_ERROR(
      cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, ordinal));
  if (!pools) {
    return absl::UnavailableError(absl::StrCat(
        DeviceName(ordinal, prop), " has no stream-ordered memory pools, which dagrad needs"));
  }
  DAGRAD_CUDA_RETURN_IF_ERROR(cudaSetDevice(ordinal));
  if (const cudaError_t image = ProbeKernelImage(); image != cudaSuccess) {
    cudaGetLastError();
    return absl::FailedPreconditionError(absl::StrCat(
        "dagrad's CUDA kernels were built for CMAKE_CUDA_ARCHITECTURES=",
        BuiltCudaArchitectures(), " and cannot run on ", DeviceName(ordinal, prop), ", sm_",
        prop.major, prop.minor, " (", cudaGetErrorName(image),
        "): rebuild with -DCMAKE_CUDA_ARCHITECTURES=", prop.major, prop.minor));
  }
  // Keep freed blocks in the pool instead of returning them to the driver
  // at every synchronisation: the executor frees scratch every run.
  cudaMemPool_t pool;
  DAGRAD_CUDA_RETURN_IF_ERROR(cudaDeviceGetDefaultMemPool(&pool, ordinal));
  uint64_t keep = ~uint64_t{0};
  DAGRAD_CUDA_RETURN_IF_ERROR(
      cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
  auto context = std::make_shared<CudaContext>();
  DAGRAD_RETURN_IF_ERROR(context->Init(ordinal, options.allow_tf32));
  return std::unique_ptr<Device>(
      new CudaDeviceImpl(std::move(context), DeviceName(ordinal, prop)));
}

std::vector<std::string> CudaDeviceNames() {
  std::vector<std::string> names;
  absl::StatusOr<int> count = DeviceCount();
  if (!count.ok()) return names;
  for (int i = 0; i < *count; ++i) {
    absl::StatusOr<cudaDeviceProp> prop = Properties(i);
    names.push_back(prop.ok() ? DeviceName(i, *prop)
                              : absl::StrCat("cuda:", i, " (", prop.status().message(), ")"));
  }
  return names;
}

std::string DescribeCuda() {
  int runtime = 0, driver = 0;
  const bool runtime_known = cudaRuntimeGetVersion(&runtime) == cudaSuccess;
  const bool driver_known = cudaDriverGetVersion(&driver) == cudaSuccess;
  // A driver version of 0 means no driver is installed.
  auto version = [](bool known, int v) {
    if (!known) return std::string("unknown");
    return v == 0 ? std::string("none") : absl::StrCat(v / 1000, ".", v % 1000 / 10);
  };
  std::string line =
      absl::StrCat("built in (CUDA runtime ", version(runtime_known, runtime), ", driver ",
                   version(driver_known, driver), ", ", CudaKernelCount(), " op kernels)");
  absl::StatusOr<int> count = DeviceCount();
  if (!count.ok()) return absl::StrCat(line, "; ", count.status().message());
  std::vector<std::string> devices;
  for (int i = 0; i < *count; ++i) {
    absl::StatusOr<cudaDeviceProp> prop = Properties(i);
    if (!prop.ok()) {
      devices.push_back(absl::StrCat("cuda:", i, " (", prop.status().message(), ")"));
      continue;
    }
    devices.push_back(absl::StrCat(DeviceName(i, *prop), ", sm_", prop->major, prop->minor, ", ",
                                   prop->totalGlobalMem >> 20, " MiB"));
  }
  return absl::StrCat(line, "; ", absl::StrJoin(devices, "; "));
}

absl::StatusOr<std::vector<double>> TimeOnDevice(const Device& device, int iterations,
                                                 const std::function<absl::Status()>& step) {
  const auto* cuda = dynamic_cast<const CudaDeviceImpl*>(&device);
  if (cuda == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("TimeOnDevice needs a CUDA device, got ", device.name()));
  }
  cudaStream_t stream = cuda->context().stream();
  DAGRAD_CUDA_RETURN_IF_ERROR(cudaSetDevice(cuda->context().ordinal()));
  cudaEvent_t start, stop;
  DAGRAD_CUDA_RETURN_IF_ERROR(cudaEventCreate(&start));
  std::unique_ptr<cudaEvent_t, void (*)(cudaEvent_t*)> start_guard(
      &start, [](cudaEvent_t* e) { cudaEventDestroy(*e); });
  DAGRAD_CUDA_RETURN_IF_ERROR(cudaEventCreate(&stop));
  std::unique_ptr<cudaEvent_t, void (*)(cudaEvent_t*)> stop_guard(
      &stop, [](cudaEvent_t* e) { cudaEventDestroy(*e); });
  std::vector<double> ms;
  for (int i = 0; i < iterations; ++i) {
    DAGRAD_CUDA_RETURN_IF_ERROR(cudaEventRecord(start, stream));
    DAGRAD_RETURN_IF_ERROR(step());
    DAGRAD_CUDA_RETURN_IF_ERROR(cudaEventRecord(stop, stream));
    DAGRAD_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(stop));
    float elapsed = 0;
    DAGRAD_CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&elapsed, start, stop));
    ms.push_back(elapsed);
  }
  return ms;
}

}  // namespace dagrad
