// gather and scatter_add, each read top to bottom: shape inference, CPU
// kernel, gradient rule, OpDef, builder.
//
// Both see their tensors as (outer, n, inner) around the indexed axis, with
// K = the number of indices: gather copies K rows of `inner` elements per
// outer index, scatter_add adds K rows into n. Indices are data, so they are
// checked when the kernel runs, before anything is written.

#include "ops/gather.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "engine/status_macros.h"
#include "ops/cpu/parallel.h"
#include "ops/elementwise.h"
#include "ops/fill.h"
#include "ops/op_util.h"
#include "ops/registry.h"
#include "ops/select.h"

namespace dagrad {
namespace {

int64_t DimsProduct(const Shape& s, int begin, int end) {
  int64_t n = 1;
  for (int i = begin; i < end; ++i) n *= s[i];
  return n;
}

// CheckIndices returns InvalidArgument for the first index outside
// [lowest, n), naming its value and position; `range_of` says what n is.
template <typename I>
absl::Status CheckIndices(const I* idx, const Shape& shape, int64_t lowest, int64_t n,
                          const std::string& range_of) {
  const int64_t k = shape.num_elements();
  for (int64_t i = 0; i < k; ++i) {
    if (idx[i] < lowest || idx[i] >= n) {
      return absl::InvalidArgumentError(
          absl::StrCat("indices[", FormatIndex(i, shape), "] = ", idx[i], " is out of range [",
                       lowest, ", ", n, ") for ", range_of, " (indices ", shape.ToString(), ")"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

// ---- gather -----------------------------------------------------------------

namespace {

absl::StatusOr<TensorType> InferGather(const InferContext& ctx) {
  if (absl::Status st = RequireIndex(ctx, 1, "indices"); !st.ok()) return st;
  const Shape& p = ctx.in(0).shape;
  if (p.rank() < 1) return absl::InvalidArgumentError("params must have rank >= 1");
  auto axis = NormalizeAxis(ctx.attrs.GetInt("axis"), p.rank());
  if (!axis.ok()) return axis.status();
  Dims out(p.dims().begin(), p.dims().begin() + *axis);
  for (int64_t d : ctx.in(1).shape.dims()) out.push_back(d);
  for (int i = *axis + 1; i < p.rank(); ++i) out.push_back(p[i]);
  return TensorType{ctx.in(0).dtype, Shape(out)};
}

absl::Status GatherKernel(const KernelContext& ctx) {
  const Shape& p = *ctx.in(0).shape;
  const Shape& idx_shape = *ctx.in(1).shape;
  DAGRAD_ASSIGN_OR_RETURN(const int axis, NormalizeAxis(ctx.attrs().GetInt("axis"), p.rank()));
  const int64_t outer = DimsProduct(p, 0, axis), n = p[axis];
  const int64_t inner = DimsProduct(p, axis + 1, p.rank());
  const int64_t k = idx_shape.num_elements();
  const int64_t lowest = ctx.attrs().GetBool("from_end") ? -n : 0;
  return DispatchIndex(ctx.in(1).dtype, [&](auto index_tag) {
    using I = decltype(index_tag);
    const I* idx = ctx.in(1).as<I>();
    if (absl::Status st = CheckIndices(idx, idx_shape, lowest, n,
                                       absl::StrCat("axis ", axis, " of params ", p.ToString()));
        !st.ok()) {
      return st;
    }
    // A row copy: by element size, for every dtype.
    return DispatchBySize(ctx.output.dtype, [&](auto tag) {
      using T = decltype(tag);
      const T* src = static_cast<const T*>(ctx.in(0).data);
      T* y = static_cast<T*>(ctx.output.data);
      // One output row per (outer, index) pair.
      ParallelFor(outer * k, RowGrain(inner),
                  [&](int64_t b, int64_t e) {
        for (int64_t r = b; r < e; ++r) {
          const int64_t ix = idx[r % k] < 0 ? idx[r % k] + n : idx[r % k];
          const T* row = src + (r / k * n + ix) * inner;
          std::copy(row, row + inner, y + r * inner);
        }
      });
      return absl::OkStatus();
    });
  });
}

// y = gather(p, idx, axis): dp = scatter_add(idx, g) into p's length along
// axis (with from_end, the indices counted from the start); idx takes none.
std::vector<Value> GatherBackward(const GradContext& c) {
  const Value p = c.inputs[0];
  const absl::StatusOr<int> axis = NormalizeAxis(c.attrs().GetInt("axis"), p.rank());
  if (!axis.ok()) return {p.graph()->Error(axis.status()), Value()};
  Value idx = c.inputs[1];
  if (c.attrs().GetBool("from_end")) {
    Graph& g = *idx.graph();
    const Value zero = Fill(g, Shape(), int64_t{0}, idx.dtype());
    const Value n = Fill(g, Shape(), p.dim(*axis), idx.dtype());
    idx = Where(Less(idx, zero), Add(idx, n), idx);
  }
  return {ScatterAdd(idx, c.grad, p.dim(*axis), *axis), Value()};
}

const OpDef kGather = {.name = "gather",
                       .dot_label = "Gather",
                       .infer = InferGather,
                       .cpu = GatherKernel,
                       .grad = GatherBackward,
                       .nondiff_inputs = 0b10,
                       .reduced_floats = kReducedFloatBits,
                       .onnx = kOnnxExporter};

}  // namespace

DAGRAD_REGISTER_OP(kGather, gather);

Value Gather(Value params, Value indices, int64_t axis) {
  return BuildOp(kGather, {params, indices}, Attrs().Int("axis", axis));
}

Value GatherFromEnd(Value params, Value indices, int64_t axis) {
  return BuildOp(kGather, {params, indices}, Attrs().Int("axis", axis).Bool("from_end", true));
}

Value Embedding(Value table, Value ids) { return Gather(table, ids, 0); }

// ---- scatter_add ------------------------------------------------------------

namespace {

// scatter_add(indices, updates) with attributes axis and n.
absl::StatusOr<TensorType> InferScatterAdd(const InferContext& ctx) {
  if (absl::Status st = RequireIndex(ctx, 0, "indices"); !st.ok()) return st;
  if (absl::Status st = RequireFloat(ctx, 1, "updates"); !st.ok()) return st;
  const Shape& idx = ctx.in(0).shape;
  const Shape& upd = ctx.in(1).shape;
  const int64_t axis = ctx.attrs.GetInt("axis"), n = ctx.attrs.GetInt("n");
  if (n < 0) return absl::InvalidArgumentError(absl::StrCat("n must be >= 0, got ", n));
  if (axis < 0 || axis > upd.rank() - idx.rank()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "axis must be in [0, ", upd.rank() - idx.rank(), "] (the rank of updates ",
        upd.ToString(), " less that of indices ", idx.ToString(), "), got ", axis));
  }
  bool match = true;
  for (int i = 0; match && i < idx.rank(); ++i) match = upd[axis + i] == idx[i];
  if (!match) {
    return absl::InvalidArgumentError(absl::StrCat(
        "updates ", upd.ToString(), " must have the indices' shape ", idx.ToString(),
        " at axis ", axis));
  }
  Dims out(upd.dims().begin(), upd.dims().begin() + axis);
  out.push_back(n);
  for (int i = static_cast<int>(axis) + idx.rank(); i < upd.rank(); ++i) out.push_back(upd[i]);
  return TensorType{ctx.in(1).dtype, Shape(out)};
}

// IndexGroups returns the positions 0..k-1 stably sorted by their index
// (`order`) and where each run of one index starts in it (`starts`, with k
// appended): the update rows that add into each output row, in index order.
struct IndexGroups {
  std::vector<int64_t> order, starts;
};

template <typename I>
IndexGroups GroupByIndex(const I* idx, int64_t k) {
  IndexGroups g;
  g.order.resize(k);
  for (int64_t i = 0; i < k; ++i) g.order[i] = i;
  std::stable_sort(g.order.begin(), g.order.end(),
                   [&](int64_t a, int64_t b) { return idx[a] < idx[b]; });
  for (int64_t i = 0; i < k; ++i) {
    if (i == 0 || idx[g.order[i]] != idx[g.order[i - 1]]) g.starts.push_back(i);
  }
  g.starts.push_back(k);
  return g;
}

// A task is kScatterTile columns of one output row that some index hits: its
// update rows (a run of the groups) are summed in double and written once.
// A row hit by many indices (a padding token's embedding) thus agrees with
// float64, no two tasks write the same elements, and the result does not
// depend on the thread count.
constexpr int64_t kScatterTile = 256;

template <typename T, typename I>
void ScatterAddRows(const I* idx, const T* upd, T* y, int64_t outer, int64_t n, int64_t k,
                    int64_t inner) {
  const IndexGroups groups = GroupByIndex(idx, k);
  const int64_t runs = static_cast<int64_t>(groups.starts.size()) - 1;
  const int64_t tiles = (inner + kScatterTile - 1) / kScatterTile;
  const int64_t task_size = std::max<int64_t>(1, k / std::max<int64_t>(runs, 1) * kScatterTile);
  ParallelFor(outer * runs * tiles, RowGrain(task_size),
              [&](int64_t b, int64_t e) {
    double acc[kScatterTile];
    for (int64_t task = b; task < e; ++task) {
      const int64_t o = task / (runs * tiles), run = task / tiles % runs;
      const int64_t j0 = task % tiles * kScatterTile, len = std::min(kScatterTile, inner - j0);
      const int64_t first = groups.starts[run], last = groups.starts[run + 1];
      const T* src = upd + o * k * inner + j0;
      std::fill(acc, acc + len, 0.0);
      for (int64_t i = first; i < last; ++i) {
        const T* from = src + groups.order[i] * inner;
        for (int64_t j = 0; j < len; ++j) acc[j] += from[j];
      }
      T* dst = y + (o * n + static_cast<int64_t>(idx[groups.order[first]])) * inner + j0;
      for (int64_t j = 0; j < len; ++j) dst[j] = static_cast<T>(acc[j]);
    }
  });
}

absl::Status ScatterAddKernel(const KernelContext& ctx) {
  const Shape& idx_shape = *ctx.in(0).shape;
  const Shape& out = *ctx.output.shape;
  const int axis = static_cast<int>(ctx.attrs().GetInt("axis"));
  const int64_t outer = DimsProduct(out, 0, axis), n = out[axis];
  const int64_t inner = DimsProduct(out, axis + 1, out.rank());
  const int64_t k = idx_shape.num_elements();
  return DispatchIndex(ctx.in(0).dtype, [&](auto index_tag) {
    using I = decltype(index_tag);
    const I* idx = ctx.in(0).as<I>();
    if (absl::Status st = CheckIndices(idx, idx_shape, 0, n,
                                       absl::StrCat("axis ", axis, " of the output ",
                                                    out.ToString()));
        !st.ok()) {
      return st;
    }
    return DispatchFloat(ctx.output.dtype, [&](auto tag) {
      using T = decltype(tag);
      T* y = ctx.output.as<T>();
      std::fill(y, y + ctx.output.num_elements(), T(0));
      ScatterAddRows(idx, ctx.in(1).as<T>(), y, outer, n, k, inner);
      return absl::OkStatus();
    });
  });
}

// y = scatter_add(idx, u): du = g gathered at idx, scatter_add's adjoint.
std::vector<Value> ScatterAddBackward(const GradContext& c) {
  return {Value(), Gather(c.grad, c.inputs[0], c.attrs().GetInt("axis"))};
}

const OpDef kScatterAdd = {.name = "scatter_add",
                           .dot_label = "ScatterAdd",
                           .infer = InferScatterAdd,
                           .cpu = ScatterAddKernel,
                           .grad = ScatterAddBackward,
                           .nondiff_inputs = 0b01,
                           .onnx = NoOnnx("gather's backward op, not in inference graphs")};

}  // namespace

DAGRAD_REGISTER_OP(kScatterAdd, scatter_add);

Value ScatterAdd(Value indices, Value updates, int64_t n, int64_t axis) {
  return BuildOp(kScatterAdd, {indices, updates}, Attrs().Int("axis", axis).Int("n", n));
}

}  // namespace dagrad
