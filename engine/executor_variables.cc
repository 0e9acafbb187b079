// The executor's variables (engine/executor.h): initialised on first use,
// read (one at a time, or all in one transfer) and assigned; and tensors
// uploaded to its device.

#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/executor.h"
#include "engine/status_macros.h"

namespace dagrad {

absl::StatusOr<void*> Executor::VariableData(NodeId id) {
  auto it = variables_.find(id);
  if (it != variables_.end()) return it->second.get();
  const Node& node = graph_.node(id);
  DAGRAD_ASSIGN_OR_RETURN(Tensor init, Tensor::Zeros(node.dtype, node.shape));
  DAGRAD_RETURN_IF_ERROR(node.initializer.Fill(options_.seed, node.path(), init));
  // Counted again as it is made: its reservation no longer counts.
  if (auto reservation = ReservationOf(id)) reservation->counted.reset();
  reserved_variables_.erase(id);
  DAGRAD_ASSIGN_OR_RETURN(
      auto buf, AllocateCounted(init.nbytes(), absl::StrCat("variable '", node.path(), "'")));
  DAGRAD_RETURN_IF_ERROR(device_->CopyToDevice(buf.get(), init.raw_data(), init.nbytes()));
  void* data = buf.get();
  variables_[id] = std::move(buf);
  return data;
}

absl::Status Executor::InitializeVariables() {
  for (NodeId id = 0; id < graph_.num_nodes(); ++id) {
    const Node& node = graph_.node(id);
    if (!node.is_variable()) continue;
    DAGRAD_ASSIGN_OR_RETURN(Tensor init, Tensor::Zeros(node.dtype, node.shape));
    DAGRAD_RETURN_IF_ERROR(node.initializer.Fill(options_.seed, node.path(), init));
    DAGRAD_RETURN_IF_ERROR(Write(id, init));
  }
  return absl::OkStatus();
}

absl::Status Executor::CheckVariable(absl::string_view caller, const Value& variable) const {
  if (!variable.ok() || variable.graph() != &graph_ || !variable.node().is_variable()) {
    return absl::InvalidArgumentError(absl::StrCat(
        caller, ": '", variable.path(), "' is not a variable of this executor's graph"));
  }
  return absl::OkStatus();
}

absl::StatusOr<Tensor> Executor::Read(Value variable) {
  DAGRAD_RETURN_IF_ERROR(CheckVariable("Read", variable));
  const Node& node = variable.node();
  DAGRAD_ASSIGN_OR_RETURN(void* data, VariableData(node.id));
  DAGRAD_ASSIGN_OR_RETURN(Tensor out, Tensor::Zeros(node.dtype, node.shape));
  DAGRAD_RETURN_IF_ERROR(device_->CopyToHost(out.raw_data(), data, out.nbytes()));
  return out;
}

absl::StatusOr<std::vector<Tensor>> Executor::ReadAll(absl::Span<const Value> variables) {
  for (const Value& v : variables) DAGRAD_RETURN_IF_ERROR(CheckVariable("ReadAll", v));
  std::vector<void*> data;
  std::vector<Tensor> out;
  size_t total = 0;
  for (const Value& v : variables) {
    DAGRAD_ASSIGN_OR_RETURN(data.emplace_back(), VariableData(v.id()));
    DAGRAD_ASSIGN_OR_RETURN(out.emplace_back(), Tensor::Zeros(v.dtype(), v.shape()));
    total += out.back().nbytes();
  }
  auto one_by_one = [&]() -> absl::StatusOr<std::vector<Tensor>> {
    for (size_t i = 0; i < out.size(); ++i) {
      DAGRAD_RETURN_IF_ERROR(device_->CopyToHost(out[i].raw_data(), data[i], out[i].nbytes()));
    }
    return out;
  };
  if (device_->is_host()) return one_by_one();  // copies that do not wait
  // Gathered on the device in queue order, then one copy to the host, which
  // waits once. Without room for the gather (the memory limit, the
  // device's), a copy per variable, as Read.
  absl::StatusOr<std::shared_ptr<void>> gathered = AllocateCounted(total, "ReadAll's gather");
  if (absl::IsResourceExhausted(gathered.status())) return one_by_one();
  if (!gathered.ok()) return gathered.status();
  char* at = static_cast<char*>(gathered->get());
  for (size_t i = 0; i < out.size(); at += out[i].nbytes(), ++i) {
    DAGRAD_RETURN_IF_ERROR(device_->CopyOnDevice(at, data[i], out[i].nbytes()));
  }
  std::vector<char> host(total);
  DAGRAD_RETURN_IF_ERROR(device_->CopyToHost(host.data(), gathered->get(), total));
  const char* from = host.data();
  for (Tensor& t : out) {
    std::memcpy(t.raw_data(), from, t.nbytes());
    from += t.nbytes();
  }
  return out;
}

absl::StatusOr<DeviceTensor> Executor::Upload(const Tensor& value) {
  DAGRAD_ASSIGN_OR_RETURN(std::shared_ptr<void> data,
                          AllocateCounted(value.nbytes(),
                                          absl::StrCat("an uploaded ", value.TypeString())));
  DAGRAD_RETURN_IF_ERROR(device_->CopyToDevice(data.get(), value.raw_data(), value.nbytes()));
  DeviceTensor t;
  t.data_ = std::move(data);
  t.dtype_ = value.dtype();
  t.shape_ = value.shape();
  t.owner_ = id_;
  return t;
}

absl::Status Executor::Assign(Value variable, const Tensor& value) {
  DAGRAD_RETURN_IF_ERROR(CheckVariable("Assign", variable));
  const Node& node = variable.node();
  if (value.dtype() != node.dtype || value.shape() != node.shape) {
    return absl::InvalidArgumentError(
        absl::StrCat("Assign to '", node.path(), "': expected ", node.TypeString(),
                     ", got ", value.TypeString()));
  }
  return Write(node.id, value);
}

absl::Status Executor::Write(NodeId id, const Tensor& value) {
  DAGRAD_ASSIGN_OR_RETURN(void* data, VariableData(id));
  return device_->CopyToDevice(data, value.raw_data(), value.nbytes());
}

}  // namespace dagrad
