#include "engine/executor.h"

#include <cmath>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <optional>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/checked_math.h"
#include "engine/feed_conversion.h"
#include "engine/op.h"
#include "engine/plan/internal/plan_memory.h"
#include "engine/status_macros.h"

namespace dagrad {
namespace {

const char* RoleName(NodeRole role) {
  switch (role) {
    case NodeRole::kForward: return "forward";
    case NodeRole::kGradient: return "backward";
    case NodeRole::kOptimizer: return "optimizer";
    case NodeRole::kCommunication: return "communication";
  }
  return "?";
}

// NodeError names a kernel's error with its node (once: a device that
// reports a data error found on the device names the node itself).
absl::Status NodeError(const Node& node, const absl::Status& st) {
  const std::string prefix = absl::StrCat(node.op->name, " '", node.path(), "': ");
  if (absl::StartsWith(st.message(), prefix)) return st;
  return absl::Status(st.code(), absl::StrCat(prefix, st.message()));
}

// NextExecutorId numbers executors from 1, so that a DeviceTensor knows
// its executor even after that one is gone (an address may be reused).
uint64_t NextExecutorId() {
  static std::atomic<uint64_t> next{1};
  return next++;
}

// FoldingOptions are `options` as Compile plans with them. check_numerics
// checks every node as it runs: a folded one, computed at Compile, would go
// unchecked (a NaN blamed on the node that reads it), so nothing folds.
// Folding evaluates on the host, whatever the device: within the memory
// limit's room and what the host may give; with no room left, nothing
// folds, and the arena's check says what the limit holds.
PlanOptions FoldingOptions(PlanOptions options, bool check_numerics,
                           const std::optional<MemoryLimit>& room) {
  if (check_numerics || (room.has_value() && room->bytes <= 0)) {
    options.fold_constants = false;
  } else if (room.has_value() &&
             (options.max_folded_bytes == 0 || room->bytes < options.max_folded_bytes)) {
    options.max_folded_bytes = room->bytes;
  }
  return options;
}

// FoldedBytes are the bytes of the plan's constants that folding computed.
int64_t FoldedBytes(const Graph& graph, const ExecutionPlan& info) {
  int64_t bytes = 0;
  for (const auto& [id, tensor] : info.constants) {
    if (graph.node(id).kind != NodeKind::kConstant) bytes += tensor.nbytes();
  }
  return bytes;
}

}  // namespace

std::string DeviceTensor::TypeString() const {
  return absl::StrCat(DTypeName(dtype_), " ", shape_.ToString());
}

Executor::Executor(const Graph& graph, ExecutorOptions options)
    : Executor(graph, CpuDevice(), options) {}

Executor::Executor(const Graph& graph, std::unique_ptr<Device> device,
                   ExecutorOptions options)
    : id_(NextExecutorId()), graph_(graph), device_(std::move(device)), options_(options) {
  if (options_.communicator == nullptr) options_.communicator = SingleProcessCommunicator();
}

Executor::~Executor() = default;

absl::StatusOr<std::unique_ptr<Plan>> Executor::Compile(
    absl::Span<const Value> fetches, absl::Span<const Value> targets) {
  const PlanOptions plan_options =
      FoldingOptions(options_.plan, options_.check_numerics, Room());
  DAGRAD_ASSIGN_OR_RETURN(ExecutionPlan info,
                          PlanLayout(graph_, fetches, targets, plan_options));
  DAGRAD_RETURN_IF_ERROR(CheckPlanMemory(info));
  DAGRAD_RETURN_IF_ERROR(EvaluateFolded(graph_, info));
  auto plan = std::make_unique<Plan>();
  plan->owner_ = this;
  for (NodeId id : info.steps) {
    const Node& node = graph_.node(id);
    Kernel k = device_->KernelFor(*node.op);
    if (k == nullptr) {
      return absl::UnimplementedError(absl::StrCat(
          node.op->name, " '", node.path(), "' has no kernel on ", device_->name()));
    }
    plan->kernels_.push_back(k);
    // A collective waits for other processes from the host: not recordable.
    if (node.op->collective) plan->device_records_ = false;
  }
  DAGRAD_ASSIGN_OR_RETURN(plan->arena_,
                          AllocateCounted(info.arena_bytes, "the plan's arena"));
  if (!device_->is_host()) {
    DAGRAD_RETURN_IF_ERROR(AllocateDeviceCopies(*plan, info));
  } else {  // the host's kernels read the folded constants where folding left them
    DAGRAD_ASSIGN_OR_RETURN(plan->counted_folded_,
                            CountBytes(FoldedBytes(graph_, info), "the plan's folded constants"));
  }
  // Kernels on the host run one by one, and one that fails stops the run
  // before the updates, which come last. A device that reports kernels'
  // errors at Synchronize (CUDA) runs the updates as a second phase, after
  // a Synchronize that found none: one more wait per step, the price of a
  // run that fails having written nothing.
  const int steps = static_cast<int>(info.steps.size());
  plan->phases_[0] = {0, steps};
  if (!device_->is_host() && info.first_update > 0 && info.first_update < steps) {
    plan->phases_[0] = {0, info.first_update};
    plan->phases_[1] = {info.first_update, steps};
    plan->num_phases_ = 2;
  }
  DAGRAD_RETURN_IF_ERROR(ReserveVariables(info, *plan));
  plan->info_ = std::move(info);
  return plan;
}

absl::StatusOr<NodeId> Executor::FedNode(const Value& value, DType dtype, const Shape& shape,
                                         const std::string& type) const {
  if (!value.ok() || value.graph() != &graph_) {
    return absl::InvalidArgumentError(absl::StrCat(
        "feed of ", value.ok() ? absl::StrCat("'", value.path(), "'") : "an invalid Value",
        " does not name an input of this executor's graph"));
  }
  const Node& node = graph_.node(value.id());
  if (node.kind != NodeKind::kInput) {
    return absl::InvalidArgumentError(
        absl::StrCat("feed of '", node.path(), "': only inputs can be fed"));
  }
  if (dtype != node.dtype || shape != node.shape) {
    return absl::InvalidArgumentError(absl::StrCat("feed of '", node.path(), "': expected ",
                                                   node.TypeString(), ", got ", type));
  }
  return node.id;
}

// Inputs of this graph that the plan does not read may be fed, so that one
// set of feeds can serve several plans of the same graph; they are
// checked, and left out of `fed`.
absl::Status Executor::ValidateFeeds(const Plan& plan, const Feeds& feeds,
                                     const DeviceFeeds& device_feeds, FedInputs& fed) const {
  const absl::flat_hash_set<NodeId> read(plan.info_.inputs.begin(), plan.info_.inputs.end());
  absl::flat_hash_set<NodeId> seen;
  auto add = [&](const Value& value, Fed f, DType dtype, const Shape& shape,
                 const std::string& type) -> absl::Status {
    DAGRAD_ASSIGN_OR_RETURN(const NodeId id, FedNode(value, dtype, shape, type));
    if (!seen.insert(id).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("input '", graph_.node(id).path(), "' is fed twice"));
    }
    if (read.contains(id)) fed[id] = f;
    return absl::OkStatus();
  };
  for (const auto& [value, tensor] : feeds) {
    DAGRAD_RETURN_IF_ERROR(
        add(value, {.host = &tensor}, tensor.dtype(), tensor.shape(), tensor.TypeString()));
  }
  for (const auto& [value, tensor] : device_feeds) {
    if (tensor.owner_ != id_) {
      return absl::InvalidArgumentError(absl::StrCat(
          "device feed of '", value.ok() ? value.path() : "an invalid Value",
          "': its DeviceTensor was not uploaded by this executor (Executor::Upload)"));
    }
    DAGRAD_RETURN_IF_ERROR(
        add(value, {.device = &tensor}, tensor.dtype(), tensor.shape(), tensor.TypeString()));
  }
  for (NodeId id : plan.info_.inputs) {
    if (!fed.contains(id)) {
      const Node& node = graph_.node(id);
      return absl::InvalidArgumentError(absl::StrCat(
          "missing feed for input '", node.path(), "' (", node.TypeString(), ")"));
    }
  }
  return absl::OkStatus();
}

