// ops/autodiff/data_parallel.h
//
// Data parallelism as graph: every rank runs the same training step on its
// slice of the global batch, and the gradients are summed over the ranks
// before clipping and the update, so that the gradient norm, the clipping
// and the optimizer see the job's gradient (BuildTrainingStep does this
// when OptimizerOptions::data_parallel has a communicator).
//
// As PyTorch DDP, the gradients are packed into buckets of about
// bucket_bytes, in the order backward produces them (a bucket may split a
// parameter's gradient, and a gradient larger than a bucket spans several);
// each bucket's sum starts (ops/collective.h: StartAllReduce, an early op)
// as soon as backward has produced all of its gradients, so it overlaps
// the rest of backward, and is waited for before the clipping.
//
// The gradients are summed, not averaged: each rank's loss must be its
// share of the job's loss (its sum over its targets divided by the job's
// count of targets, AllReduce of the local count), as ToyTrainer builds it.
//
//   // setup: Model
//   DAGRAD_ASSIGN_OR_RETURN(TrainingStep ts, BuildTrainingStep(loss, g.Parameters(),
//       {.data_parallel = {.communicator = comm, .bucket_bytes = 1 << 20}}));
//   Executor exec(g, {.communicator = comm});

#ifndef DAGRAD_OPS_AUTODIFF_DATA_PARALLEL_H_
#define DAGRAD_OPS_AUTODIFF_DATA_PARALLEL_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/device/communicator.h"
#include "engine/graph.h"

namespace dagrad {

struct DataParallelOptions {
  // communicator: set, the training step sums its gradients over the
  // ranks; the executor that runs it must have the same one
  // (ExecutorOptions::communicator). Null: one process, nothing is added.
  std::shared_ptr<Communicator> communicator;
  // bucket_bytes (>= 1): gradient bytes per bucket (the last one of each
  // dtype smaller).
  int64_t bucket_bytes = 4 << 20;
  // overlap: start each bucket's sum as soon as its gradients exist. false:
  // sum every bucket after backward (a blocking AllReduce each), to measure
  // what the overlap saves.
  bool overlap = true;
};

// ReduceGradients returns grads[i] summed over the ranks, for each i, in
// grads[i]'s shape and dtype, built under the scope "data_parallel" as
// NodeRole::kCommunication nodes. Null gradients stay null. `num_buckets`,
// when set, receives the count of buckets. Errors: bucket_bytes < 1; a
// gradient that is not float32/float64 or holds an error.
//
//   DAGRAD_ASSIGN_OR_RETURN(std::vector<Value> global,
//       ReduceGradients(grads, {.communicator = comm, .bucket_bytes = 1 << 20}));
absl::StatusOr<std::vector<Value>> ReduceGradients(const std::vector<Value>& grads,
                                                   const DataParallelOptions& options,
                                                   int* num_buckets = nullptr);

}  // namespace dagrad

#endif  // DAGRAD_OPS_AUTODIFF_DATA_PARALLEL_H_
