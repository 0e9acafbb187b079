// Binary elementwise ops with numpy broadcasting: arithmetic (differentiable),
// comparisons and logic (bool results, not differentiable).

#include "ops/cpu/internal/broadcast.h"
#include "ops/cpu/parallel.h"
#include "ops/elementwise.h"
#include "ops/op_util.h"
#include "ops/registry.h"
#include "ops/select.h"

namespace dagrad {
namespace {

enum class Want { kNumeric, kBool };

absl::StatusOr<TensorType> InferBinary(const InferContext& ctx, Want want,
                                       bool bool_result) {
  if (absl::Status st = RequireSameDType(ctx, 0, 1); !st.ok()) return st;
  const DType d = ctx.in(0).dtype;
  if (want == Want::kBool && d != DType::kBool) {
    return absl::InvalidArgumentError(
        absl::StrCat("inputs must be bool, got ", DTypeName(d)));
  }
  if (want == Want::kNumeric && d == DType::kBool) {
    return absl::InvalidArgumentError(
        "inputs must be numeric, got bool (Cast them to int32 first)");
  }
  auto shape = BroadcastShapes(ctx.in(0).shape, ctx.in(1).shape);
  if (!shape.ok()) return shape.status();
  return TensorType{bool_result ? DType::kBool : d, *std::move(shape)};
}

absl::StatusOr<TensorType> InferArith(const InferContext& c) {
  return InferBinary(c, Want::kNumeric, false);
}
absl::StatusOr<TensorType> InferCompare(const InferContext& c) {
  return InferBinary(c, Want::kNumeric, true);
}
absl::StatusOr<TensorType> InferLogic(const InferContext& c) {
  return InferBinary(c, Want::kBool, true);
}

// BinaryLoop computes out[i] = fn(a[.], b[.]) with broadcasting; equal
// shapes take a flat loop the compiler vectorises.
template <typename In, typename Out, typename Fn>
void BinaryLoop(const KernelContext& ctx, Fn fn) {
  const In* a = ctx.in(0).as<In>();
  const In* b = ctx.in(1).as<In>();
  Out* y = ctx.output.as<Out>();
  const Shape& out = *ctx.output.shape;
  if (*ctx.in(0).shape == out && *ctx.in(1).shape == out) {
    ParallelFor(out.num_elements(), kElementGrain, [=](int64_t s, int64_t e) {
      for (int64_t i = s; i < e; ++i) y[i] = fn(a[i], b[i]);
    });
    return;
  }
  const StridedLoop<2> loop = BroadcastLoop<2>(out, {ctx.in(0).shape, ctx.in(1).shape});
  loop.Run([&](int64_t o, const int64_t* in, const int64_t* step, int64_t n) {
    const In* pa = a + in[0];
    const In* pb = b + in[1];
    for (int64_t i = 0; i < n; ++i) y[o + i] = fn(pa[i * step[0]], pb[i * step[1]]);
  });
}

// ArithKernel runs Fn on every numeric dtype, or on the floats alone for a
// float-only Fn (kFloatOnly).
template <typename Fn>
absl::Status ArithKernel(const KernelContext& ctx) {
  const auto run = [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T> && std::is_same_v<Fn, DivFn>) {
      // Integer division by zero would kill the process (SIGFPE). An empty
      // output divides nothing (a broadcast divisor may still hold a 0).
      const T* b = ctx.in(1).as<T>();
      if (ctx.output.num_elements() == 0) return absl::OkStatus();
      for (int64_t i = 0; i < ctx.in(1).num_elements(); ++i) {
        if (b[i] == 0) {
          return absl::InvalidArgumentError(
              absl::StrCat("integer division by zero (divisor element ", i, ")"));
        }
      }
    }
    BinaryLoop<T, T>(ctx, Fn());
    return absl::OkStatus();
  };
  if constexpr (kFloatOnly<Fn>) {
    return DispatchFloat(ctx.output.dtype, run);
  } else {
    return DispatchNumeric(ctx.output.dtype, "arithmetic on bool", run);
  }
}

template <typename Fn>
absl::Status CompareKernel(const KernelContext& ctx) {
  return DispatchAny(ctx.in(0).dtype, [&](auto tag) {
    using T = decltype(tag);
    BinaryLoop<T, bool>(ctx, Fn());
    return absl::OkStatus();
  });
}

Value Binary(const OpDef& op, Value a, Value b) { return BuildOp(op, {a, b}); }

}  // namespace

// In the gradient rules below, `c.grad` has the output's (broadcast) shape;
// autodiff reduces each gradient to its input's shape.

// ---- add, sub: y = a + b, y = a - b -----------------------------------------

namespace {
std::vector<Value> AddBackward(const GradContext& c) { return {c.grad, c.grad}; }
const OpDef kAdd = {.name = "add", .dot_label = "Add", .infer = InferArith,
                    .cpu = ArithKernel<AddFn>, .grad = AddBackward, .inplace = true,
                    .onnx = OnnxTwin("Add")};

std::vector<Value> SubBackward(const GradContext& c) {
  return {c.grad, c.needs[1] ? -c.grad : Value()};
}
const OpDef kSub = {.name = "sub", .dot_label = "Sub", .infer = InferArith,
                    .cpu = ArithKernel<SubFn>, .grad = SubBackward, .inplace = true,
                    .onnx = OnnxTwin("Sub")};
}  // namespace