absl::Status Executor::CheckNumerics(const Node& node, const TensorRef& out) {
  if (!IsAnyFloat(out.dtype) || out.num_elements() == 0) return absl::OkStatus();
  Tensor host;
  const void* p = out.data;
  if (!device_->is_host()) {
    DAGRAD_ASSIGN_OR_RETURN(host, Tensor::Zeros(out.dtype, *out.shape));
    DAGRAD_RETURN_IF_ERROR(device_->CopyToHost(host.raw_data(), out.data, out.nbytes()));
    p = host.raw_data();
  }
  const int64_t bad = FirstNonFinite(p, out.dtype, out.num_elements());
  if (bad < 0) return absl::OkStatus();
  const double v = FloatAt(p, out.dtype, bad);
  return absl::InvalidArgumentError(absl::StrCat(
      "check_numerics: ", RoleName(node.role), " node '", node.path(), "' (op ",
      node.op->name, ", ", node.TypeString(), ") produced ", std::isnan(v) ? "NaN" : "Inf",
      " at element ", bad));
}

absl::StatusOr<void*> Executor::BindInput(Plan& plan, NodeId id, const Fed& fed) {
  if (fed.device != nullptr) return fed.device->data_.get();
  const Tensor& t = *fed.host;
  if (device_->is_host()) return const_cast<void*>(t.raw_data());
  // Through the plan's staging for this input, with a copy that does not
  // wait: the run waits once, at its end (or Drain, when it fails first),
  // before the next run writes the staging again.
  void* staging = plan.input_staging_.at(id).get();
  if (t.nbytes() > 0) std::memcpy(staging, t.raw_data(), t.nbytes());
  void* base = plan.staged_inputs_.at(id).get();
  DAGRAD_RETURN_IF_ERROR(device_->CopyToDeviceAsync(base, staging, t.nbytes()));
  return base;
}

