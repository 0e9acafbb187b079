// ops/onnx/import_ops_nn.cc
//
// The ONNX importer's reductions, softmax, layer normalisation and dropout.

#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/status_macros.h"
#include "ops/dropout.h"
#include "ops/elementwise.h"
#include "ops/gather.h"
#include "ops/fill.h"
#include "ops/gelu.h"
#include "ops/layer_norm.h"
#include "ops/onnx/import_context.h"
#include "ops/reduce.h"
#include "ops/sampling.h"
#include "ops/select.h"
#include "ops/shape_ops.h"
#include "ops/softmax.h"

namespace dagrad {
namespace {

using Outputs = absl::StatusOr<std::vector<Value>>;

// SoftmaxFamily applies F along the node's axis. Before opset 13 the
// input is seen as 2-D, (prod(dims[:axis]), prod(dims[axis:])); from 13
// the axis is one axis, moved last and back.
template <Value (*F)(Value)>
Outputs SoftmaxFamily(OnnxNodeContext& c) {
  Value x = c.input(0);
  DAGRAD_RETURN_IF_ERROR(RequireFloatInput(c, x));
  const bool coerced = c.opset() < 13;
  DAGRAD_ASSIGN_OR_RETURN(int64_t axis,
                          c.Axis(c.Int("axis", coerced ? 1 : -1), x.rank()));
  if (coerced) {
    int64_t outer = 1, inner = 1;  // both given: -1 cannot be inferred for 0 elements
    for (int i = 0; i < x.rank(); ++i) (i < axis ? outer : inner) *= x.dim(i);
    return c.Outputs({Reshape(F(Reshape(x, {outer, inner})), DimsOf(x))});
  }
  if (axis == x.rank() - 1) return c.Outputs({F(x)});
  return c.Outputs({Transpose(F(Transpose(x, axis, -1)), axis, -1)});
}

Value Same(Value x) { return x; }
Value Square(Value x) { return Mul(x, x); }

// Reduction reads axes from an attribute, or from input 1 from
// `input_since` (ReduceSum 13; the others 18), and reduces Pre(x) with F
// (ReduceSumSquare is Sum of x * x); with no axes and
// noop_with_empty_axes, Pre(x) is the result, as ONNX's reference has it.
template <Value (*F)(Value, std::vector<int64_t>, bool), int64_t input_since,
          Value (*Pre)(Value) = Same>
Outputs Reduction(OnnxNodeContext& c) {
  Value x = Pre(c.input(0));
  std::vector<int64_t> axes = c.Ints("axes");
  if (c.opset() >= input_since && c.has_input(1)) {
    DAGRAD_ASSIGN_OR_RETURN(axes, c.KnownInts(1, "axes"));
  }
  if (axes.empty() && c.Int("noop_with_empty_axes", 0) != 0) return c.Outputs({x});
  return c.Outputs({F(x, axes, c.Int("keepdims", 1) != 0)});
}

// LayerNormalization normalises over axes [axis, rank): dagrad's LayerNorm
// over the last axis of x seen as (..., D). Mean and InvStdDev, when asked
// for, are computed from ordinary ops.
Outputs ImportLayerNorm(OnnxNodeContext& c) {
  Value x = c.input(0);
  DAGRAD_RETURN_IF_ERROR(RequireFloatInput(c, x));
  DAGRAD_ASSIGN_OR_RETURN(int64_t axis, c.Axis(c.Int("axis", -1), x.rank()));
  const double eps = c.Float("epsilon", 1e-5f);
  const std::vector<int64_t> dims = DimsOf(x);
  std::vector<int64_t> rows(dims.begin(), dims.begin() + axis), axes;
  int64_t d = 1;
  for (int i = axis; i < x.rank(); ++i) d *= x.dim(i), axes.push_back(i);
  rows.push_back(d);
  // Scale and B broadcast to the normalised shape, as ONNX Runtime takes them.
  const Shape normalized(std::vector<int64_t>(dims.begin() + axis, dims.end()));
  auto flat = [&](Value p) {
    if (!p.ok()) return p.is_null() ? p : Reshape(p, {d});  // null, or an error to pass on
    return Reshape(p.shape() == normalized ? p : BroadcastTo(p, normalized), {d});
  };
  Value scale = flat(c.input(1)), bias = c.has_input(2) ? flat(c.input(2)) : Value();
  Value y = Reshape(LayerNorm(Reshape(x, rows), scale, bias, eps), dims);
  std::vector<Value> out = {y};
  if (c.node().output_size() > 1) {
    Value mean = Mean(x, axes, true);
    Value var = Mean(Pow(Sub(x, mean), 2.0), axes, true);
    out.push_back(mean);
    out.push_back(Rsqrt(AddScalar(var, eps)));
  }
  return c.Outputs(out);
}

// DropoutRatio returns the ratio: the attribute before opset 12, then
// input 1, which must be known.
absl::StatusOr<double> DropoutRatio(OnnxNodeContext& c) {
  if (c.opset() < 12 || !c.has_input(1)) return c.Float("ratio", 0.5f);
  DAGRAD_ASSIGN_OR_RETURN(Tensor r, c.KnownInput(1, "ratio"));
  DAGRAD_ASSIGN_OR_RETURN(std::vector<double> v, TensorAsDoubles(r));
  if (v.size() != 1) return c.Error("ratio must be a scalar");
  return v[0];
}

// Dropout is dagrad's: active in training runs (RunOptions::training), the
// identity otherwise. A training_mode input must be known: false (or a
// ratio of 0) is that; true with a ratio above 0 asks for a random mask in
// every run, which dagrad draws only in training runs. The mask output is
// DropoutKeepMask: y's own mask in a training run, all true otherwise (1s
// of x's dtype before opset 10).
Outputs ImportDropout(OnnxNodeContext& c) {
  Value x = c.input(0);
  DAGRAD_RETURN_IF_ERROR(RequireFloatInput(c, x));
  DAGRAD_ASSIGN_OR_RETURN(double ratio, DropoutRatio(c));
  if (c.has_input(2)) {
    DAGRAD_ASSIGN_OR_RETURN(Tensor mode, c.KnownInput(2, "training_mode"));
    if (mode.dtype() != DType::kBool || mode.shape().num_elements() != 1) {
      return c.Error(absl::StrCat("training_mode must be a bool scalar, not ",
                                  mode.TypeString()));
    }
    if (*mode.data<bool>() && ratio != 0.0) {
      return c.Unsupported(
          "Dropout with training_mode true and a ratio above 0 (dagrad's Dropout draws its "
          "mask in training runs only, RunOptions::training)");
    }
  }
  Value y = Dropout(x, ratio);
  if (c.node().output_size() < 2 || c.node().output(1).empty()) return c.Outputs({y});
  // The mask is bool from opset 10, x's dtype before (Dropout-7's T).
  Value mask = DropoutKeepMask(y);
  return c.Outputs({y, c.opset() < 10 ? Cast(mask, x.dtype()) : mask});
}

// ReduceMin is -ReduceMax(-x); an integer's lowest value has no negation,
// so integers are left to a min op dagrad does not have yet.
Outputs ImportReduceMin(OnnxNodeContext& c) {
  Value x = c.input(0);
  DAGRAD_RETURN_IF_ERROR(RequireFloatInput(c, x));
  if (c.opset() >= 18 && c.has_input(1)) return c.Unsupported("axes as an input");
  std::vector<int64_t> axes = c.Ints("axes");
  return c.Outputs({Neg(Max(Neg(x), axes, c.Int("keepdims", 1) != 0))});
}

// LastArgMax returns the index of the last maximum along `axis`:
// n - 1 - ArgMax of x reversed along it. The reversed indices are an
// IndexRange, made when the plan is compiled (under its memory limit), not
// here, whatever n the file declares.
absl::StatusOr<Value> LastArgMax(Graph& g, Value x, int64_t axis) {
  const int64_t n = x.dim(axis);
  DAGRAD_ASSIGN_OR_RETURN(Value reversed, IndexRange(g, n - 1, -1, -1));
  return Sub(ScalarConstant(g, DType::kInt64, int64_t{n - 1}),
             ArgMax(Gather(x, reversed, axis), axis));
}

// ArgExtreme is ArgMax, or ArgMin as the ArgMax of -x (floats), the first
// or (select_last_index) the last on ties, as ONNX.
template <bool kMin>
Outputs ArgExtreme(OnnxNodeContext& c) {
  Value x = c.input(0);
  if (kMin) {
    DAGRAD_RETURN_IF_ERROR(RequireFloatInput(c, x));
    x = Neg(x);
  }
  DAGRAD_ASSIGN_OR_RETURN(int64_t axis, c.Axis(c.Int("axis", 0), x.rank()));
  Value y;
  if (c.Int("select_last_index", 0) != 0) {
    DAGRAD_ASSIGN_OR_RETURN(y, LastArgMax(c.graph(), x, axis));
  } else {
    y = ArgMax(x, axis);
  }
  if (c.Int("keepdims", 1) == 0) return c.Outputs({y});
  std::vector<int64_t> dims = DimsOf(x);
  dims[axis] = 1;
  return c.Outputs({Reshape(y, dims)});
}

// Trilu keeps the upper (j - i >= k) or lower (j - i <= k) triangle of the
// last two axes: a Where with a mask made at import.
Outputs ImportTrilu(OnnxNodeContext& c) {
  Value x = c.input(0);
  if (x.rank() < 2) return c.Error("Trilu needs rank >= 2");
  int64_t k = 0;
  if (c.has_input(1)) {
    DAGRAD_ASSIGN_OR_RETURN(std::vector<int64_t> ks, c.KnownInts(1, "k"));
    if (ks.size() != 1) return c.Error("k must hold one value");
    k = ks[0];
  }
  // keep[i, j] = (j - i >= k) for upper, (j - i <= k) for lower, from
  // IndexRanges folded when the plan is compiled. k stays an int64 (any k,
  // up to INT64_MAX), and Not(Less) is >= exactly: integers have no NaN.
  Graph& g = c.graph();
  const int64_t n = x.dim(-2), m = x.dim(-1);
  DAGRAD_ASSIGN_OR_RETURN(Value rows, IndexRange(g, 0, n, 1));
  DAGRAD_ASSIGN_OR_RETURN(Value columns, IndexRange(g, 0, m, 1));
  Value diff = Sub(Reshape(columns, {1, m}), Reshape(rows, {n, 1}));
  Value bound = ScalarConstant(g, DType::kInt64, k);
  Value keep = c.Int("upper", 1) != 0 ? LogicalNot(Less(diff, bound)) : LogicalNot(Greater(diff, bound));
  return c.Outputs({Where(keep, x, ScalarConstant(g, x.dtype(), int64_t{0}))});
}

// Gelu is ONNX's (opset 20) and what import_gelu.cc fuses PyTorch's
// erf-based GELU into.
Outputs ImportGelu(OnnxNodeContext& c) {
  Value x = c.input(0);
  DAGRAD_RETURN_IF_ERROR(RequireFloatInput(c, x));
  const onnx::AttributeProto* a = c.attr("approximate");
  if (a == nullptr || a->s() == "none") return c.Outputs({Gelu(x)});
  if (a->s() == "tanh") return c.Outputs({Gelu(x, GeluApproximate::kTanh)});
  return c.Error(absl::StrCat("approximate '", a->s(), "'"));
}

}  // namespace

std::vector<OnnxOpEntry> OnnxNnOps() {
  return {
      {"Softmax", SoftmaxFamily<Softmax>},
      {"LogSoftmax", SoftmaxFamily<LogSoftmax>},
      {"ReduceSum", Reduction<Sum, 13>},
      {"ReduceMean", Reduction<Mean, 18>},
      {"ReduceMax", Reduction<Max, 18>},
      {"ReduceSumSquare", Reduction<Sum, 18, Square>},
      {"LayerNormalization", ImportLayerNorm},
      {"Dropout", ImportDropout, /*foldable=*/false},
      {"ArgMax", ArgExtreme<false>},
      {"ArgMin", ArgExtreme<true>},
      {"ReduceMin", ImportReduceMin},
      {"Trilu", ImportTrilu},
      {"Gelu", ImportGelu},
  };
}

}  // namespace dagrad
