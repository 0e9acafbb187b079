// engine/executor.h
//
// Executor: compiles sets of fetches into Plans and runs them on a device,
// holding the graph's variables (parameters, optimizer state) between runs.
// A plan is made once and run many times with new feeds; nothing is
// re-planned or re-allocated per run.
//
//   Executor exec(g);                              // CPU, seed 0
//   DAGRAD_ASSIGN_OR_RETURN(auto plan, exec.Compile({loss}, {update}));
//   for (uint64_t step = 0; step < n; ++step) {
//     DAGRAD_ASSIGN_OR_RETURN(auto out,
//         exec.Run(*plan, {{tokens, batch}}, {.training = true, .step = step}));
//     float l = out[0].data<float>()[0];
//   }
//
// Variables are initialised from their initializers the first time a run
// needs them (or by InitializeVariables), and can be read and assigned by
// Value.
//
// A Run is a transaction, and its fetches show the values before its
// updates, as the loss and activations of a PyTorch step precede
// optimizer.step():
//   - a Run that returns an error has changed no variable, so a retry with
//     corrected feeds applies the step exactly once. Feeds, and what ops
//     that write variables would reject in them (Adam's step), are checked
//     before any kernel runs; every op that writes a variable runs after
//     every other op of the plan (whatever the order the graph was built
//     in; Compile rejects an op that takes an update's output), so a
//     kernel that fails on its data (an index out of range, an integer
//     division by zero) fails before any update, and on the host what an
//     update would reject in an input computed by the graph (a WriteAt's
//     start) is checked before the first update runs. A device that reports
//     such errors at the end (CUDA) is waited for before the updates are
//     queued; there an update's own kernel checks its computed inputs, so
//     the updates before it have been written.
//   - a fetched variable, or a view of one (Reshape, a contiguous Slice),
//     shows the value before the run's updates, like any computed fetch;
//     Read returns the value after them.
//
// Threads: an Executor, and the plans it compiled, serve one thread at a
// time (Compile, Run, Read and Assign take no lock). Two models run at once
// from two threads with an Executor each; their CPU kernels share one pool
// and one thread count (ops/cpu/cpu_threads.h).
//
// On a CUDA device (engine/cuda/cuda_device.h) the same code runs the
// whole plan on the GPU: fed host tensors are copied in through the plan's
// page-locked staging, with copies that do not wait, tensors uploaded
// once (Upload, DeviceFeeds) are read where they are, kernels are queued
// on the device's stream, and Run waits at the end before copying the
// fetches back; a data error a kernel finds there (an index out of range) fails
// the run as the CPU kernel's error would. A plan with updates waits once
// more, before queuing them, so that such an error leaves the variables as
// they were. The second run of a plan (per RunOptions::training) is
// recorded as a CUDA graph (two: the updates apart) and later runs replay
// it: one launch per step, or two, instead of one per kernel. A plan
// holding a collective op (OpDef::collective), which waits for other
// processes from the host, is never recorded.
//
//   DAGRAD_ASSIGN_OR_RETURN(std::unique_ptr<Device> gpu, CudaDevice());
//   Executor exec(g, std::move(gpu));

#ifndef DAGRAD_ENGINE_EXECUTOR_H_
#define DAGRAD_ENGINE_EXECUTOR_H_

#include <atomic>
#include <string>
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "engine/device/communicator.h"
#include "engine/device/device.h"
#include "engine/graph.h"
#include "engine/plan/memory_budget.h"
#include "engine/plan/planner.h"
#include "engine/tensor.h"