absl::Status Executor::BindStorage(Plan& plan, const FedInputs& fed) {
  const ExecutionPlan& info = plan.info_;
  plan.bases_.assign(info.storage.size(), nullptr);
  char* arena = static_cast<char*>(plan.arena_.get());
  for (size_t r = 0; r < info.storage.size(); ++r) {
    const Storage& s = info.storage[r];
    void*& base = plan.bases_[r];
    switch (s.kind) {
      case Storage::Kind::kArena:
      case Storage::Kind::kNone:
        base = arena + s.offset;
        break;
      case Storage::Kind::kInput: {
        DAGRAD_ASSIGN_OR_RETURN(base, BindInput(plan, s.node, fed.at(s.node)));
        break;
      }
      case Storage::Kind::kVariable: {
        DAGRAD_ASSIGN_OR_RETURN(base, VariableData(s.node));
        break;
      }
      case Storage::Kind::kConstant: {
        auto it = info.constants.find(s.node);
        if (it == info.constants.end()) break;  // folded away, never read
        base = device_->is_host() ? const_cast<void*>(it->second.raw_data())
                                  : plan.device_constants_.at(s.node).get();
        break;
      }
    }
  }
  return absl::OkStatus();
}

TensorRef Executor::Ref(const Plan& plan, NodeId id) const {
  const ExecutionPlan& info = plan.info_;
  const Node& n = graph_.node(id);
  return TensorRef{static_cast<char*>(plan.bases_[info.root[id]]) + info.offset[id], n.dtype,
                   &n.shape};
}

// A device feed is not on the host: its check is left to the kernel, as
// for a computed input.
absl::Status Executor::CheckHostInputs(const Plan& plan, const FedInputs& fed) const {
  const ExecutionPlan& info = plan.info_;
  std::vector<TensorRef> ins;
  for (NodeId id : info.steps) {
    const Node& node = graph_.node(id);
    if (node.op->check == nullptr) continue;
    ins.clear();
    for (NodeId in : node.inputs) {
      TensorRef r{nullptr, in == kNoNode ? DType::kFloat32 : graph_.node(in).dtype,
                  in == kNoNode ? nullptr : &graph_.node(in).shape};
      const Storage& s = in == kNoNode ? Storage{} : info.storage[info.root[in]];
      const void* base = nullptr;
      if (s.kind == Storage::Kind::kInput && fed.at(s.node).host != nullptr) {
        base = fed.at(s.node).host->raw_data();
      }
      if (s.kind == Storage::Kind::kConstant && info.constants.contains(s.node)) {
        base = info.constants.at(s.node).raw_data();
      }
      if (base != nullptr) {
        r.data = const_cast<char*>(static_cast<const char*>(base) + info.offset[in]);
      }
      ins.push_back(r);
    }
    const TensorRef out{nullptr, node.dtype, &node.shape};
    const RunContext run;
    KernelContext ctx{node, ins, out, run};
    if (absl::Status st = node.op->check(ctx); !st.ok()) return NodeError(node, st);
  }
  return absl::OkStatus();
}

