// models/parallel_job.h
//
// A data-parallel training job: N processes (ranks), launched by `mpirun -np
// N` (or srun), each training on its slice of the global batch over a
// Communicator (engine/device/communicator.h; the MPI one is
// engine/mpi/mpi_communicator.h). Rank 0 alone prints and writes files. What
// the ranks must agree on before and while they train is here: the same
// configuration, and the same stop.
//
//   Job job{comm, comm->rank(), comm->size()};
//   DAGRAD_RETURN_IF_ERROR(CheckSameConfig(job, {{"dim", "128"}, {"lr", "0.001"}}));
//   const bool stop = AgreedStopSignal(job, StopSignal()) != 0;   // models/stop_signals.h

#ifndef DAGRAD_MODELS_PARALLEL_JOB_H_
#define DAGRAD_MODELS_PARALLEL_JOB_H_

#include <map>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "engine/device/communicator.h"
#include "engine/executor.h"

namespace dagrad::models {

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

}  // namespace dagrad::models

#endif  // DAGRAD_MODELS_PARALLEL_JOB_H_