namespace dagrad {

struct ExecutorOptions {
  uint64_t seed = 0;            // variable initialisation and dropout
  bool check_numerics = false;  // stop at the first node producing NaN/Inf
  // Upper bound on device bytes for arenas, variables and constants
  // (a plan's folded constants included, on the host as on a device);
  // 0 means none. Compile adds up what the plan will allocate (its arena,
  // the variables it touches not yet allocated, `reserved`) with checked
  // arithmetic and, before allocating any of it, compares that with this
  // limit less what is in use and, on a host device with
  // check_host_memory, with what the host may still give (MemAvailable,
  // the cgroup's limit: engine/plan/host_memory.h). Over either is
  // ResourceExhausted naming the need, the limit and the biggest buffers
  // (engine/plan/memory_budget.h).
  int64_t memory_limit_bytes = 0;
  // poison_arena fills every plan's arena with 0xFF bytes (NaN as float32
  // and float64) before each run, so that a kernel that leaves part of its
  // output unwritten shows up as NaN instead of reading stale values.
  // For tests: it costs one memset of the arena per run.
  bool poison_arena = false;
  // synchronize_each_kernel waits for the device after every kernel and
  // reports its errors against that node. On a device that runs kernels
  // asynchronously (CUDA) an error otherwise surfaces at the end of the run
  // without the node that caused it; this finds the node, slowly.
  bool synchronize_each_kernel = false;
  // profile times every kernel (waiting for the device after each) and
  // adds the times to the plan's OpProfile, by op.
  bool profile = false;
  // record_runs lets a device that can (CUDA) record a plan's second run,
  // once per value of RunOptions::training (the first warms up), and replay
  // the recording on later runs instead of queuing every kernel again. check_numerics,
  // synchronize_each_kernel and profile need the host between kernels and
  // turn it off.
  bool record_runs = true;
  PlanOptions plan;
  // check_host_memory: Compile also compares what it will allocate on the
  // host (a CPU plan, folded constants) with what the host may still give.
  bool check_host_memory = true;
  // reserved: what the caller will allocate beside the executor (a data
  // set), counted in every Compile's budget and named in its message.
  MemoryBudget reserved;
  // memory_shares: how many executors of the process (its thread replicas)
  // share memory_limit_bytes and the host's room: each is held to 1/N of
  // both, and the message says so.
  int memory_shares = 1;
  // communicator: what the collective ops (ops/collective.h) reduce over;
  // null: SingleProcessCommunicator(), for which they are the identity.
  std::shared_ptr<Communicator> communicator;
};

// OpProfile is where a plan's runs spent their time, per op name.
struct OpProfile {
  struct Entry {
    double seconds = 0;
    int64_t calls = 0;
  };
  absl::flat_hash_map<std::string, Entry> by_op;
  // by_step[i] times step i of the plan (ExecutionPlan::steps[i]): seconds
  // summed over the runs, and, in the last run, when it began (seconds of
  // the steady clock) and how long it took; for the viewer and the trace
  // (engine/view/). A run that fails adds nothing.
  struct StepTime {
    double seconds = 0;
    double last_start = 0;
    double last_seconds = 0;
  };
  std::vector<StepTime> by_step;
  int64_t runs = 0;

  // AddRun adds the times of one run that succeeded (`run`, one time per
  // step): a failed run adds nothing, so that its partial times neither
  // count nor mix with the last run's.
  void AddRun(const OpProfile& run);

  // ToString lists ops by total time: name, ms per run, share, calls per run.
  std::string ToString() const;
};

struct RunOptions {
  bool training = false;  // dropout active
  // step is the counter of the ops that draw (dropout masks, Multinomial):
  // runs of one seed and step draw the same numbers. Unset, the executor
  // counts its runs itself, so that every run draws afresh, as PyTorch's
  // generator does; a trainer sets it to the training step, so that a
  // resumed run draws what the uninterrupted one would have.
  std::optional<uint64_t> step;
  // Data parallelism: the fed batch is rows [batch_begin, batch_begin +
  // batch_rows) of the global batch (RunContext); 0 rows: all of it.
  int64_t batch_begin = 0;
  int64_t batch_rows = 0;
};

// Feeds pairs each input Value with its tensor for one run.
using Feeds = std::vector<std::pair<Value, Tensor>>;

class Executor;

// DeviceTensor is a tensor an executor holds on its device
// (Executor::Upload), which runs read where it is instead of a fed host
// tensor (DeviceFeeds): data copied to the device once, not at every run.
// On an executor of the CPU it is a copy in host memory. Copies share the
// buffer, which lives as long as one of them (the executor may go first).
class DeviceTensor {
 public:
  DeviceTensor() = default;
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  // TypeString is "float32 (2, 3)", as Tensor's.
  std::string TypeString() const;

 private:
  friend class Executor;
  std::shared_ptr<void> data_;
  DType dtype_ = DType::kFloat32;
  Shape shape_;
  uint64_t owner_ = 0;  // the id of the executor that uploaded it; 0: none
};

// DeviceFeeds pairs input Values with tensors already on the device.
using DeviceFeeds = std::vector<std::pair<Value, DeviceTensor>>;

// VariableReservation is a variable that a compiled plan reads and no run
// has made yet: its bytes, counted in the executor's bytes_in_use while a
// plan that reads it lives (the plans share it) and until the variable is
// made, when `counted` goes.
struct VariableReservation {
  int64_t bytes = 0;
  std::shared_ptr<void> counted;
};

// Plan is a compiled set of fetches, with its arena, bound to one executor.
class Plan {
 public:
  const ExecutionPlan& info() const { return info_; }
  int64_t peak_bytes() const { return info_.arena_bytes; }
  int64_t intermediate_bytes() const { return info_.intermediate_bytes; }
  // profile is filled by runs of an executor with ExecutorOptions::profile.
  const OpProfile& profile() const { return profile_; }
  // replays counts the runs that replayed a recording of an earlier run
  // (ExecutorOptions::record_runs); recording_failure says why the device,
  // which records runs, could not record this plan's (OK otherwise).
  int64_t replays() const { return replays_; }
  const absl::Status& recording_failure() const { return recording_failure_; }