// On the host every op before the updates has run when the first update
// is reached: each update's check then reads its computed inputs too (a
// WriteAt's start, an Adam step computed in the graph), so that a value
// an update would reject fails the run before any update writes.
absl::Status Executor::CheckUpdates(const Plan& plan) const {
  const ExecutionPlan& info = plan.info_;
  std::vector<TensorRef> ins;
  for (size_t i = info.first_update; i < info.steps.size(); ++i) {
    const Node& node = graph_.node(info.steps[i]);
    if (node.op->check == nullptr) continue;
    ins.clear();
    for (NodeId in : node.inputs) ins.push_back(in == kNoNode ? TensorRef{} : Ref(plan, in));
    KernelContext ctx{node, ins, Ref(plan, node.id), plan.run_};
    if (absl::Status st = node.op->check(ctx); !st.ok()) return NodeError(node, st);
  }
  return absl::OkStatus();
}

absl::Status Executor::QueueKernels(Plan& plan, int phase) {
  const ExecutionPlan& info = plan.info_;
  const auto [begin, end] = plan.phases_[phase];
  if (begin == 0) {
    for (const ExecutionPlan::FetchCopy& c : info.fetch_copies) {
      const TensorRef from = Ref(plan, c.node);
      DAGRAD_RETURN_IF_ERROR(device_->CopyOnDevice(plan.bases_[c.root], from.data, from.nbytes()));
    }
  }
  std::vector<TensorRef> ins;
  for (int i = begin; i < end; ++i) {
    if (i == info.first_update && device_->is_host()) DAGRAD_RETURN_IF_ERROR(CheckUpdates(plan));
    const Node& node = graph_.node(info.steps[i]);
    ins.clear();
    for (NodeId in : node.inputs) ins.push_back(in == kNoNode ? TensorRef{} : Ref(plan, in));
    const TensorRef out = Ref(plan, node.id);
    KernelContext ctx{node, ins, out, plan.run_};
    const auto started = options_.profile ? std::chrono::steady_clock::now()
                                          : std::chrono::steady_clock::time_point();
    absl::Status st = plan.kernels_[i](ctx);
    if (options_.profile && st.ok()) {
      st = device_->Synchronize();
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      OpProfile::Entry& e = plan.run_profile_.by_op[std::string(node.op->name)];
      e.seconds += seconds;
      ++e.calls;
      OpProfile::StepTime& step = plan.run_profile_.by_step[i];
      step.seconds = step.last_seconds = seconds;
      step.last_start = std::chrono::duration<double>(started.time_since_epoch()).count();
    }
    if (st.ok() && options_.synchronize_each_kernel) st = device_->Synchronize();
    if (!st.ok()) return NodeError(node, st);
    if (options_.check_numerics) DAGRAD_RETURN_IF_ERROR(CheckNumerics(node, out));
  }
  return absl::OkStatus();
}

