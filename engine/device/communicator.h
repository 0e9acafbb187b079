// engine/device/communicator.h
//
// Communicator: the collectives that data-parallel training needs, between
// the processes ("ranks") of one job. It is a runtime service like a
// Device: the executor hands it to kernels (RunContext::communicator), and
// the collective ops (ops/collective.h) call it. An executor without one
// gets the single-process communicator, for which every collective is the
// identity, so a graph holding collectives runs (and gradchecks) alone.
//
// Implementations: SingleProcessCommunicator below; Open MPI's in
// engine/mpi/mpi_communicator.h (built with DAGRAD_HAVE_MPI). An NCCL one
// is one more file: it would accept device memory and order its work on
// the buffer's stream (ReduceBuffer::stream).
//
//   std::shared_ptr<Communicator> comm = SingleProcessCommunicator();
//   Executor exec(g, ExecutorOptions{.communicator = comm});
//   // comm->rank() == 0, comm->size() == 1

#ifndef DAGRAD_ENGINE_DEVICE_COMMUNICATOR_H_
#define DAGRAD_ENGINE_DEVICE_COMMUNICATOR_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "engine/dtype.h"

namespace dagrad {

// ReduceBuffer: `count` elements of `dtype` (float32 or float64) at `data`,
// reduced in place. `stream` is the device queue the bytes are ordered on
// (a cudaStream_t) when `data` is device memory, null for host memory.
struct ReduceBuffer {
  void* data = nullptr;
  int64_t count = 0;
  DType dtype = DType::kFloat32;
  void* stream = nullptr;
};

class Communicator {
 public:
  virtual ~Communicator() = default;

  // rank is this process's index in [0, size()).
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // name says what carries the collectives: "single process", "Open MPI
  // 4.1.4 (2 ranks)".
  virtual std::string name() const = 0;
  // accepts_device_memory: ReduceBuffer::data may point to GPU memory
  // (CUDA-aware MPI, NCCL). When false, a device kernel stages the bytes
  // through host memory.
  virtual bool accepts_device_memory() const { return false; }

  // AllReduceSum replaces the buffer, on every rank, with the elementwise
  // sum of every rank's buffer; it returns when the sum is there. Every
  // rank must call it with the same count and dtype. Errors: InvalidArgument
  // for a dtype that is not float32 or float64; Internal for a failure of
  // the transport, naming it.
  virtual absl::Status AllReduceSum(const ReduceBuffer& buffer) = 0;
  // StartAllReduceSum begins the same sum and returns at once; the bytes
  // must not be read or written until WaitAllReduce(buffer.data) returns.
  // Collectives must be started in the same order on every rank.
  virtual absl::Status StartAllReduceSum(const ReduceBuffer& buffer) = 0;
  // WaitAllReduce returns when the sum started on `data` is there.
  // FailedPrecondition when none was started on it.
  virtual absl::Status WaitAllReduce(void* data) = 0;
  // Broadcast copies `bytes` bytes at `data` from rank `root` to every rank.
  virtual absl::Status Broadcast(void* data, int64_t bytes, int root) = 0;
  // Abort ends every rank of the job with exit status `code`, at once (a
  // failure on one rank must not leave the others waiting). The
  // single-process communicator exits this process.
  [[noreturn]] virtual void Abort(int code) = 0;
};

// CheckReduceDType is OK for float32 and float64, the dtypes an all-reduce
// sums, and InvalidArgument naming any other: every communicator's check.
absl::Status CheckReduceDType(DType dtype);

// SumAtStartCommunicator is a Communicator whose StartAllReduceSum does the
// whole AllReduceSum at once and whose WaitAllReduce checks only that a sum
// was started on the buffer (FailedPrecondition else, as with MPI): the
// single-process communicator's and ThreadCommunicators' way.
class SumAtStartCommunicator : public Communicator {
 public:
  absl::Status StartAllReduceSum(const ReduceBuffer& buffer) final;
  absl::Status WaitAllReduce(void* data) final;

 private:
  absl::flat_hash_set<void*> started_;
};

// SingleProcessCommunicator returns the communicator of a job of one rank:
// every collective leaves the buffer as it is.
std::shared_ptr<Communicator> SingleProcessCommunicator();

}  // namespace dagrad

#endif  // DAGRAD_ENGINE_DEVICE_COMMUNICATOR_H_
