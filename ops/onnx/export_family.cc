#include "ops/onnx/export_family.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/io/file_io.h"
#include "engine/status_macros.h"

namespace dagrad {
namespace {

using Sizes = std::map<std::string, int64_t>;

// The most sizes tried before giving up on coincidences.
constexpr int kMaxAttempts = 64;

// SymbolOrder lists the declaration's symbols in order of first use;
// InvalidArgument for a symbol without a bound that leaves two sizes >= 2.
absl::StatusOr<std::vector<std::string>> SymbolOrder(const ShapeFamilyOptions& family) {
  std::vector<std::string> order;
  for (const FamilyInput& input : family.inputs) {
    for (const Dim& d : input.dims) {
      if (d.symbol.empty() || std::count(order.begin(), order.end(), d.symbol) > 0) continue;
      auto bound = family.bounds.find(d.symbol);
      if (bound == family.bounds.end() || bound->second < 3) {
        return absl::InvalidArgumentError(absl::StrCat(
            "ONNX export: symbol '", d.symbol, "' of input '", input.name,
            "' needs a bound >= 3 (two sizes >= 2 to tell it apart), got ",
            bound == family.bounds.end() ? std::string("none") : absl::StrCat(bound->second)));
      }
      order.push_back(d.symbol);
    }
  }
  return order;
}

// FirstSizes are the sizes tried first: the symbol of the i-th smallest
// bound at 2 + 3i (spaced, so that T + 1 or T - 1 is not another symbol's
// size, and the tightest bounds get the small sizes), within its bound.
Sizes FirstSizes(std::vector<std::string> order, const ShapeFamilyOptions& family) {
  std::stable_sort(order.begin(), order.end(), [&](const std::string& x, const std::string& y) {
    return family.bounds.at(x) < family.bounds.at(y);
  });
  Sizes a;
  for (size_t i = 0; i < order.size(); ++i) {
    a[order[i]] = std::min<int64_t>(2 + 3 * static_cast<int64_t>(i), family.bounds.at(order[i]));
  }
  return a;
}

// MoveOff gives `symbol` a size it has not had (`tried`) that is at least
// 2 from every other symbol's: the next above its own, or else the next
// below (down to 2); false when there is none within its bound.
bool MoveOff(const std::string& symbol, const ShapeFamilyOptions& family, Sizes& a,
             std::set<int64_t>& tried) {
  tried.insert(a[symbol]);
  std::vector<int64_t> candidates;
  for (int64_t s = a[symbol] + 1; s <= family.bounds.at(symbol); ++s) candidates.push_back(s);
  for (int64_t s = a[symbol] - 1; s >= 2; --s) candidates.push_back(s);
  for (int64_t next : candidates) {
    bool apart = !tried.contains(next);
    for (const auto& [other, size] : a) apart = apart && (other == symbol || std::abs(next - size) >= 2);
    if (apart) {
      a[symbol] = next;
      return true;
    }
  }
  return false;
}

// SecondSizes are the check's: one more than `a`'s (one less at a bound).
Sizes SecondSizes(const Sizes& a, const ShapeFamilyOptions& family) {
  Sizes b;
  for (const auto& [symbol, size] : a) {
    b[symbol] = size < family.bounds.at(symbol) ? size + 1 : size - 1;
  }
  return b;
}

// Build makes the family's inputs at `sizes` under scope `scope` and runs
// `build` on them.
absl::StatusOr<Specialized> Build(Graph& g, const ShapeFamilyOptions& family,
                                  const SpecializeFn& build, const Sizes& sizes,
                                  const std::string& scope) {
  Graph::Scope in_scope(g, scope);
  Binding binding{.sizes = sizes};
  for (const FamilyInput& input : family.inputs) {
    Dims dims;
    for (const Dim& d : input.dims) dims.push_back(d.symbol.empty() ? d.size : sizes.at(d.symbol));
    binding.inputs[input.name] = g.Input(input.name, input.dtype, Shape(dims));
  }
  DAGRAD_ASSIGN_OR_RETURN(Specialized out, build(g, binding));
  DAGRAD_RETURN_IF_ERROR(g.status());
  return out;
}

// A Verdict of a pair of builds: sizes that work, a coincidence (try
// others) or an error (the graph cannot be exported with symbolic sizes).
struct Verdict {
  bool coincidence = false;
  std::string symbol;  // the coincidence's
  absl::Status error;
  std::string why;
};

// Compare checks one value of build A against build B: a symbol's A size
// must become its B size, anything else stay.
void Compare(int64_t a, int64_t b, const Sizes& sa, const Sizes& sb, const std::string& where,
             Verdict& v) {
  if (!v.error.ok() || v.coincidence) return;
  for (const auto& [symbol, size] : sa) {
    if (a != size) continue;
    if (b != sb.at(symbol)) {
      v.coincidence = true;
      v.symbol = symbol;
      v.why = absl::StrCat(where, " is ", a, " at ", symbol, " = ", a, " but ", b, " at ",
                           symbol, " = ", sb.at(symbol));
    }
    return;
  }
  if (a != b) {
    v.error = absl::InvalidArgumentError(absl::StrCat(
        "ONNX export: ", where, " depends on the sizes other than as a symbol (", a, ", then ",
        b, "), which the model cannot compute at run time"));
  }
}

// IsCount: a float attribute that holds a size (an arange's float stop).
bool IsCount(double x) { return x >= 0 && x < 9e15 && x == std::floor(x); }

void CompareAttrs(const Node& na, const Node& nb, const Sizes& sa, const Sizes& sb, Verdict& v) {
  const auto& ea = na.attrs.entries();
  const auto& eb = nb.attrs.entries();
  for (size_t i = 0; i < ea.size() && i < eb.size(); ++i) {
    const std::string where = absl::StrCat(na.path(), "'s attribute ", ea[i].first);
    const auto* ia = std::get_if<int64_t>(&ea[i].second);
    const auto* ib = std::get_if<int64_t>(&eb[i].second);
    const auto* va = std::get_if<std::vector<int64_t>>(&ea[i].second);
    const auto* vb = std::get_if<std::vector<int64_t>>(&eb[i].second);
    const auto* da = std::get_if<double>(&ea[i].second);
    const auto* db = std::get_if<double>(&eb[i].second);
    if (ia != nullptr && ib != nullptr) {
      Compare(*ia, *ib, sa, sb, where, v);
    } else if (da != nullptr && db != nullptr && *da != *db && IsCount(*da) && IsCount(*db)) {
      Compare(static_cast<int64_t>(*da), static_cast<int64_t>(*db), sa, sb, where, v);
    } else if (va != nullptr && vb != nullptr && va->size() == vb->size()) {
      for (size_t k = 0; k < va->size(); ++k) Compare((*va)[k], (*vb)[k], sa, sb, where, v);
    } else if (ea[i] != eb[i] && v.error.ok()) {
      v.error = absl::InvalidArgumentError(
          absl::StrCat("ONNX export: ", where, " depends on the sizes"));
    }
  }
}

// CompareNodes checks node `i` of A (first_a + i) against B's.
void CompareNodes(const Graph& g, NodeId ia, NodeId ib, NodeId shift, NodeId first_a,
                  const Sizes& sa, const Sizes& sb, Verdict& v) {
  const Node &na = g.node(ia), &nb = g.node(ib);
  bool same = na.kind == nb.kind && na.op == nb.op && na.dtype == nb.dtype &&
              na.shape.rank() == nb.shape.rank() && na.inputs.size() == nb.inputs.size() &&
              na.attrs.entries().size() == nb.attrs.entries().size();
  for (size_t k = 0; same && k < na.inputs.size(); ++k) {
    const NodeId in = na.inputs[k];
    same = nb.inputs[k] == (in == kNoNode || in < first_a ? in : in + shift);
  }
  if (!same) {
    v.error = absl::InvalidArgumentError(absl::StrCat(
        "ONNX export: the graph's ops depend on the sizes (", na.path(), " against ", nb.path(),
        ")"));
    return;
  }
  for (int d = 0; d < na.shape.rank(); ++d) {
    Compare(na.shape[d], nb.shape[d], sa, sb, absl::StrCat(na.path(), "'s dim ", d), v);
  }
  for (NodeId in : na.inputs) {  // a variable the builds share: its dims are fixed
    if (in == kNoNode || in >= first_a || !g.node(in).is_variable()) continue;
    for (int64_t dim : g.node(in).shape.dims()) {
      for (const auto& [symbol, size] : sa) {
        if (dim != size || v.coincidence) continue;
        v.coincidence = true;
        v.symbol = symbol;
        v.why = absl::StrCat("variable ", g.node(in).path(), " ", g.node(in).shape.ToString(),
                             " has a dim of ", symbol, " = ", size);
      }
    }
  }
  CompareAttrs(na, nb, sa, sb, v);
  const bool constants_differ =
      na.kind == NodeKind::kConstant &&
      (na.value.nbytes() != nb.value.nbytes() ||
       std::memcmp(na.value.raw_data(), nb.value.raw_data(), na.value.nbytes()) != 0);
  if (constants_differ && v.error.ok() && !v.coincidence) {
    v.error = absl::InvalidArgumentError(
        absl::StrCat("ONNX export: constant ", na.path(), " depends on the sizes"));
  }
}

// Check compares the nodes of build A, [first_a, first_b), with B's,
// [first_b, end).
Verdict Check(const Graph& g, NodeId first_a, NodeId first_b, NodeId end, const Sizes& sa,
              const Sizes& sb) {
  Verdict v;
  if (first_b - first_a != end - first_b) {
    v.error = absl::InvalidArgumentError(absl::StrCat(
        "ONNX export: the graph's ops depend on the sizes (", first_b - first_a, " nodes, then ",
        end - first_b, ")"));
    return v;
  }
  for (NodeId i = first_a; i < first_b && v.error.ok() && !v.coincidence; ++i) {
    CompareNodes(g, i, i + (first_b - first_a), first_b - first_a, first_a, sa, sb, v);
  }
  return v;
}

}  // namespace

absl::StatusOr<std::string> SerializeOnnxFamily(Graph& g, const ShapeFamilyOptions& family,
                                                const SpecializeFn& build,
                                                const OnnxExportOptions& options) {
  DAGRAD_ASSIGN_OR_RETURN(const std::vector<std::string> order, SymbolOrder(family));
  Sizes a = FirstSizes(order, family);
  std::map<std::string, std::set<int64_t>> tried;  // per symbol, the sizes that coincided
  for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
    const Sizes b = SecondSizes(a, family);
    // Named by the graph's size: unique however often a graph is exported.
    const std::string scope = absl::StrCat("onnx_export_", g.num_nodes());
    const NodeId first_a = g.num_nodes();
    DAGRAD_ASSIGN_OR_RETURN(Specialized built, Build(g, family, build, a, scope + "/a"));
    const NodeId first_b = g.num_nodes();
    DAGRAD_RETURN_IF_ERROR(Build(g, family, build, b, scope + "/b").status());
    const Verdict v = Check(g, first_a, first_b, g.num_nodes(), a, b);
    DAGRAD_RETURN_IF_ERROR(v.error);
    if (v.coincidence) {
      if (MoveOff(v.symbol, family, a, tried[v.symbol])) continue;
      return absl::InvalidArgumentError(absl::StrCat(
          "ONNX export: every size of '", v.symbol, "' tried within its bound coincides with a "
          "fixed size of the graph (", v.why, ")"));
    }
    OnnxExportOptions at_a = options;
    at_a.dynamic_dims.clear();
    for (const FamilyInput& input : family.inputs) {
      for (size_t axis = 0; axis < input.dims.size(); ++axis) {
        const std::string& symbol = input.dims[axis].symbol;
        if (!symbol.empty()) at_a.dynamic_dims.push_back({input.name, int(axis), symbol});
      }
    }
    return SerializeOnnx(g, built.fetches, at_a);
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "ONNX export: no sizes found in ", kMaxAttempts, " tries"));
}

absl::Status ExportOnnxFamily(Graph& g, const ShapeFamilyOptions& family,
                              const SpecializeFn& build, const std::string& path,
                              const OnnxExportOptions& options) {
  DAGRAD_ASSIGN_OR_RETURN(std::string bytes, SerializeOnnxFamily(g, family, build, options));
  return WriteFileAtomically(path, bytes);
}

}  // namespace dagrad
