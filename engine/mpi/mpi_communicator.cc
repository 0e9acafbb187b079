#include "engine/mpi/mpi_communicator.h"

#include <mpi.h>
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>  // Open MPI's MPIX_CUDA_AWARE_SUPPORT
#endif

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

namespace dagrad {
namespace {

// MPI counts are int: longer buffers go in chunks of this many elements.
constexpr int64_t kMaxChunk = INT_MAX;

absl::Status MpiError(const char* call, int code) {
  if (code == MPI_SUCCESS) return absl::OkStatus();
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  return absl::InternalError(absl::StrCat(call, " failed: ", std::string(text, length)));
}

absl::StatusOr<MPI_Datatype> MpiType(DType dtype) {
  if (absl::Status st = CheckReduceDType(dtype); !st.ok()) return st;
  return dtype == DType::kFloat32 ? MPI_FLOAT : MPI_DOUBLE;
}

std::string LibraryName() {
  char version[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  MPI_Get_library_version(version, &length);
  // "Open MPI v4.1.4, package: ...": the part before the first comma.
  const std::string text(version, length);
  return text.substr(0, text.find(','));
}

class Mpi final : public Communicator {
 public:
  explicit Mpi(MPI_Comm comm) : comm_(comm) {
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    name_ = absl::StrCat(LibraryName(), " (", size_, size_ == 1 ? " rank)" : " ranks)");
  }
  ~Mpi() override {
    for (auto& [data, requests] : pending_) {
      MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE);
    }
    MPI_Comm_free(&comm_);
    MPI_Finalize();
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string name() const override { return name_; }
  bool accepts_device_memory() const override {
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
    return MPIX_Query_cuda_support() == 1;
#else
    return false;
#endif
  }

  absl::Status AllReduceSum(const ReduceBuffer& b) override {
    auto type = MpiType(b.dtype);
    if (!type.ok()) return type.status();
    for (int64_t at = 0; at < b.count; at += kMaxChunk) {
      const int n = static_cast<int>(std::min(kMaxChunk, b.count - at));
      if (absl::Status st = MpiError("MPI_Allreduce",
                                     MPI_Allreduce(MPI_IN_PLACE, At(b, at), n, *type, MPI_SUM,
                                                   comm_));
          !st.ok()) {
        return st;
      }
    }
    return absl::OkStatus();
  }

  absl::Status StartAllReduceSum(const ReduceBuffer& b) override {
    auto type = MpiType(b.dtype);
    if (!type.ok()) return type.status();
    // A run that failed between a start and its wait left a request on
    // these bytes: it completes first.
    if (absl::Status st = WaitAllReduce(b.data); !st.ok() && !absl::IsFailedPrecondition(st)) {
      return st;
    }
    std::vector<MPI_Request>& requests = pending_[b.data];
    for (int64_t at = 0; at < b.count; at += kMaxChunk) {
      const int n = static_cast<int>(std::min(kMaxChunk, b.count - at));
      requests.emplace_back();
      if (absl::Status st = MpiError("MPI_Iallreduce",
                                     MPI_Iallreduce(MPI_IN_PLACE, At(b, at), n, *type, MPI_SUM,
                                                    comm_, &requests.back()));
          !st.ok()) {
        requests.pop_back();
        return st;
      }
    }
    Progress();
    return absl::OkStatus();
  }

  absl::Status WaitAllReduce(void* data) override {
    auto it = pending_.find(data);
    if (it == pending_.end()) {
      return absl::FailedPreconditionError("wait for an all-reduce that was not started");
    }
    std::vector<MPI_Request> requests = std::move(it->second);
    pending_.erase(it);
    return MpiError("MPI_Waitall", MPI_Waitall(static_cast<int>(requests.size()),
                                               requests.data(), MPI_STATUSES_IGNORE));
  }

  absl::Status Broadcast(void* data, int64_t bytes, int root) override {
    for (int64_t at = 0; at < bytes; at += kMaxChunk) {
      const int n = static_cast<int>(std::min(kMaxChunk, bytes - at));
      if (absl::Status st = MpiError("MPI_Bcast", MPI_Bcast(static_cast<char*>(data) + at, n,
                                                            MPI_BYTE, root, comm_));
          !st.ok()) {
        return st;
      }
    }
    return absl::OkStatus();
  }

  [[noreturn]] void Abort(int code) override {
    MPI_Abort(comm_, code);
    std::_Exit(code);  // MPI_Abort does not return; should it, exit anyway
  }

 private:
  static void* At(const ReduceBuffer& b, int64_t element) {
    return static_cast<char*>(b.data) + element * static_cast<int64_t>(SizeOf(b.dtype));
  }
  // Progress lets the library move the pending sums along: Open MPI's
  // non-blocking collectives advance inside MPI calls.
  void Progress() {
    for (auto& [data, requests] : pending_) {
      int done = 0;
      MPI_Testall(static_cast<int>(requests.size()), requests.data(), &done,
                  MPI_STATUSES_IGNORE);
    }
  }

  MPI_Comm comm_;
  int rank_ = 0, size_ = 1;
  std::string name_;
  absl::flat_hash_map<void*, std::vector<MPI_Request>> pending_;
};

}  // namespace

bool LaunchedByMpi() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMIX_RANK") != nullptr;
}

absl::StatusOr<std::shared_ptr<Communicator>> MpiCommunicator() {
  // One communicator per process: MPI is finalised with it.
  static std::weak_ptr<Communicator> live;
  if (std::shared_ptr<Communicator> existing = live.lock()) return existing;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return absl::InternalError("MPI was finalised already in this process");
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    if (absl::Status st = MpiError("MPI_Init_thread", MPI_Init_thread(nullptr, nullptr,
                                                                      MPI_THREAD_FUNNELED,
                                                                      &provided));
        !st.ok()) {
      return st;
    }
  }
  MPI_Comm comm;
  if (absl::Status st = MpiError("MPI_Comm_dup", MPI_Comm_dup(MPI_COMM_WORLD, &comm)); !st.ok()) {
    return st;
  }
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  std::shared_ptr<Communicator> made = std::make_shared<Mpi>(comm);
  live = made;
  return made;
}

}  // namespace dagrad
