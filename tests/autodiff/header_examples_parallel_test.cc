// The examples of the data-parallel headers (engine/device/communicator.h,
// ops/autodiff/data_parallel.h, ops/collective.h), line for line, run in
// one process, where every sum over the ranks is the identity.
#include <memory>
#include <vector>

#include "engine/device/communicator.h"
#include "engine/executor.h"
#include "engine/status_macros.h"
#include "ops/autodiff/autodiff.h"
#include "ops/autodiff/data_parallel.h"
#include "ops/autodiff/optimizer.h"
#include "ops/collective.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"
#include "tests/support/header_examples.h"

namespace dagrad {
namespace {

HEADER_EXAMPLE(Communicator) {
  Graph g;
  std::shared_ptr<Communicator> comm = SingleProcessCommunicator();
  Executor exec(g, ExecutorOptions{.communicator = comm});
  // comm->rank() == 0, comm->size() == 1
  EXPECT_EQ(comm->rank(), 0);
  EXPECT_EQ(comm->size(), 1);
  return absl::OkStatus();
}

HEADER_EXAMPLE(DataParallelStep) {
  Graph g;
  Value x = g.Input("x", DType::kFloat32, {3});
  Value w = g.Parameter("w", {3}, Initializer::Ones());
  Value loss = Sum(x * w);
  std::shared_ptr<Communicator> comm = SingleProcessCommunicator();
  DAGRAD_ASSIGN_OR_RETURN(TrainingStep ts, BuildTrainingStep(loss, g.Parameters(),
      {.data_parallel = {.communicator = comm, .bucket_bytes = 1 << 20}}));
  Executor exec(g, {.communicator = comm});
  EXPECT_EQ(ts.num_buckets, 1);
  DAGRAD_ASSIGN_OR_RETURN(std::vector<Value> grads, Gradients(loss, {w}));
  DAGRAD_ASSIGN_OR_RETURN(std::vector<Value> global,
      ReduceGradients(grads, {.communicator = comm, .bucket_bytes = 1 << 20}));
  EXPECT_EQ(global[0].shape(), w.shape());
  return absl::OkStatus();
}

HEADER_EXAMPLE(Collectives) {
  Graph g;
  Value local_count = g.Input("count", DType::kFloat32, {});
  Value local_tokens = local_count;
  Value g1 = g.Input("g1", DType::kFloat32, {2, 3});
  Value g2 = g.Input("g2", DType::kFloat32, {6});
  Value dw = g1, db = g2;
  Value total = AllReduce(local_count);                 // () -> ()
  Value bucket = StartAllReduce({g1, g2}, 0, 6);        // g1 (2, 3), g2 (6,): first 6 of g2
  Value summed = WaitAllReduce(bucket);                 // (12,)
  Value global_tokens = AllReduce(local_tokens);   // () float32 on each rank
  Value started = StartAllReduce({dw, db}, 0, db.shape().num_elements());
  EXPECT_EQ(summed.shape(), Shape({12}));
  EXPECT_EQ(WaitAllReduce(started).shape(), Shape({12}));
  EXPECT_TRUE(total.ok() && global_tokens.ok());
  return absl::OkStatus();
}

HEADER_EXAMPLE(CollectiveWait) {
  Graph g;
  Value started = StartAllReduce({g.Input("x", DType::kFloat64, {4})}, 1, 3);
  Value summed = WaitAllReduce(started);
  EXPECT_EQ(summed.shape(), Shape({2}));
  return absl::OkStatus();
}

}  // namespace
}  // namespace dagrad