 private:
  friend class Executor;
  // A recorded run, valid while every storage root is where it was and
  // the batch rows are those it was recorded with (dropout's element
  // offset is a kernel argument, baked into a recording).
  struct Recorded {
    bool warmed_up = false;  // one run was queued unrecorded
    std::unique_ptr<Recording> recording;
    std::vector<void*> bases;
    int64_t batch_begin = 0, batch_rows = 0;
  };

  OpProfile profile_;
  OpProfile run_profile_;  // the run in progress: added to profile_ when it succeeds
  const Executor* owner_ = nullptr;
  ExecutionPlan info_;
  std::vector<Kernel> kernels_;  // per step
  std::shared_ptr<void> arena_;
  // Device copies of constants, and, on non-host devices, the device
  // buffers fed host tensors are copied into and the host staging they are
  // copied from (Device::AllocateStaging).
  absl::flat_hash_map<NodeId, std::shared_ptr<void>> device_constants_;
  // On a host device, the folded constants' bytes counted against the
  // memory limit while the plan holds them (they are info_.constants).
  std::shared_ptr<void> counted_folded_;
  // The variables this plan reads that were not made when it compiled.
  std::vector<std::shared_ptr<VariableReservation>> reservations_;
  absl::flat_hash_map<NodeId, std::shared_ptr<void>> staged_inputs_;
  absl::flat_hash_map<NodeId, std::shared_ptr<void>> input_staging_;
  // What the current run's kernels see: a device pointer per storage root
  // of info_, and the run's context. Kept here, not on the stack, so that a
  // recording of the kernel loop can be replayed.
  std::vector<void*> bases_;
  RunContext run_;
  // A run queues steps [phases_[p].first, phases_[p].second) for each phase
  // p < num_phases_, waiting for the device after each (see Compile).
  std::pair<int, int> phases_[2];
  int num_phases_ = 1;
  Recorded recorded_[2][2];  // by RunContext::training, then phase
  bool device_records_ = true;  // false once the device declined
  absl::Status recording_failure_;
  int64_t replays_ = 0;
};

class Executor {
 public:
  // An executor on the CPU.
  explicit Executor(const Graph& graph, ExecutorOptions options = {});
  // An executor on `device`.
  Executor(const Graph& graph, std::unique_ptr<Device> device,
           ExecutorOptions options = {});
  ~Executor();

  // Compile plans `fetches` (returned by Run, in order) and `targets` (ops
  // run for their effects). Errors: invalid or foreign Values, an op with no
  // kernel on this device, a folding error, the memory limit;
  // FailedPrecondition when an op depends on the output of an update (an op
  // that writes a variable), which must come last (PlanGraph).
  absl::StatusOr<std::unique_ptr<Plan>> Compile(absl::Span<const Value> fetches,
                                                absl::Span<const Value> targets = {});

  // Run executes `plan` with `feeds`. Errors (InvalidArgument unless said):
  // a plan of another executor; a missing or duplicate feed; a feed of a
  // node that is not an input of this graph; a feed of the wrong dtype or
  // shape (inputs of the graph that the plan does not read may be fed and
  // are ignored; an int32 or int64 tensor fed to a float32 or float64 input
  // of its shape is converted, and refused when an element would round:
  // engine/feed_conversion.h); a kernel's error (e.g. an index out of
  // range), named with the node's path; with check_numerics, the first node
  // producing NaN or Inf. (The variables a plan is the first to touch do
  // not fail the memory limit here: its Compile counted them as in use,
  // for every plan compiled after it.) After any of these no variable has
  // changed (see the file comment).
  //
  // Compile plans with check_numerics fold no constants, so that every node
  // is checked as it runs.
  absl::StatusOr<std::vector<Tensor>> Run(Plan& plan, const Feeds& feeds,
                                          const RunOptions& options = {});
  // Run with `device_feeds` too: inputs read where Upload put them, with no
  // copy (feeds and device_feeds together feed each input once). Errors:
  // Run's, and a DeviceTensor this executor did not upload.
  //
  //   DAGRAD_ASSIGN_OR_RETURN(DeviceTensor xs, exec.Upload(x_values));   // once
  //   DAGRAD_ASSIGN_OR_RETURN(auto out, exec.Run(*plan, {{y, y_values}}, {{x, xs}}, {}));
  absl::StatusOr<std::vector<Tensor>> Run(Plan& plan, const Feeds& feeds,
                                          const DeviceFeeds& device_feeds,
                                          const RunOptions& options);

  // Upload copies `value` to the device, to be fed to later runs where it
  // is (DeviceFeeds); the copy counts against the memory limit while it
  // lives. Errors: ResourceExhausted (the memory limit, the device's).
  absl::StatusOr<DeviceTensor> Upload(const Tensor& value);