absl::Status Executor::QueueRun(Plan& plan, int phase) {
  const bool may_record = options_.record_runs && plan.device_records_ && !options_.profile &&
                          !options_.synchronize_each_kernel && !options_.check_numerics;
  if (!may_record) return QueueKernels(plan, phase);
  Plan::Recorded& recorded = plan.recorded_[plan.run_.training ? 1 : 0][phase];
  if (recorded.recording != nullptr && recorded.bases == plan.bases_ &&
      recorded.batch_begin == plan.run_.batch_begin &&
      recorded.batch_rows == plan.run_.batch_rows) {
    if (phase == 0) ++plan.replays_;  // a run, not each phase
    return recorded.recording->Replay();
  }
  // The first run is queued as it is: it warms up what kernels initialise
  // lazily (CUDA modules, library state), which a recording must not see.
  if (!recorded.warmed_up) {
    recorded.warmed_up = true;
    return QueueKernels(plan, phase);
  }
  recorded.recording = nullptr;
  absl::Status why_not;
  DAGRAD_ASSIGN_OR_RETURN(
      recorded.recording,
      device_->Record([this, &plan, phase] { return QueueKernels(plan, phase); }, &why_not));
  if (recorded.recording == nullptr) {
    // The device does not record, or could not: run this plan without.
    plan.device_records_ = false;
    plan.recording_failure_ = why_not;
  } else {
    recorded.bases = plan.bases_;
    recorded.batch_begin = plan.run_.batch_begin;
    recorded.batch_rows = plan.run_.batch_rows;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Tensor>> Executor::Run(Plan& plan, const Feeds& feeds,
                                                  const RunOptions& options) {
  return Run(plan, feeds, {}, options);
}

absl::StatusOr<std::vector<Tensor>> Executor::Run(Plan& plan, const Feeds& feeds,
                                                  const DeviceFeeds& device_feeds,
                                                  const RunOptions& options) {
  if (plan.owner_ != this) {
    return absl::InvalidArgumentError("Run: the plan was compiled by another executor");
  }
  // An integer fed to a float input is converted here, exactly; the copy
  // lives until the run has read it.
  DAGRAD_ASSIGN_OR_RETURN(const std::optional<Feeds> converted, ExactFloatFeeds(graph_, feeds));
  FedInputs fed;
  DAGRAD_RETURN_IF_ERROR(ValidateFeeds(plan, converted ? *converted : feeds, device_feeds, fed));
  DAGRAD_RETURN_IF_ERROR(CheckHostInputs(plan, fed));
  // From here on copies may be queued: a failure drains them.
  if (absl::Status started = StartRun(plan, fed, options); !started.ok()) return Drain(started);
  // Each phase ends with Synchronize, whose error (a data error a device
  // kernel found) fails the run before the next phase, the updates, is
  // queued.
  for (int phase = 0; phase < plan.num_phases_; ++phase) {
    if (absl::Status queued = QueueRun(plan, phase); !queued.ok()) return Drain(queued);
    DAGRAD_RETURN_IF_ERROR(device_->Synchronize());
  }
  if (options_.profile) plan.profile_.AddRun(plan.run_profile_);
  return FetchResults(plan);
}

absl::Status Executor::StartRun(Plan& plan, const FedInputs& fed, const RunOptions& options) {
  DAGRAD_RETURN_IF_ERROR(BindStorage(plan, fed));
  if (options_.profile) {
    plan.run_profile_.by_op.clear();
    plan.run_profile_.by_step.assign(plan.info_.steps.size(), {});
  }
  if (options_.poison_arena && plan.info_.arena_bytes > 0) {
    DAGRAD_RETURN_IF_ERROR(device_->Fill(plan.arena_.get(), 0xFF, plan.info_.arena_bytes));
  }
  const uint64_t step = options.step ? *options.step : runs_without_step_++;
  plan.run_ = RunContext{options.training,          options_.seed,
                         step,                      device_->kernel_state(),
                         options_.communicator.get(), options.batch_begin,
                         options.batch_rows};
  return device_->PrepareRun(plan.run_);
}

// Drain waits for what a failed run queued, so that the next run starts on
// an idle device with its staging free to write; an error the queued work
// hit came first and is reported.
absl::Status Executor::Drain(absl::Status failed) {
  absl::Status earlier = device_->Synchronize();
  return earlier.ok() ? failed : earlier;
}

absl::StatusOr<std::vector<Tensor>> Executor::FetchResults(Plan& plan) {
  const ExecutionPlan& info = plan.info_;
  std::vector<Tensor> results;
  for (NodeId id : info.fetches) {
    TensorRef r = Ref(plan, id);
    for (const ExecutionPlan::FetchCopy& c : info.fetch_copies) {
      if (c.node == id) r.data = plan.bases_[c.root];
    }
    DAGRAD_ASSIGN_OR_RETURN(Tensor t, Tensor::Zeros(r.dtype, *r.shape));
    DAGRAD_RETURN_IF_ERROR(device_->CopyToHost(t.raw_data(), r.data, t.nbytes()));
    results.push_back(std::move(t));
  }
  return results;
}

}  // namespace dagrad
