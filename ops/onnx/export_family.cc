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

// MoveOff gives `symbol` a size it has not had (`tried`) and no other
// symbol has (a size derived from another symbol, S + 1, is caught by the
// check that moves S alone): the next above its own, or else the next
// below (down to 2); false when there is none within its bound.
// (At most kMaxAttempts sizes are ever tried, so the candidates stop there:
// a bound of 2^62 is no list of 2^62 sizes.)
bool MoveOff(const std::string& symbol, const ShapeFamilyOptions& family, Sizes& a,
             std::set<int64_t>& tried) {
  tried.insert(a[symbol]);
  const int64_t at = a[symbol], bound = family.bounds.at(symbol);
  auto apart = [&](int64_t next) {
    if (tried.contains(next)) return false;
    for (const auto& [other, size] : a) {
      if (other != symbol && next == size) return false;
    }
    return true;
  };
  for (int64_t s = at + 1; s <= bound && s <= at + 4 * kMaxAttempts; ++s) {
    if (apart(s)) {
      a[symbol] = s;
      return true;
    }
  }
  for (int64_t s = at - 1; s >= 2; --s) {
    if (apart(s)) {
      a[symbol] = s;
      return true;
    }
  }
  return false;
}

// MakeRoom moves the other symbols whose bounds allow it above `symbol`'s
// bound (each 3 from the next), so that the sizes of `symbol` they held
// can be tried: a short sequence bound leaves few sizes that no fixed size
// of the graph takes, and batch's first size, 5, may be the one left.
// False when none could move.
bool MakeRoom(const std::string& symbol, const ShapeFamilyOptions& family, Sizes& a) {
  int64_t next = family.bounds.at(symbol) + 2;
  bool moved = false;
  for (auto& [other, size] : a) {
    if (other == symbol || size >= next || family.bounds.at(other) < next) continue;
    size = next;
    next += 3;
    moved = true;
  }
  return moved;
}

// Moved is `a` with `symbol` one more (one less at its bound): a check
// build, in which only that symbol's size changes.
Sizes Moved(const Sizes& a, const std::string& symbol, const ShapeFamilyOptions& family) {
  Sizes b = a;
  b[symbol] = a.at(symbol) < family.bounds.at(symbol) ? a.at(symbol) + 1 : a.at(symbol) - 1;
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
  // This build's values, not the graph's first error, which may be another
  // build's (a ShapeFamily binding that failed before).
  for (const Value& value : out.fetches) DAGRAD_RETURN_IF_ERROR(value.status());
  for (const Value& value : out.targets) DAGRAD_RETURN_IF_ERROR(value.status());
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

// IsNeverASize: integer attributes that hold axes, flags or counts of a
// layer, never a size, which equal to a symbol's size are no coincidence
// (a permutation's 2 is an axis): they must only be the same in both builds.
bool IsNeverASize(const std::string& name) {
  constexpr absl::string_view kNames[] = {
      "axis",    "axes",      "perm",      "keepdims",          "stream",
      "seed",    "sorted",    "largest",   "reverse",           "exclusive",
      "heads",   "select_last_index",      "noop_with_empty_axes"};
  return std::find(std::begin(kNames), std::end(kNames), name) != std::end(kNames);
}

void CompareAttrs(const Node& na, const Node& nb, const Sizes& sa, const Sizes& sb, Verdict& v) {
  const auto& ea = na.attrs.entries();
  const auto& eb = nb.attrs.entries();
  for (size_t i = 0; i < ea.size() && i < eb.size(); ++i) {
    const std::string where = absl::StrCat(na.path(), "'s attribute ", ea[i].first);
    if (IsNeverASize(ea[i].first)) {
      if (ea[i] != eb[i] && v.error.ok()) {
        v.error = absl::InvalidArgumentError(
            absl::StrCat("ONNX export: ", where, " depends on the sizes"));
      }
      continue;
    }
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

// Check compares the nodes of build A, [first_a, end_a), with B's,
// [first_b, end).
Verdict Check(const Graph& g, NodeId first_a, NodeId end_a, NodeId first_b, NodeId end,
              const Sizes& sa, const Sizes& sb) {
  Verdict v;
  if (end_a - first_a != end - first_b) {
    v.error = absl::InvalidArgumentError(absl::StrCat(
        "ONNX export: the graph's ops depend on the sizes (", end_a - first_a, " nodes, then ",
        end - first_b, ")"));
    return v;
  }
  for (NodeId i = first_a; i < end_a && v.error.ok() && !v.coincidence; ++i) {
    CompareNodes(g, i, i + (first_b - first_a), first_b - first_a, first_a, sa, sb, v);
  }
  return v;
}

// CheckEachSymbol builds the graph once per symbol with only that symbol's
// size moved (Moved) and checks A, [first_a, end_a), against each: a size
// derived from one symbol that equals another's in A (T + 3 = B) changes
// when its own symbol moves and the other's does not, where builds with
// every symbol moved at once can move both alike (T + 3 and B + 1).
absl::StatusOr<Verdict> CheckEachSymbol(Graph& g, const ShapeFamilyOptions& family,
                                        const SpecializeFn& build, const Sizes& a,
                                        NodeId first_a, NodeId end_a, const std::string& scope) {
  Verdict v;
  for (const auto& [symbol, size] : a) {
    const Sizes b = Moved(a, symbol, family);
    const NodeId first_b = g.num_nodes();
    DAGRAD_RETURN_IF_ERROR(Build(g, family, build, b, absl::StrCat(scope, "/", symbol)).status());
    v = Check(g, first_a, end_a, first_b, g.num_nodes(), a, b);
    if (!v.error.ok() || v.coincidence) break;
  }
  return v;
}

}  // namespace

absl::StatusOr<std::string> SerializeOnnxFamily(Graph& g, const ShapeFamilyOptions& family,
                                                const SpecializeFn& build,
                                                const OnnxExportOptions& options) {
  DAGRAD_RETURN_IF_ERROR(CheckShapeFamilyOptions(family));
  DAGRAD_ASSIGN_OR_RETURN(const std::vector<std::string> order, SymbolOrder(family));
  Sizes a = FirstSizes(order, family);
  std::map<std::string, std::set<int64_t>> tried;  // per symbol, the sizes that coincided
  std::set<std::string> made_room;                 // symbols MakeRoom moved the others for
  for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
    // Named by the graph's size: unique however often a graph is exported.
    const std::string scope = absl::StrCat("onnx_export_", g.num_nodes());
    const NodeId first_a = g.num_nodes();
    DAGRAD_ASSIGN_OR_RETURN(Specialized built, Build(g, family, build, a, scope + "/a"));
    DAGRAD_ASSIGN_OR_RETURN(const Verdict v, CheckEachSymbol(g, family, build, a, first_a,
                                                             g.num_nodes(), scope + "/moved"));
    DAGRAD_RETURN_IF_ERROR(v.error);
    if (v.coincidence) {
      if (MoveOff(v.symbol, family, a, tried[v.symbol])) continue;
      if (made_room.insert(v.symbol).second && MakeRoom(v.symbol, family, a) &&
          MoveOff(v.symbol, family, a, tried[v.symbol])) {
        continue;
      }
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
