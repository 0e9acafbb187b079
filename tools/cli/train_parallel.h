// tools/cli/train_parallel.h
//
// `dagrad train` as one rank of a data-parallel job (models/parallel_job.h):
// launched by `mpirun -np N dagrad train ...` (or srun), every rank trains on
// its slice of the global batch; rank 0 alone prints progress and writes the
// files. A rank that fails prints its error with its rank and ends the
// whole job (Communicator::Abort), so none waits forever.

#ifndef DAGRAD_TOOLS_CLI_TRAIN_PARALLEL_H_
#define DAGRAD_TOOLS_CLI_TRAIN_PARALLEL_H_

#include "absl/status/statusor.h"
#include "models/parallel_job.h"

namespace dagrad::cli {

using models::Job;

// JoinJob returns the MPI job this process was launched in, or a job of
// its own. FailedPrecondition when an MPI launcher started it but dagrad
// was built without MPI (each rank would train alone over the same files).
absl::StatusOr<Job> JoinJob();

}  // namespace dagrad::cli

#endif  // DAGRAD_TOOLS_CLI_TRAIN_PARALLEL_H_
