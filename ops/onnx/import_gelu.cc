// ops/onnx/import_gelu.cc

#include "ops/onnx/import_gelu.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "ops/onnx/onnx_tensor.h"

namespace dagrad {
namespace {

// GraphIndex answers who produces and who reads each value of a graph.
class GraphIndex {
 public:
  explicit GraphIndex(const onnx::GraphProto& g) : g_(g) {
    for (int i = 0; i < g.node_size(); ++i) {
      for (const std::string& out : g.node(i).output()) producer_[out] = i;
      for (const std::string& in : g.node(i).input()) readers_[in].push_back(i);
    }
    for (const onnx::ValueInfoProto& out : g.output()) graph_outputs_.insert(out.name());
    for (const onnx::TensorProto& t : g.initializer()) initializers_[t.name()] = &t;
  }

  // Names returns every value name the graph uses.
  absl::flat_hash_set<std::string> Names() const {
    absl::flat_hash_set<std::string> names(graph_outputs_.begin(), graph_outputs_.end());
    for (const auto& [name, node] : producer_) names.insert(name);
    for (const auto& [name, nodes] : readers_) names.insert(name);
    for (const auto& [name, tensor] : initializers_) names.insert(name);
    for (const onnx::ValueInfoProto& in : g_.input()) names.insert(in.name());
    return names;
  }

  const onnx::NodeProto& node(int i) const { return g_.node(i); }

  // Producer returns the node making `name` when its op type is `op`.
  std::optional<int> Producer(const std::string& name, const char* op) const {
    auto it = producer_.find(name);
    if (it == producer_.end() || g_.node(it->second).op_type() != op) return std::nullopt;
    return it->second;
  }

  // SoleReader returns the one node reading `name` (once) when its op
  // type is `op` and `name` is not a graph output.
  std::optional<int> SoleReader(const std::string& name, const char* op) const {
    auto it = readers_.find(name);
    if (it == readers_.end() || it->second.size() != 1 || graph_outputs_.contains(name) ||
        g_.node(it->second[0]).op_type() != op) {
      return std::nullopt;
    }
    return it->second[0];
  }

  // Scalar returns the value of a one-element float constant or initializer,
  // and raises `rank` to its rank: a constant of shape (1, 1) broadcasts
  // the chain's result to rank 2 at least.
  std::optional<double> Scalar(const std::string& name, int& rank) const {
    const onnx::TensorProto* t = nullptr;
    if (auto p = Producer(name, "Constant"); p && node(*p).attribute_size() == 1 &&
                                            node(*p).attribute(0).name() == "value") {
      t = &node(*p).attribute(0).t();
    } else if (auto it = initializers_.find(name); it != initializers_.end()) {
      t = it->second;
    }
    if (t == nullptr) return std::nullopt;
    absl::StatusOr<Tensor> v = TensorFromOnnx(*t, "");
    if (!v.ok() || v->num_elements() != 1) return std::nullopt;
    rank = std::max(rank, v->shape().rank());
    if (v->dtype() == DType::kFloat32) return *v->data<float>();
    if (v->dtype() == DType::kFloat64) return *v->data<double>();
    return std::nullopt;
  }

