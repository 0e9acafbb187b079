#include "tools/cli/train_parallel.h"

#include <cstdlib>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "engine/status_macros.h"
#if DAGRAD_HAVE_MPI
#include "engine/mpi/mpi_communicator.h"
#endif

namespace dagrad::cli {

absl::StatusOr<Job> JoinJob() {
#if DAGRAD_HAVE_MPI
  if (!LaunchedByMpi()) return Job{};
  DAGRAD_ASSIGN_OR_RETURN(std::shared_ptr<Communicator> comm, MpiCommunicator());
  return Job{comm, comm->rank(), comm->size()};
#else
  int size = 1;
  const char* world = std::getenv("OMPI_COMM_WORLD_SIZE");
  if (world != nullptr && absl::SimpleAtoi(world, &size) && size > 1) {
    return absl::FailedPreconditionError(absl::StrCat(
        "launched as one of ", size,
        " MPI ranks, but this dagrad was built without MPI (-DDAGRAD_MPI=ON needs "
        "libopenmpi-dev)"));
  }
  return Job{};
#endif
}

}  // namespace dagrad::cli
