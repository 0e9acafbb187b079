#include "engine/graph.h"

#include <cstring>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "engine/op.h"

namespace dagrad {

std::string Node::TypeString() const {
  return absl::StrCat(DTypeName(dtype), " ", shape.ToString());
}

absl::Status Value::status() const {
  if (graph_ == nullptr) {
    return absl::FailedPreconditionError("null Value (refers to no node)");
  }
  return id_ >= 0 ? absl::OkStatus() : graph_->ErrorOf(*this);
}

const Node& Value::node() const { return graph_->node(id_); }

DType Value::dtype() const { return ok() ? node().dtype : DType::kFloat32; }

const Shape& Value::shape() const {
  static const Shape* const kEmpty = new Shape();
  return ok() ? node().shape : *kEmpty;
}

int64_t Value::dim(int axis) const {
  const Shape& s = shape();
  if (axis < 0) axis += s.rank();
  return axis >= 0 && axis < s.rank() ? s[axis] : 0;
}

std::string Value::path() const { return ok() ? node().path() : ""; }

namespace {

// AppendScope appends the non-empty '/'-separated parts of `name` to
// `scope`: an empty scope name, or an empty part ("a//b", "/a"), adds no
// empty path component, so no path ever holds "//".
void AppendScope(std::string& scope, absl::string_view name) {
  for (absl::string_view part : absl::StrSplit(name, '/', absl::SkipEmpty())) {
    if (!scope.empty()) scope += "/";
    absl::StrAppend(&scope, part);
  }
}

}  // namespace

Graph::Scope::Scope(Graph& g, absl::string_view name)
    : g_(g), saved_size_(g.scope_.size()) {
  AppendScope(g.scope_, name);
}

Graph::Scope::~Scope() { g_.scope_.resize(saved_size_); }

std::string Graph::SetScopePath(std::string path) {
  std::string normalized;
  AppendScope(normalized, path);
  std::swap(scope_, normalized);
  return normalized;
}

absl::Status Graph::status() const {
  return errors_.empty() ? absl::OkStatus() : errors_.front();
}

absl::Status Graph::ErrorOf(const Value& v) const {
  if (v.graph_ != this || v.error_ < 0 ||
      v.error_ >= static_cast<int32_t>(errors_.size())) {
    return absl::InternalError("Value holds no error of this graph");
  }
  return errors_[v.error_];
}

Value Graph::Error(const absl::Status& status) {
  absl::Status recorded = status;
  if (!scope_.empty()) {
    recorded = absl::Status(status.code(),
                            absl::StrCat("in '", scope_, "': ", status.message()));
  }
  errors_.push_back(recorded);
  return Value(this, kNoNode, static_cast<int32_t>(errors_.size() - 1));
}

std::string Graph::UniqueName(absl::string_view base) {
  std::string path = scope_.empty() ? std::string(base)
                                    : absl::StrCat(scope_, "/", base);
  int& count = name_counts_[path];
  std::string name(base);
  while (by_path_.contains(scope_.empty() ? name : absl::StrCat(scope_, "/", name))) {
    name = absl::StrCat(base, "_", ++count);
  }
  return name;
}

Value Graph::AddNode(Node node) {
  node.id = static_cast<NodeId>(nodes_.size());
  node.scope = scope_;
  node.role = role_;
  node.stream_origin = stream_origin_;
  if (role_ == NodeRole::kGradient) node.gradient_of = gradient_of_;
  by_path_[node.path()] = node.id;
  nodes_.push_back(std::move(node));
  return Value(this, nodes_.back().id, -1);
}

namespace {

// NameError explains why `name` cannot name a node at `path`, or is empty.
std::string NameError(absl::string_view name, const std::string& path,
                      const absl::flat_hash_map<std::string, NodeId>& by_path) {
  if (name.empty()) return "empty name";
  if (absl::StrContains(name, '/')) return "a name must not contain '/' (use a scope)";
  if (by_path.contains(path)) return "duplicate path";
  return "";
}

}  // namespace

Value Graph::Input(absl::string_view name, DType dtype, const Shape& shape) {
  const std::string path = scope_.empty() ? std::string(name)
                                          : absl::StrCat(scope_, "/", name);
  if (std::string why = NameError(name, path, by_path_); !why.empty()) {
    return Error(absl::InvalidArgumentError(absl::StrCat("input '", path, "': ", why)));
  }
  if (auto bytes = ValidateBytes(shape, dtype); !bytes.ok()) {
    return Error(absl::InvalidArgumentError(
        absl::StrCat("input '", path, "': ", bytes.status().message())));
  }
  Node node;
  node.kind = NodeKind::kInput;
  node.dtype = dtype;
  node.shape = shape;
  node.name = std::string(name);
  return AddNode(std::move(node));
}

Value Graph::AddVariable(absl::string_view name, const Shape& shape,
                         const Initializer& init, DType dtype, bool trainable) {
  const std::string path = scope_.empty() ? std::string(name)
                                          : absl::StrCat(scope_, "/", name);
  const char* what = trainable ? "parameter" : "variable";
  if (std::string why = NameError(name, path, by_path_); !why.empty()) {
    return Error(absl::InvalidArgumentError(absl::StrCat(what, " '", path, "': ", why)));
  }
  if (trainable && !IsAnyFloat(dtype)) {
    return Error(absl::InvalidArgumentError(absl::StrCat(
        what, " '", path, "': dtype must be floating, got ", DTypeName(dtype))));
  }
  absl::Status st = ValidateBytes(shape, dtype).status();
  if (st.ok()) st = init.Validate(shape, dtype);
  if (!st.ok()) {
    return Error(absl::InvalidArgumentError(absl::StrCat(
        what, " '", path, "' ", shape.ToString(), ": ", st.message())));
  }
  Node node;
  node.kind = NodeKind::kVariable;
  node.dtype = dtype;
  node.shape = shape;
  node.name = std::string(name);
  node.trainable = trainable;
  node.initializer = init;
  return AddNode(std::move(node));
}

Value Graph::Parameter(absl::string_view name, const Shape& shape,
                       const Initializer& init, DType dtype) {
  return AddVariable(name, shape, init, dtype, /*trainable=*/true);
}

Value Graph::Variable(absl::string_view name, const Shape& shape,
                      const Initializer& init, DType dtype) {
  return AddVariable(name, shape, init, dtype, /*trainable=*/false);
}

Value Graph::Constant(const Tensor& value, absl::string_view name) {
  if (name.empty() || absl::StrContains(name, '/')) {
    return Error(absl::InvalidArgumentError(absl::StrCat(
        "constant '", name, "': ",
        name.empty() ? "empty name" : "a name must not contain '/' (use a scope)")));
  }
  // A constant is the value at this call: Tensors share storage when
  // copied, so the caller could otherwise change it later, after plans
  // folded some uses of the old value.
  absl::StatusOr<Tensor> copy = Tensor::Zeros(value.dtype(), value.shape());
  if (!copy.ok()) {
    return Error(absl::Status(copy.status().code(),
                              absl::StrCat("constant '", name, "': ", copy.status().message())));
  }
  if (value.nbytes() > 0) std::memcpy(copy->raw_data(), value.raw_data(), value.nbytes());
  Node node;
  node.kind = NodeKind::kConstant;
  node.dtype = value.dtype();
  node.shape = value.shape();
  node.name = UniqueName(name);
  node.value = *std::move(copy);
  return AddNode(std::move(node));
}

namespace {

std::string DescribeInputs(const std::vector<const TensorType*>& types) {
  return absl::StrJoin(types, ", ", [](std::string* out, const TensorType* t) {
    if (t == nullptr) {
      out->append("none");
    } else {
      absl::StrAppend(out, DTypeName(t->dtype), " ", t->shape.ToString());
    }
  });
}

// WrittenInputsError says what is wrong with the inputs `op` writes in
// place (each must be a variable, and a different one), or is empty.
std::string WrittenInputsError(const Graph& g, const OpDef& op, const std::vector<NodeId>& ids) {
  for (size_t i = 0; i < ids.size(); ++i) {
    if (!op.Writes(i)) continue;
    if (ids[i] == kNoNode || !g.node(ids[i]).is_variable()) {
      return absl::StrCat("input ", i, " is written in place and must be a variable");
    }
    for (size_t j = 0; j < i; ++j) {
      if (op.Writes(j) && ids[j] == ids[i]) {
        return absl::StrCat("inputs ", j, " and ", i, " are both written in place and are the ",
                            "same variable '", g.node(ids[i]).name, "'");
      }
    }
  }
  return "";
}

}  // namespace

Value Graph::AddOp(const OpDef& op, absl::Span<const Value> inputs, Attrs attrs,
                   absl::string_view name) {
  for (const Value& v : inputs) {
    if (!v.is_null() && !v.ok()) return v;  // propagate the first error
  }
  if (absl::StrContains(name, '/')) {
    return Error(absl::InvalidArgumentError(absl::StrCat(
        op.name, " named '", name, "': a name must not contain '/' (use a scope)")));
  }
  const std::string node_name = UniqueName(name.empty() ? op.name : name);
  const std::string path =
      scope_.empty() ? node_name : absl::StrCat(scope_, "/", node_name);
  std::vector<NodeId> ids;
  std::vector<const TensorType*> type_ptrs;
  std::vector<TensorType> types(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Value& v = inputs[i];
    if (v.is_null()) {
      ids.push_back(kNoNode);
      type_ptrs.push_back(nullptr);
      continue;
    }
    if (v.graph() != this) {
      errors_.push_back(absl::InvalidArgumentError(absl::StrCat(
          op.name, " '", path, "': input ", i, " belongs to another graph")));
      return Value(this, kNoNode, static_cast<int32_t>(errors_.size() - 1));
    }
    ids.push_back(v.id());
    types[i] = {v.node().dtype, v.node().shape};
    type_ptrs.push_back(&types[i]);
  }
  auto fail = [&](absl::string_view message) {
    errors_.push_back(absl::InvalidArgumentError(
        absl::StrCat(op.name, " '", path, "': ", message, " [inputs: ",
                     DescribeInputs(type_ptrs), "]")));
    return Value(this, kNoNode, static_cast<int32_t>(errors_.size() - 1));
  };
  if (std::string bad = WrittenInputsError(*this, op, ids); !bad.empty()) return fail(bad);
  InferContext ctx{attrs, type_ptrs};
  absl::StatusOr<TensorType> out = op.infer(ctx);
  if (!out.ok()) return fail(out.status().message());
  if (auto bytes = ValidateBytes(out->shape, out->dtype); !bytes.ok()) {
    return fail(absl::StrCat("output: ", bytes.status().message()));
  }
  Node node;
  node.kind = NodeKind::kOp;
  node.op = &op;
  node.inputs = std::move(ids);
  node.attrs = std::move(attrs);
  node.dtype = out->dtype;
  node.shape = std::move(out->shape);
  node.name = node_name;
  return AddNode(std::move(node));
}

Value Graph::Find(absl::string_view path) {
  auto it = by_path_.find(path);
  return it == by_path_.end() ? Value() : Value(this, it->second, -1);
}

std::vector<Value> Graph::Parameters() {
  std::vector<Value> out;
  for (const Node& n : nodes_) {
    if (n.is_variable() && n.trainable) out.push_back(value(n.id));
  }
  return out;
}

std::vector<Value> Graph::Variables() {
  std::vector<Value> out;
  for (const Node& n : nodes_) {
    if (n.is_variable()) out.push_back(value(n.id));
  }
  return out;
}

absl::Status CheckSameGraph(absl::Span<const Value> values) {
  Graph* g = nullptr;
  for (const Value& v : values) {
    if (v.is_null()) continue;
    if (!v.ok()) return v.status();
    if (g != nullptr && v.graph() != g) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", v.path(), "' belongs to another graph"));
    }
    g = v.graph();
  }
  return absl::OkStatus();
}

std::vector<bool> DependedOn(const Graph& g, absl::Span<const Value> roots) {
  std::vector<NodeId> ids;
  for (const Value& v : roots) ids.push_back(v.id());
  return DependedOn(g, std::move(ids));
}

std::vector<bool> DependedOn(const Graph& g, std::vector<NodeId> stack) {
  std::vector<bool> reached(g.num_nodes(), false);
  while (!stack.empty()) {
    const NodeId id = stack.back();
    stack.pop_back();
    if (id == kNoNode || reached[id]) continue;
    reached[id] = true;
    for (NodeId in : g.node(id).inputs) stack.push_back(in);
  }
  return reached;
}

std::vector<NodeId> AncestorsOf(const Graph& g, absl::Span<const Value> roots) {
  const std::vector<bool> reached = DependedOn(g, roots);
  std::vector<NodeId> ids;
  for (NodeId id = 0; id < g.num_nodes(); ++id) {
    if (reached[id]) ids.push_back(id);
  }
  return ids;
}

}  // namespace dagrad
