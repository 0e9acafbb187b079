#include "engine/shape_family.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "engine/status_macros.h"

namespace dagrad {
namespace {

absl::Status Refuse(absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("shape family: ", what));
}

}  // namespace

absl::Status CheckShapeFamilyOptions(const ShapeFamilyOptions& options) {
  if (options.max_plans < 1) return Refuse(absl::StrCat("max_plans ", options.max_plans, " < 1"));
  std::set<std::string> names, used;
  for (const FamilyInput& in : options.inputs) {
    if (in.name.empty()) return Refuse("an input has no name");
    if (absl::StrContains(in.name, '/')) {
      return Refuse(absl::StrCat("input '", in.name, "': a name must not contain '/'"));
    }
    if (!names.insert(in.name).second) return Refuse(absl::StrCat("input '", in.name, "' twice"));
    for (size_t d = 0; d < in.dims.size(); ++d) {
      const Dim& dim = in.dims[d];
      if (dim.symbol.empty() && dim.size < 0) {
        return Refuse(absl::StrCat("input '", in.name, "' dim ", d, " is ", dim.size, " < 0"));
      }
      if (dim.symbol.empty()) continue;
      if (!options.bounds.contains(dim.symbol)) {
        return Refuse(absl::StrCat("input '", in.name, "' dim ", d, " is '", dim.symbol,
                                   "', which has no bound"));
      }
      used.insert(dim.symbol);
    }
  }
  for (const auto& [symbol, bound] : options.bounds) {
    if (bound < 1) return Refuse(absl::StrCat("'", symbol, "' has bound ", bound, " < 1"));
    if (!used.contains(symbol)) return Refuse(absl::StrCat("no input uses '", symbol, "'"));
  }
  return absl::OkStatus();
}

namespace {

// ScopeName names a binding's scope: "batch=2,seq=3" ("fixed" for none).
std::string ScopeName(const std::map<std::string, int64_t>& sizes) {
  if (sizes.empty()) return "fixed";
  return absl::StrJoin(sizes, ",", absl::PairFormatter("="));
}

// FreeScope is ScopeName(sizes), or it with "#2", "#3", ... when a node of
// `g` (another family's build: its inputs, a variable it made) lies there
// already (under the graph's current scope, where the binding's nodes go).
std::string FreeScope(Graph& g, const std::map<std::string, int64_t>& sizes) {
  const std::string base = ScopeName(sizes);
  const std::string outer = g.scope().empty() ? "" : g.scope() + "/";
  auto taken = [&](const std::string& scope) {
    const std::string prefix = absl::StrCat(outer, scope, "/");
    for (NodeId id = 0; id < g.num_nodes(); ++id) {
      if (absl::StartsWith(g.node(id).path(), prefix)) return true;
    }
    return false;
  };
  std::string scope = base;
  for (int n = 2; taken(scope); ++n) scope = absl::StrCat(base, "#", n);
  return scope;
}

// Where a symbol's size was first read: the input and dim, for messages.
struct SeenAt {
  int64_t size;
  std::string input;
  size_t dim;
};

absl::Status BindDim(const FamilyInput& in, size_t d, int64_t size, int64_t bound,
                     std::map<std::string, SeenAt>& seen) {
  const std::string& symbol = in.dims[d].symbol;
  const std::string where = absl::StrCat("input '", in.name, "' dim ", d, " ('", symbol, "')");
  if (size < 1 || size > bound) {
    return Refuse(absl::StrCat(where, " is ", size, ", outside [1, ", bound, "]"));
  }
  const auto [it, first] = seen.insert({symbol, {size, in.name, d}});
  if (!first && it->second.size != size) {
    return Refuse(absl::StrCat("'", symbol, "' is ", it->second.size, " in input '",
                               it->second.input, "' dim ", it->second.dim, " but ", size, " in ",
                               where));
  }
  return absl::OkStatus();
}

}  // namespace

Value Binding::input(const std::string& name) const {
  auto it = inputs.find(name);
  return it == inputs.end() ? Value() : it->second;
}

int64_t Binding::size(const std::string& symbol) const {
  auto it = sizes.find(symbol);
  return it == sizes.end() ? 0 : it->second;
}

absl::StatusOr<std::unique_ptr<ShapeFamily>> ShapeFamily::Create(Graph& g, Executor& exec,
                                                                 ShapeFamilyOptions options,
                                                                 SpecializeFn build) {
  if (&exec.graph() != &g) return Refuse("the executor runs another graph");
  if (!build) return Refuse("no build function");
  DAGRAD_RETURN_IF_ERROR(CheckShapeFamilyOptions(options));
  return std::unique_ptr<ShapeFamily>(
      new ShapeFamily(g, exec, std::move(options), std::move(build)));
}

