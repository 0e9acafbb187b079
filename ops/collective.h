// ops/collective.h
//
// Collectives as graph: the sum of a tensor over the processes ("ranks") of
// a data-parallel job, through the executor's Communicator
// (engine/device/communicator.h; ExecutorOptions::communicator). With one process
// each is the identity, so a graph holding them runs and gradchecks alone.
//
// AllReduce is the blocking form. StartAllReduce / WaitAllReduce split it
// in two, as PyTorch DDP's buckets do: the start packs a run of gradients
// into one flat buffer and begins a non-blocking sum (MPI_Iallreduce); it is
// an early op (OpDef::early), which the planner runs as soon as its inputs
// are ready, so the transfer overlaps the rest of backward; the wait, which
// nothing needs before the gradient clipping and the updates, returns the
// sum. BuildTrainingStep builds them (ops/autodiff/data_parallel.h).
//
//   Value total = AllReduce(local_count);                 // () -> ()
//   Value bucket = StartAllReduce({g1, g2}, 0, 6);        // g1 (2, 3), g2 (6,): first 6 of g2
//   Value summed = WaitAllReduce(bucket);                 // (12,)
//
// Errors (in the returned Value): inputs that are not float32/float64 or
// of different dtypes; a range that is empty or outside the inputs. At run
// time: the communicator's (a transport failure, naming it).

#ifndef DAGRAD_OPS_COLLECTIVE_H_
#define DAGRAD_OPS_COLLECTIVE_H_

#include <cstdint>
#include <vector>

#include "engine/graph.h"

namespace dagrad {

// AllReduce returns the elementwise sum of x over every rank: x (...) float
// -> (...). Every rank must build and run it alike. Its gradient is the
// all-reduce of the incoming gradient (each rank's loss is one term of the
// job's loss).
//
//   Value global_tokens = AllReduce(local_tokens);   // () float32 on each rank
Value AllReduce(Value x);

// StartAllReduce packs `values` (float, one dtype), flattened, one after
// another, into a 1-D buffer and starts its sum over the ranks: of the first
// value only the elements from `first_begin` on, of the last only those
// before `last_end` (a bucket that splits a parameter's gradient), of the
// others all. Returns the buffer, to be given to WaitAllReduce only.
//
//   Value started = StartAllReduce({dw, db}, 0, db.shape().num_elements());
Value StartAllReduce(const std::vector<Value>& values, int64_t first_begin, int64_t last_end);

// WaitAllReduce waits for the sum StartAllReduce began and returns it:
// (n,) -> (n,).
//
//   Value summed = WaitAllReduce(started);
Value WaitAllReduce(Value started);

}  // namespace dagrad

#endif  // DAGRAD_OPS_COLLECTIVE_H_
