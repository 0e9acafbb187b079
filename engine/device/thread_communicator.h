// engine/device/thread_communicator.h
//
// ThreadCommunicators: the ranks of a data-parallel job as threads of one
// process. Each thread trains a replica of the model on its share of the
// global batch with one compute thread, and the replicas sum their
// gradients once per step (in buckets) through shared memory. On a machine
// whose cores other processes also want, this keeps each thread working
// alone for a whole step, where one model's kernels split over threads wait
// at every kernel's end for a thread that lost its core
// (tools/bench/PERFORMANCE.md, issue 38); `dagrad train --replicas=N`.
//
// Every rank must make the same collective calls in the same order, as
// with MPI. A rank whose communicator is destroyed leaves the group: a
// collective that waits for it, or starts after, fails with Aborted naming
// that rank on every other rank, instead of waiting for ever.
//
//   std::vector<std::shared_ptr<Communicator>> ranks = ThreadCommunicators(2);
//   // ranks[1]->rank() == 1, ranks[1]->size() == 2: hand ranks[r] to the
//   // trainer of thread r (DataParallelOptions::communicator).

#ifndef DAGRAD_ENGINE_DEVICE_THREAD_COMMUNICATOR_H_
#define DAGRAD_ENGINE_DEVICE_THREAD_COMMUNICATOR_H_

#include <functional>
#include <memory>
#include <vector>

#include "engine/device/communicator.h"

namespace dagrad {

// ThreadCommunicators returns the `size` ranks (>= 1) of one group, by rank.
// Sums add the ranks' elements in rank order, so every rank gets the same
// bits. Abort exits the process (the job). name(): "threads (N ranks)".
std::vector<std::shared_ptr<Communicator>> ThreadCommunicators(int size);

// OnThreadRanks runs body(rank) for each of the `size` ranks (>= 1) of a
// fresh group, each on a thread of its own, and returns when all have.
// Each thread alone holds its rank, so a body that returns early leaves the
// group: the others' collectives fail instead of waiting for it.
//
//   std::vector<int> seen(2);
//   OnThreadRanks(2, [&](std::shared_ptr<Communicator> rank) { seen[rank->rank()] = 1; });
void OnThreadRanks(int size, const std::function<void(std::shared_ptr<Communicator>)>& body);

}  // namespace dagrad

#endif  // DAGRAD_ENGINE_DEVICE_THREAD_COMMUNICATOR_H_
