#include "engine/device/communicator.h"

#include <cstdlib>

#include "absl/strings/str_cat.h"

namespace dagrad {

absl::Status CheckReduceDType(DType dtype) {
  if (dtype == DType::kFloat32 || dtype == DType::kFloat64) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "all-reduce sums float32 or float64, got ", DTypeName(dtype)));
}

absl::Status SumAtStartCommunicator::StartAllReduceSum(const ReduceBuffer& buffer) {
  if (absl::Status st = AllReduceSum(buffer); !st.ok()) return st;
  started_.insert(buffer.data);
  return absl::OkStatus();
}

absl::Status SumAtStartCommunicator::WaitAllReduce(void* data) {
  if (started_.erase(data) == 0) {
    return absl::FailedPreconditionError("wait for an all-reduce that was not started");
  }
  return absl::OkStatus();
}

namespace {

// One rank: the sum over ranks is the buffer itself.
class SingleProcess final : public SumAtStartCommunicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string name() const override { return "single process"; }
  bool accepts_device_memory() const override { return true; }

  absl::Status AllReduceSum(const ReduceBuffer& buffer) override {
    return CheckReduceDType(buffer.dtype);
  }
  absl::Status Broadcast(void*, int64_t, int root) override {
    if (root != 0) {
      return absl::InvalidArgumentError(absl::StrCat("broadcast from rank ", root, " of 1"));
    }
    return absl::OkStatus();
  }
  [[noreturn]] void Abort(int code) override { std::exit(code); }
};

}  // namespace

std::shared_ptr<Communicator> SingleProcessCommunicator() {
  return std::make_shared<SingleProcess>();
}

}  // namespace dagrad