absl::StatusOr<std::map<std::string, int64_t>> ShapeFamily::Bind(const NamedFeeds& feeds) const {
  std::map<std::string, const Tensor*> fed;
  for (const auto& [name, tensor] : feeds) {
    if (!fed.insert({name, &tensor}).second) return Refuse(absl::StrCat("'", name, "' fed twice"));
  }
  std::map<std::string, SeenAt> seen;
  for (const FamilyInput& in : options_.inputs) {
    auto it = fed.find(in.name);
    if (it == fed.end()) return Refuse(absl::StrCat("no feed for input '", in.name, "'"));
    const Shape& shape = it->second->shape();
    fed.erase(it);
    if (shape.rank() != static_cast<int>(in.dims.size())) {
      return Refuse(absl::StrCat("input '", in.name, "' has rank ", in.dims.size(), ", fed ",
                                 shape.ToString()));
    }
    for (size_t d = 0; d < in.dims.size(); ++d) {
      const Dim& dim = in.dims[d];
      if (dim.symbol.empty() && shape[d] != dim.size) {
        return Refuse(absl::StrCat("input '", in.name, "' dim ", d, " is fixed at ", dim.size,
                                   ", fed ", shape.ToString()));
      }
      if (dim.symbol.empty()) continue;
      DAGRAD_RETURN_IF_ERROR(BindDim(in, d, shape[d], options_.bounds.at(dim.symbol), seen));
    }
  }
  if (!fed.empty()) return Refuse(absl::StrCat("no input is named '", fed.begin()->first, "'"));
  std::map<std::string, int64_t> sizes;
  for (const auto& [symbol, at] : seen) sizes[symbol] = at.size;
  return sizes;
}

absl::StatusOr<std::vector<Tensor>> ShapeFamily::Run(const NamedFeeds& feeds,
                                                     const RunOptions& options,
                                                     const Feeds& shared) {
  for (const auto& [value, tensor] : shared) DAGRAD_RETURN_IF_ERROR(CheckShared(value));
  DAGRAD_ASSIGN_OR_RETURN(const auto sizes, Bind(feeds));
  DAGRAD_ASSIGN_OR_RETURN(Built* built, Find(sizes));
  Feeds bound = shared;
  for (const auto& [name, tensor] : feeds) bound.push_back({built->binding.input(name), tensor});
  return exec_.Run(*built->plan, bound, options);
}

absl::Status ShapeFamily::CheckShared(const Value& value) const {
  DAGRAD_RETURN_IF_ERROR(value.status());
  for (const auto& [sizes, built] : built_) {
    for (const auto& [name, input] : built.binding.inputs) {
      if (input.graph() == value.graph() && input.id() == value.id()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "shape family: the shared feed '", value.path(), "' is the family's input '", name,
            "'; feed it by name"));
      }
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<ShapeFamily::Built*> ShapeFamily::Find(const std::map<std::string, int64_t>& sizes) {
  auto it = built_.find(sizes);
  if (it == built_.end()) {
    // A binding whose build failed keeps its error: its inputs are in the
    // graph, and a second build would repeat their paths.
    Built fresh;
    fresh.failed = Build(sizes, fresh);
    it = built_.emplace(sizes, std::move(fresh)).first;
  }
  Built& built = it->second;
  DAGRAD_RETURN_IF_ERROR(built.failed);
  if (built.plan == nullptr) DAGRAD_RETURN_IF_ERROR(Compile(built));
  built.last_used = ++clock_;
  return &built;
}

absl::Status ShapeFamily::Build(const std::map<std::string, int64_t>& sizes, Built& built) {
  built.binding.sizes = sizes;
  const std::string scope_name = FreeScope(graph_, sizes);
  Graph::Scope scope(graph_, scope_name);
  Graph::StreamOrigin origin(graph_);
  for (const FamilyInput& in : options_.inputs) {
    std::vector<int64_t> dims;
    for (const Dim& d : in.dims) dims.push_back(d.symbol.empty() ? d.size : sizes.at(d.symbol));
    const Value v = graph_.Input(in.name, in.dtype, Shape(dims));
    DAGRAD_RETURN_IF_ERROR(v.status());
    built.binding.inputs[in.name] = v;
  }
  DAGRAD_ASSIGN_OR_RETURN(built.out, build_(graph_, built.binding));
  for (const std::vector<Value>* values : {&built.out.fetches, &built.out.targets}) {
    for (const Value& v : *values) {
      if (!v.ok()) {
        return absl::Status(v.status().code(), absl::StrCat("shape family, building ",
                                                            scope_name, ": ",
                                                            v.status().message()));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status ShapeFamily::Compile(Built& built) {
  while (cached_plans() >= options_.max_plans && EvictOldest(&built)) {
  }
  while (true) {
    absl::StatusOr<std::unique_ptr<Plan>> plan =
        exec_.Compile(built.out.fetches, built.out.targets);
    if (plan.ok()) {
      built.plan = *std::move(plan);
      ++compiles_;
      return absl::OkStatus();
    }
    if (!absl::IsResourceExhausted(plan.status()) || !EvictOldest(&built)) {
      return plan.status();
    }
  }
}

bool ShapeFamily::EvictOldest(const Built* keep) {
  Built* oldest = nullptr;
  for (auto& [sizes, built] : built_) {
    if (&built == keep || built.plan == nullptr) continue;
    if (oldest == nullptr || built.last_used < oldest->last_used) oldest = &built;
  }
  if (oldest == nullptr) return false;
  oldest->plan.reset();
  return true;
}

int ShapeFamily::cached_plans() const {
  int n = 0;
  for (const auto& [sizes, built] : built_) n += built.plan != nullptr;
  return n;
}

int64_t ShapeFamily::cached_bytes() const {
  int64_t bytes = 0;
  for (const auto& [sizes, built] : built_) {
    if (built.plan != nullptr) bytes += built.plan->peak_bytes();
  }
  return bytes;
}

bool ShapeFamily::IsCached(const std::map<std::string, int64_t>& sizes) const {
  auto it = built_.find(sizes);
  return it != built_.end() && it->second.plan != nullptr;
}

}  // namespace dagrad
