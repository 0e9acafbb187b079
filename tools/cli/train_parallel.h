// tools/cli/train_parallel.h
//
// `dagrad train` as one rank of a data-parallel job: launched by `mpirun -np
// N dagrad train ...` (or srun), every rank trains on its slice of the
// global batch (models/toy/toy_trainer.h, gpt_trainer.h); rank 0 alone prints
// progress and writes the files. A rank that fails prints its error with its rank and
// ends the whole job (Communicator::Abort), so none waits forever.

#ifndef DAGRAD_TOOLS_CLI_TRAIN_PARALLEL_H_
#define DAGRAD_TOOLS_CLI_TRAIN_PARALLEL_H_

#include <map>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "engine/device/communicator.h"
#include "engine/executor.h"

namespace dagrad::cli {

// Job is the job this process is a rank of.
struct Job {
  std::shared_ptr<Communicator> comm;  // null: a process on its own
  int rank = 0, size = 1;
  // agreed_stop: the run ended where every rank ends it (a non-finite
  // step: its loss and gradient norm are the job's; configs that differ),
  // so no rank need abort the others.
  bool agreed_stop = false;

  // writer: this rank prints and writes files (rank 0).
  bool writer() const { return rank == 0; }
  bool parallel() const { return comm != nullptr; }
};

// JoinJob returns the MPI job this process was launched in, or a job of
// its own. FailedPrecondition when an MPI launcher started it but dagrad
// was built without MPI (each rank would train alone over the same files).
absl::StatusOr<Job> JoinJob();

// CheckSameConfig compares every rank's `config` (flag name -> value) with
// rank 0's. InvalidArgument on every rank when any differs, listing this
// rank's differences ("dim: rank 0 128, rank 1 64").
absl::Status CheckSameConfig(const Job& job, const std::map<std::string, std::string>& config);

// AgreedStopSignal returns the stop signal any rank received (0: none), the
// same on every rank, so that all stop after the same step.
int AgreedStopSignal(const Job& job, int local_signal);

// StepProfile is what `--profile` prints after training: the profiled
// training step by op and, in a data-parallel job, how much of the step
// waited on the gradient all-reduce (the all_reduce_wait and all_reduce
// ops' time).
std::string StepProfile(const OpProfile& profile, const Job& job);

}  // namespace dagrad::cli

#endif  // DAGRAD_TOOLS_CLI_TRAIN_PARALLEL_H_