  // InitializeVariables (re)initialises every variable of the graph.
  absl::Status InitializeVariables();
  // Read returns a host copy of a variable's value: on a device that is not
  // the host (CUDA), one copy that waits for the device.
  absl::StatusOr<Tensor> Read(Value variable);
  // ReadAll returns host copies of `variables`, in order, as Read would,
  // with one copy from the device that waits once: the values are gathered
  // into one device buffer first (a copy per variable, queued), unless the
  // device has no room for it (then one copy per variable). A checkpoint
  // of many variables is one wait, not one per variable. Errors: Read's,
  // for the first Value that is not a variable of this graph, before any
  // copy.
  //
  //   DAGRAD_ASSIGN_OR_RETURN(std::vector<Tensor> values, exec.ReadAll(g.Variables()));
  absl::StatusOr<std::vector<Tensor>> ReadAll(absl::Span<const Value> variables);
  // Assign sets a variable's value; its dtype and shape must match.
  absl::Status Assign(Value variable, const Tensor& value);

  const Graph& graph() const { return graph_; }
  const Device& device() const { return *device_; }
  const ExecutorOptions& options() const { return options_; }
  // bytes_in_use counts arenas, variables (from the Compile of the first
  // plan that reads them, though they are made at its first Run) and the
  // plans' constants.
  int64_t bytes_in_use() const { return *bytes_in_use_; }

 private:
  absl::StatusOr<void*> VariableData(NodeId id);
  absl::Status CheckVariable(absl::string_view caller, const Value& variable) const;
  absl::Status Write(NodeId id, const Tensor& value);
  absl::StatusOr<std::shared_ptr<void>> AllocateCounted(size_t bytes,
                                                        const std::string& what);
  // CountBytes counts `bytes` in bytes_in_use until the returned holder
  // goes (ResourceExhausted over the memory limit, naming `what`).
  absl::StatusOr<std::shared_ptr<void>> CountBytes(int64_t bytes, const std::string& what);
  absl::Status CheckPlanMemory(const ExecutionPlan& plan) const;
  absl::Status ReserveVariables(const ExecutionPlan& info, Plan& plan);
  // The reservation of variable `id` while a plan holds it, else null.
  std::shared_ptr<VariableReservation> ReservationOf(NodeId id) const;
  // UnmadeBytes counts the reserved variables no run has made: in
  // bytes_in_use, but not yet taken from the host.
  int64_t UnmadeBytes() const;
  std::optional<MemoryLimit> Room() const;
  absl::Status AllocateDeviceCopies(Plan& plan, const ExecutionPlan& info);
  absl::Status CheckNumerics(const Node& node, const TensorRef& out);
  // Fed is what feeds one input of a run: a host tensor, or a device one.
  struct Fed {
    const Tensor* host = nullptr;
    const DeviceTensor* device = nullptr;
  };
  using FedInputs = absl::flat_hash_map<NodeId, Fed>;
  absl::Status StartRun(Plan& plan, const FedInputs& fed, const RunOptions& options);
  absl::Status BindStorage(Plan& plan, const FedInputs& fed);
  absl::StatusOr<void*> BindInput(Plan& plan, NodeId id, const Fed& fed);
  TensorRef Ref(const Plan& plan, NodeId id) const;
  absl::Status QueueRun(Plan& plan, int phase);
  absl::Status QueueKernels(Plan& plan, int phase);
  absl::Status Drain(absl::Status failed);
  absl::StatusOr<std::vector<Tensor>> FetchResults(Plan& plan);
  absl::Status CheckHostInputs(const Plan& plan, const FedInputs& fed) const;
  absl::Status CheckUpdates(const Plan& plan) const;
  absl::StatusOr<NodeId> FedNode(const Value& value, DType dtype, const Shape& shape,
                                 const std::string& type) const;
  absl::Status ValidateFeeds(const Plan& plan, const Feeds& feeds,
                             const DeviceFeeds& device_feeds, FedInputs& fed) const;

  const uint64_t id_;  // DeviceTensor's owner
  const Graph& graph_;
  std::unique_ptr<Device> device_;
  ExecutorOptions options_;
  uint64_t runs_without_step_ = 0;  // the step of the next run that sets none
  absl::flat_hash_map<NodeId, std::shared_ptr<void>> variables_;
  // The reservations of the variables compiled plans read that are not
  // made yet (the plans hold them; VariableData drops the count as it makes
  // one), so that the check of a plan compiled next counts them as in use.
  absl::flat_hash_map<NodeId, std::weak_ptr<VariableReservation>> reserved_variables_;
  std::shared_ptr<std::atomic<int64_t>> bytes_in_use_ =
      std::make_shared<std::atomic<int64_t>>(0);
};

}  // namespace dagrad

#endif  // DAGRAD_ENGINE_EXECUTOR_H_
