#include "engine/device/communicator.h"

#include <cstdlib>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"

namespace dagrad {
namespace {

absl::Status CheckReduceDType(DType dtype) {
  if (dtype == DType::kFloat32 || dtype == DType::kFloat64) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "all-reduce sums float32 or float64, got ", DTypeName(dtype)));
}

// One rank: the sum over ranks is the buffer itself. Started reductions are
// remembered so that a wait without a start is the error it is with MPI.
class SingleProcess final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string name() const override { return "single process"; }
  bool accepts_device_memory() const override { return true; }

  absl::Status AllReduceSum(const ReduceBuffer& buffer) override {
    return CheckReduceDType(buffer.dtype);
  }
  absl::Status StartAllReduceSum(const ReduceBuffer& buffer) override {
    if (absl::Status st = CheckReduceDType(buffer.dtype); !st.ok()) return st;
    started_.insert(buffer.data);
    return absl::OkStatus();
  }
  absl::Status WaitAllReduce(void* data) override {
    if (started_.erase(data) == 0) {
      return absl::FailedPreconditionError("wait for an all-reduce that was not started");
    }
    return absl::OkStatus();
  }
  absl::Status Broadcast(void*, int64_t, int root) override {
    if (root != 0) {
      return absl::InvalidArgumentError(absl::StrCat("broadcast from rank ", root, " of 1"));
    }
    return absl::OkStatus();
  }
  [[noreturn]] void Abort(int code) override { std::exit(code); }

 private:
  absl::flat_hash_set<void*> started_;
};

}  // namespace

std::shared_ptr<Communicator> SingleProcessCommunicator() {
  return std::make_shared<SingleProcess>();
}

}  // namespace dagrad
