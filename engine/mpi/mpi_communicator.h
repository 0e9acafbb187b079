// engine/mpi/mpi_communicator.h
//
// The Communicator (engine/device/communicator.h) over MPI, for data parallelism
// across processes and machines: a job launched by `mpirun -np N`, Slurm's
// `srun`, or `mpirun -H host1,host2`. Built when Open MPI is found
// (-DDAGRAD_MPI=AUTO|ON|OFF; DAGRAD_HAVE_MPI); no MPI type appears here,
// so the header needs no mpi.h.
//
// Collectives run on a duplicate of MPI_COMM_WORLD whose errors return
// (MPI_ERRORS_RETURN) as Internal statuses naming the call. A rank that
// dies ends the job: mpirun kills the others, and a rank that fails calls
// Abort, so none waits forever in a collective.
//
//   if (LaunchedByMpi()) {
//     DAGRAD_ASSIGN_OR_RETURN(std::shared_ptr<Communicator> comm, MpiCommunicator());
//     std::cout << "rank " << comm->rank() << " of " << comm->size() << "\n";
//   }

#ifndef DAGRAD_ENGINE_MPI_MPI_COMMUNICATOR_H_
#define DAGRAD_ENGINE_MPI_MPI_COMMUNICATOR_H_

#include <memory>

#include "absl/status/statusor.h"
#include "engine/device/communicator.h"

namespace dagrad {

// LaunchedByMpi says whether this process is one rank of a job that an MPI
// launcher started (Open MPI's OMPI_COMM_WORLD_SIZE or PMIx's PMIX_RANK is
// set).
//
//   const bool distributed = LaunchedByMpi();
bool LaunchedByMpi();

// MpiCommunicator initialises MPI once per process (MPI_Init_thread,
// funneled: only the calling thread talks to MPI) and returns the
// communicator of MPI_COMM_WORLD; MPI is finalised when the last one is
// destroyed. Internal when MPI cannot be initialised (or was finalised).
//
//   DAGRAD_ASSIGN_OR_RETURN(std::shared_ptr<Communicator> comm, MpiCommunicator());
absl::StatusOr<std::shared_ptr<Communicator>> MpiCommunicator();

}  // namespace dagrad

#endif  // DAGRAD_ENGINE_MPI_MPI_COMMUNICATOR_H_
