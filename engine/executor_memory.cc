// The executor's memory (engine/executor.h): what it allocates counted
// against ExecutorOptions::memory_limit_bytes (arenas, variables, the plans'
// constants), and a plan's need checked before any of it is allocated.

#include <atomic>
#include <memory>
#include <optional>

#include "absl/strings/str_cat.h"
#include "engine/checked_math.h"
#include "engine/executor.h"
#include "engine/plan/internal/plan_memory.h"
#include "engine/plan/memory_budget.h"
#include "engine/status_macros.h"

namespace dagrad {

absl::StatusOr<std::shared_ptr<void>> Executor::CountBytes(int64_t bytes,
                                                           const std::string& what) {
  const int64_t limit = options_.memory_limit_bytes;
  const int64_t in_use = *bytes_in_use_;
  const std::optional<int64_t> after = CheckedAdd(in_use, bytes);
  if (limit > 0 && (!after.has_value() || *after > limit)) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "memory limit: ", what, " needs ", bytes, " bytes with ", in_use,
        " already in use on ", device_->name(), ", over the limit of ", limit));
  }
  *bytes_in_use_ += bytes;
  // The count follows its holder, which may outlive the executor.
  std::shared_ptr<std::atomic<int64_t>> counter = bytes_in_use_;
  return std::shared_ptr<void>(static_cast<void*>(nullptr),
                               [counter, bytes](void*) { *counter -= bytes; });
}

absl::StatusOr<std::shared_ptr<void>> Executor::AllocateCounted(
    size_t bytes, const std::string& what) {
  DAGRAD_ASSIGN_OR_RETURN(std::shared_ptr<void> counted,
                          CountBytes(static_cast<int64_t>(bytes), what));
  DAGRAD_ASSIGN_OR_RETURN(std::shared_ptr<void> p, device_->Allocate(bytes));
  return std::shared_ptr<void>(p.get(), [p, counted](void*) {});
}

absl::Status Executor::AllocateDeviceCopies(Plan& plan, const ExecutionPlan& info) {
  for (const auto& [id, tensor] : info.constants) {
    DAGRAD_ASSIGN_OR_RETURN(auto buf, AllocateCounted(tensor.nbytes(), "a constant"));
    DAGRAD_RETURN_IF_ERROR(device_->CopyToDevice(buf.get(), tensor.raw_data(), tensor.nbytes()));
    plan.device_constants_[id] = std::move(buf);
  }
  for (NodeId id : info.inputs) {
    const Node& node = graph_.node(id);
    DAGRAD_ASSIGN_OR_RETURN(const int64_t bytes, ValidateBytes(node.shape, node.dtype));
    DAGRAD_ASSIGN_OR_RETURN(plan.staged_inputs_[id],
                            AllocateCounted(bytes, "an input's staging buffer"));
    DAGRAD_ASSIGN_OR_RETURN(plan.input_staging_[id], device_->AllocateStaging(bytes));
  }
  return absl::OkStatus();
}

std::optional<MemoryLimit> Executor::Room() const {
  return MemoryLimitFor(options_.memory_limit_bytes, *bytes_in_use_, UnmadeBytes(),
                        device_->is_host() && options_.check_host_memory,
                        options_.memory_shares);
}

absl::Status Executor::CheckPlanMemory(const ExecutionPlan& plan) const {
  const std::optional<MemoryLimit> room = Room();
  if (!room.has_value()) return absl::OkStatus();
  MemoryBudget need =
      PlanMemory(graph_, plan, device_->is_host(), [this](NodeId id) {
        return variables_.contains(id) || ReservationOf(id) != nullptr;
      });
  need.Merge(options_.reserved);
  return need.CheckFits(*room, absl::StrCat("compiling the plan on ", device_->name()));
}

std::shared_ptr<VariableReservation> Executor::ReservationOf(NodeId id) const {
  auto it = reserved_variables_.find(id);
  return it == reserved_variables_.end() ? nullptr : it->second.lock();
}

int64_t Executor::UnmadeBytes() const {
  int64_t unmade = 0;
  for (const auto& [id, weak] : reserved_variables_) {
    if (auto reservation = weak.lock(); reservation && reservation->counted) {
      unmade += reservation->bytes;
    }
  }
  return unmade;
}

absl::Status Executor::ReserveVariables(const ExecutionPlan& info, Plan& plan) {
  for (NodeId id : info.variables) {
    if (variables_.contains(id)) continue;
    std::shared_ptr<VariableReservation> reservation = ReservationOf(id);
    if (reservation == nullptr) {  // the first live plan to read it
      const Node& node = graph_.node(id);
      reservation = std::make_shared<VariableReservation>();
      DAGRAD_ASSIGN_OR_RETURN(reservation->bytes, ValidateBytes(node.shape, node.dtype));
      DAGRAD_ASSIGN_OR_RETURN(
          reservation->counted,
          CountBytes(reservation->bytes, absl::StrCat("variable '", node.path(), "'")));
      reserved_variables_[id] = reservation;
    }
    plan.reservations_.push_back(std::move(reservation));
  }
  return absl::OkStatus();
}

}  // namespace dagrad