DAGRAD_REGISTER_OP(kAdd, add);
DAGRAD_REGISTER_OP(kSub, sub);

Value Add(Value a, Value b) { return Binary(kAdd, a, b); }
Value Sub(Value a, Value b) { return Binary(kSub, a, b); }

// ---- mul: y = a b -----------------------------------------------------------

namespace {
std::vector<Value> MulBackward(const GradContext& c) {
  return {c.needs[0] ? c.grad * c.inputs[1] : Value(),
          c.needs[1] ? c.grad * c.inputs[0] : Value()};
}
const OpDef kMul = {.name = "mul", .dot_label = "Mul", .infer = InferArith,
                    .cpu = ArithKernel<MulFn>, .grad = MulBackward, .inplace = true,
                    .onnx = OnnxTwin("Mul")};
}  // namespace

DAGRAD_REGISTER_OP(kMul, mul);

Value Mul(Value a, Value b) { return Binary(kMul, a, b); }

// ---- div: y = a / b, dL/da = g / b, dL/db = -g a / b^2 = -g (y / b) ----------
//
// In PyTorch's order: -(g / b) y was NaN where a = 0 and g / b overflows
// (inf times 0), and is 0 there.

namespace {
std::vector<Value> DivBackward(const GradContext& c) {
  return {c.needs[0] ? c.grad / c.inputs[1] : Value(),
          c.needs[1] ? -(c.grad * (c.output / c.inputs[1])) : Value()};
}
const OpDef kDiv = {.name = "div", .dot_label = "Div", .infer = InferArith,
                    .cpu = ArithKernel<DivFn>, .grad = DivBackward, .inplace = true,
                    .onnx = OnnxTwin("Div")};
}  // namespace

DAGRAD_REGISTER_OP(kDiv, div);

Value Div(Value a, Value b) { return Binary(kDiv, a, b); }

// ---- maximum, minimum -------------------------------------------------------

namespace {
// Ties send the gradient to a, as the mask a >= b (or a <= b) picks it.
std::vector<Value> MaxMinBackward(const GradContext& c, bool is_max) {
  const Value a = c.inputs[0], b = c.inputs[1];
  Value to_a = Cast(LogicalNot(is_max ? Less(a, b) : Greater(a, b)), c.grad.dtype());
  return {c.needs[0] ? c.grad * to_a : Value(),
          c.needs[1] ? c.grad * (1.0 - to_a) : Value()};
}
std::vector<Value> MaximumBackward(const GradContext& c) { return MaxMinBackward(c, true); }
std::vector<Value> MinimumBackward(const GradContext& c) { return MaxMinBackward(c, false); }

const OpDef kMaximum = {.name = "maximum", .dot_label = "Maximum", .infer = InferArith,
                        .cpu = ArithKernel<MaxFn>, .grad = MaximumBackward, .inplace = true,
                        .onnx = OnnxTwin("Max")};
// An OpDef, not -Maximum(-a, -b): Neg is float-only, and that is four passes.
const OpDef kMinimum = {.name = "minimum", .dot_label = "Minimum", .infer = InferArith,
                        .cpu = ArithKernel<MinFn>, .grad = MinimumBackward, .inplace = true,
                        .onnx = OnnxTwin("Min")};
}  // namespace

DAGRAD_REGISTER_OP(kMaximum, maximum);
DAGRAD_REGISTER_OP(kMinimum, minimum);

Value Maximum(Value a, Value b) { return Binary(kMaximum, a, b); }
Value Minimum(Value a, Value b) { return Binary(kMinimum, a, b); }

// ---- atan2: dL/dy = g x / (x^2 + y^2), dL/dx = -g y / (x^2 + y^2) --------------

// An OpDef: no composition of dagrad's ops computes it (there is no atan).
namespace {
absl::StatusOr<TensorType> InferFloatArith(const InferContext& c) {
  if (absl::Status st = RequireFloat(c, 0, "y"); !st.ok()) return st;
  return InferArith(c);
}

// As torch's atan2_backward: g x r and -g y r, with r = 1 / (x^2 + y^2).
std::vector<Value> Atan2Backward(const GradContext& c) {
  const Value y = c.inputs[0], x = c.inputs[1];
  const Value r = Pow(y * y + x * x, -1.0);
  return {c.needs[0] ? c.grad * x * r : Value(), c.needs[1] ? c.grad * -y * r : Value()};
}

const OpDef kAtan2 = {.name = "atan2", .dot_label = "Atan2", .infer = InferFloatArith,
                      .cpu = ArithKernel<Atan2Fn>, .grad = Atan2Backward, .inplace = true,
                      .onnx = NoOnnx("ONNX (opset 17) has no atan2, and no exporter composes one")};
}  // namespace

DAGRAD_REGISTER_OP(kAtan2, atan2);