 private:
  const onnx::GraphProto& g_;
  absl::flat_hash_map<std::string, int> producer_;
  absl::flat_hash_map<std::string, std::vector<int>> readers_;
  absl::flat_hash_set<std::string> graph_outputs_;
  absl::flat_hash_map<std::string, const onnx::TensorProto*> initializers_;
};

// OtherInput returns the input of a two-input node that is not `name`.
std::optional<std::string> OtherInput(const onnx::NodeProto& n, const std::string& name) {
  if (n.input_size() != 2) return std::nullopt;
  if (n.input(0) == name) return n.input(1);
  if (n.input(1) == name) return n.input(0);
  return std::nullopt;
}

bool Near(std::optional<double> v, double want) {
  return v && std::fabs(*v - want) <= 1e-6 * want;
}

// OtherIsNear is true when node n reads `name` and a constant near `want`
// (whose rank raises `rank`).
bool OtherIsNear(const GraphIndex& index, int n, const std::string& name, double want,
                 int& rank) {
  std::optional<std::string> other = OtherInput(index.node(n), name);
  return other && Near(index.Scalar(*other, rank), want);
}

struct GeluChain {
  std::string x;
  std::vector<int> removed;  // Div, Erf, Add, first Mul
  int last;                  // the Mul by 0.5, which becomes the Gelu
  int rank;                  // the highest rank of the chain's constants
};

// ScaledInput returns x for Div(x, sqrt(2)) or Mul(x, 1 / sqrt(2)) making
// `name`, the erf's argument.
std::optional<int> ErfArgument(const GraphIndex& index, const std::string& name,
                               std::string& x, int& rank) {
  for (const char* op : {"Div", "Mul"}) {
    auto n = index.Producer(name, op);
    if (!n || index.node(*n).input_size() != 2) continue;
    const double want = op[0] == 'D' ? std::sqrt(2.0) : std::sqrt(0.5);
    for (int i = 0; i < 2; ++i) {
      if ((op[0] == 'D' && i == 1) ||
          !Near(index.Scalar(index.node(*n).input(1 - i), rank), want)) {
        continue;
      }
      x = index.node(*n).input(i);
      return n;
    }
  }
  return std::nullopt;
}

// MatchGelu matches the erf at `erf` with what surrounds it: PyTorch's
// Mul(Mul(x, 1 + erf), 0.5), or dagrad's own export, Mul(Mul(x, 0.5), 1 + erf).
std::optional<GeluChain> MatchGelu(const GraphIndex& index, int erf) {
  const onnx::NodeProto& e = index.node(erf);
  std::string x;
  int rank = 0;
  if (e.input_size() != 1 || e.output_size() != 1 || !index.SoleReader(e.input(0), "Erf")) {
    return std::nullopt;
  }
  auto scaled = ErfArgument(index, e.input(0), x, rank);
  auto add = index.SoleReader(e.output(0), "Add");
  if (!scaled || !add || !OtherIsNear(index, *add, e.output(0), 1.0, rank)) return std::nullopt;
  const std::string& one_plus_erf = index.node(*add).output(0);
  auto mul = index.SoleReader(one_plus_erf, "Mul");
  if (!mul) return std::nullopt;
  const std::optional<std::string> other = OtherInput(index.node(*mul), one_plus_erf);
  if (other == x) {  // PyTorch: the half comes last
    auto half = index.SoleReader(index.node(*mul).output(0), "Mul");
    if (!half || !OtherIsNear(index, *half, index.node(*mul).output(0), 0.5, rank)) {
      return std::nullopt;
    }
    return GeluChain{x, {*scaled, erf, *add, *mul}, *half, rank};
  }
  auto half = other ? index.Producer(*other, "Mul") : std::nullopt;  // dagrad: x * 0.5 first
  if (!half || !index.SoleReader(*other, "Mul") || !OtherIsNear(index, *half, x, 0.5, rank)) {
    return std::nullopt;
  }
  return GeluChain{x, {*scaled, erf, *add, *half}, *mul, rank};
}

// FreshName returns `base`, or `base` with a number, that the graph does
// not use yet, and takes it.
std::string FreshName(absl::flat_hash_set<std::string>& names, const std::string& base) {
  std::string name = base;
  for (int i = 1; names.contains(name); ++i) name = absl::StrCat(base, "_", i);
  names.insert(name);
  return name;
}

// MakeGelu turns the chain's last node into Gelu(x). Where the chain's
// constants have rank r > 0, they broadcast its result to rank r at least
// (x (5) * (1, 1) is (1, 5)), and x's rank is not known before importing:
// the Gelu's result then goes through Expand(., [1] * r), which broadcasts
// the same way, and `extra` gets that Expand and its shape's Constant.
void MakeGelu(onnx::NodeProto& gelu, const GeluChain& chain,
              absl::flat_hash_set<std::string>& names, std::vector<onnx::NodeProto>& extra) {
  gelu.set_op_type("Gelu");
  gelu.clear_input();
  gelu.add_input(chain.x);
  gelu.clear_attribute();
  onnx::AttributeProto* a = gelu.add_attribute();
  a->set_name("approximate");
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s("none");
  if (chain.rank == 0) return;
  const std::string out = gelu.output(0), shape = FreshName(names, out + "/gelu_broadcast");
  gelu.set_output(0, FreshName(names, out + "/gelu"));
  onnx::NodeProto& constant = extra.emplace_back();
  constant.set_op_type("Constant");
  constant.add_output(shape);
  onnx::AttributeProto* value = constant.add_attribute();
  value->set_name("value");
  value->set_type(onnx::AttributeProto::TENSOR);
  onnx::TensorProto& ones = *value->mutable_t();
  ones.set_data_type(onnx::TensorProto::INT64);
  ones.add_dims(chain.rank);
  for (int i = 0; i < chain.rank; ++i) ones.add_int64_data(1);
  onnx::NodeProto& expand = extra.emplace_back();
  expand.set_op_type("Expand");
  expand.add_input(gelu.output(0));
  expand.add_input(shape);
  expand.add_output(out);
}

}  // namespace

int FuseGelu(onnx::GraphProto& graph, std::vector<int>* file_index) {
  std::vector<GeluChain> chains;
  absl::flat_hash_set<std::string> names;
  {
    GraphIndex index(graph);
    names = index.Names();
    for (int i = 0; i < graph.node_size(); ++i) {
      if (graph.node(i).op_type() != "Erf") continue;
      if (auto chain = MatchGelu(index, i)) chains.push_back(*chain);
    }
  }
  std::vector<bool> removed(graph.node_size(), false);
  std::vector<onnx::NodeProto> extra;
  std::vector<int> extra_from;  // the chain's last node, for each extra node
  for (const GeluChain& chain : chains) {
    for (int i : chain.removed) removed[i] = true;
    MakeGelu(*graph.mutable_node(chain.last), chain, names, extra);
    extra_from.resize(extra.size(), chain.last);
  }
  google::protobuf::RepeatedPtrField<onnx::NodeProto> kept;
  std::vector<int> from;
  for (int i = 0; i < graph.node_size(); ++i) {
    if (removed[i]) continue;
    kept.Add()->Swap(graph.mutable_node(i));
    from.push_back(i);
  }
  for (onnx::NodeProto& node : extra) kept.Add()->Swap(&node);
  from.insert(from.end(), extra_from.begin(), extra_from.end());
  graph.mutable_node()->Swap(&kept);
  if (file_index != nullptr) *file_index = std::move(from);
  return static_cast<int>(chains.size());
}

}  // namespace dagrad