Value Atan2(Value y, Value x) { return Binary(kAtan2, y, x); }

// ---- pow_tensor: y = x^p, dL/dx = g p x^(p-1), dL/dp = g log(x) y ------------

// An OpDef: ONNX's Pow with an exponent per element (Pow is one exponent).
// As torch's pow_backward_self and pow_backward_exponent, the gradients are
// exactly 0 where the formulas would give 0 * inf = NaN: for x where p = 0
// (x^0 is the constant 1), for p where x = 0 and p >= 0 (0^p is 1 or 0,
// and log(0) y = -inf * 0).
namespace {
std::vector<Value> PowTensorBackward(const GradContext& c) {
  const Value x = c.inputs[0], p = c.inputs[1];
  const Value zero = ScalarLike(c.grad, 0.0);
  Value dx, dp;
  // g (p x^(p-1)), in torch's order: g p may overflow where x^(p-1) is 0.
  if (c.needs[0]) dx = Where(Equal(p, zero), zero, c.grad * (p * PowTensor(x, p - 1.0)));
  if (c.needs[1]) {
    const Value zero_power = LogicalAnd(Equal(x, zero), LogicalOr(Greater(p, zero), Equal(p, zero)));
    dp = c.grad * Where(zero_power, zero, Log(x) * c.output);
  }
  return {dx, dp};
}

const OpDef kPowTensor = {.name = "pow_tensor", .dot_label = "Pow", .infer = InferFloatArith,
                          .cpu = ArithKernel<PowTensorFn>, .grad = PowTensorBackward,
                          .inplace = true, .onnx = OnnxTwin("Pow")};
}  // namespace

DAGRAD_REGISTER_OP(kPowTensor, pow_tensor);

Value PowTensor(Value x, Value p) { return Binary(kPowTensor, x, p); }

// ---- comparisons: ==, <, > --------------------------------------------------

namespace {
const OpDef kEqual = {.name = "equal", .dot_label = "==", .infer = InferCompare,
                      .cpu = CompareKernel<EqFn>, .differentiable = false,
                      .onnx = OnnxTwin("Equal")};
const OpDef kLess = {.name = "less", .dot_label = "<", .infer = InferCompare,
                     .cpu = CompareKernel<LtFn>, .differentiable = false,
                     .onnx = OnnxTwin("Less")};
const OpDef kGreater = {.name = "greater", .dot_label = ">", .infer = InferCompare,
                        .cpu = CompareKernel<GtFn>, .differentiable = false,
                        .onnx = OnnxTwin("Greater")};
}  // namespace

DAGRAD_REGISTER_OP(kEqual, equal);
DAGRAD_REGISTER_OP(kLess, less);
DAGRAD_REGISTER_OP(kGreater, greater);

Value Equal(Value a, Value b) { return Binary(kEqual, a, b); }
Value Less(Value a, Value b) { return Binary(kLess, a, b); }
Value Greater(Value a, Value b) { return Binary(kGreater, a, b); }

// ---- logic: and, or, not ----------------------------------------------------

namespace {

absl::Status AndKernel(const KernelContext& ctx) {
  BinaryLoop<bool, bool>(ctx, AndFn());
  return absl::OkStatus();
}
absl::Status OrKernel(const KernelContext& ctx) {
  BinaryLoop<bool, bool>(ctx, OrFn());
  return absl::OkStatus();
}

const OpDef kAnd = {.name = "logical_and", .dot_label = "And", .infer = InferLogic,
                    .cpu = AndKernel, .differentiable = false, .inplace = true,
                    .onnx = OnnxTwin("And")};
const OpDef kOr = {.name = "logical_or", .dot_label = "Or", .infer = InferLogic,
                   .cpu = OrKernel, .differentiable = false, .inplace = true,
                   .onnx = OnnxTwin("Or")};

absl::StatusOr<TensorType> InferNot(const InferContext& ctx) {
  if (ctx.in(0).dtype != DType::kBool) {
    return absl::InvalidArgumentError(
        absl::StrCat("input must be bool, got ", DTypeName(ctx.in(0).dtype)));
  }
  return ctx.in(0);
}

absl::Status NotKernel(const KernelContext& ctx) {
  const bool* x = ctx.in(0).as<bool>();
  bool* y = ctx.output.as<bool>();
  for (int64_t i = 0, count = ctx.output.num_elements(); i < count; ++i) y[i] = !x[i];
  return absl::OkStatus();
}

const OpDef kNot = {.name = "logical_not", .dot_label = "Not", .infer = InferNot,
                    .cpu = NotKernel, .differentiable = false, .inplace = true,
                    .onnx = OnnxTwin("Not")};

}  // namespace

DAGRAD_REGISTER_OP(kAnd, logical_and);
DAGRAD_REGISTER_OP(kOr, logical_or);
DAGRAD_REGISTER_OP(kNot, logical_not);

Value LogicalAnd(Value a, Value b) { return Binary(kAnd, a, b); }
Value LogicalOr(Value a, Value b) { return Binary(kOr, a, b); }
Value LogicalNot(Value a) { return BuildOp(kNot, {a}); }

}  // namespace dagrad
