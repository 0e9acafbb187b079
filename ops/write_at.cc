// write_at: an in-place write of a slice of a variable at a fed position,
// read top to bottom: shape inference, its run-time check, CPU kernel,
// OpDef, builder.

#include "ops/write_at.h"

#include <cstdint>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/status_macros.h"
#include "ops/op_util.h"
#include "ops/registry.h"

namespace dagrad {
namespace {

absl::StatusOr<TensorType> InferWriteAt(const InferContext& ctx) {
  const TensorType &target = ctx.in(0), &value = ctx.in(1), &start = ctx.in(2);
  const int64_t axis = ctx.attrs.GetInt("axis");
  if (value.dtype != target.dtype || value.shape.rank() != target.shape.rank()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the value must have the target's dtype and rank: ", DTypeName(value.dtype), " ",
        value.shape.ToString(), " into ", DTypeName(target.dtype), " ", target.shape.ToString()));
  }
  for (int d = 0; d < target.shape.rank(); ++d) {
    const bool fits = d == axis ? value.shape[d] <= target.shape[d] : value.shape[d] == target.shape[d];
    if (!fits) {
      return absl::InvalidArgumentError(absl::StrCat(
          "value ", value.shape.ToString(), " does not fit target ", target.shape.ToString(),
          " along axis ", axis, " (dim ", d, ")"));
    }
  }
  if (start.dtype != DType::kInt64 || start.shape.num_elements() != 1 || start.shape.rank() > 1) {
    return absl::InvalidArgumentError(absl::StrCat("start must be int64 () or (1), got ",
                                                   DTypeName(start.dtype), " ",
                                                   start.shape.ToString()));
  }
  return TensorType{target.dtype, Shape({0})};
}

// WriteAtCheck refuses a start that would write outside the target.
absl::Status WriteAtCheck(const KernelContext& ctx) {
  if (!ctx.has(2)) return absl::OkStatus();  // computed on the device: the kernel checks
  const int64_t axis = ctx.attrs().GetInt("axis");
  const int64_t start = *ctx.in(2).as<int64_t>();
  if (start < 0 || start > ctx.in(0).dim(axis) - ctx.in(1).dim(axis)) {
    return absl::InvalidArgumentError(
        WriteAtStartMessage(start, *ctx.in(0).shape, *ctx.in(1).shape, axis));
  }
  return absl::OkStatus();
}

absl::Status WriteAtKernel(const KernelContext& ctx) {
  DAGRAD_RETURN_IF_ERROR(WriteAtCheck(ctx));
  const WriteAtRows w = WriteAtLayout(*ctx.in(0).shape, *ctx.in(1).shape, ctx.in(0).dtype,
                                      ctx.attrs().GetInt("axis"));
  const int64_t start = *ctx.in(2).as<int64_t>(), inner = w.inner_bytes;
  char* dst = ctx.in(0).as<char>();
  const char* src = ctx.in(1).as<char>();
  // The value may be a view of the variable itself (a shift). One block
  // moves as memmove moves it; over several, an earlier block's write would
  // land on bytes a later block still reads, so the value is copied aside.
  const int64_t value_bytes = w.outer * w.written * inner;
  std::vector<char> aside;
  if (w.outer > 1 && src < dst + w.outer * w.rows * inner && dst < src + value_bytes) {
    aside.assign(src, src + value_bytes);
    src = aside.data();
  }
  for (int64_t o = 0; o < w.outer; ++o) {
    std::memmove(dst + (o * w.rows + start) * inner, src + o * w.written * inner,
                 w.written * inner);
  }
  return absl::OkStatus();
}

const OpDef kWriteAt = {
    .name = "write_at", .dot_label = "WriteAt", .infer = InferWriteAt, .cpu = WriteAtKernel,
    .differentiable = false, .mutates = 0b1,
    .reduced_floats = DTypeBit(DType::kBFloat16) | DTypeBit(DType::kFloat16),
    .check = WriteAtCheck,
    .onnx = NoOnnx("a write of a variable (a KV cache), not in inference graphs")};

}  // namespace

DAGRAD_REGISTER_OP(kWriteAt, write_at);

WriteAtRows WriteAtLayout(const Shape& target, const Shape& value, DType dtype, int64_t axis) {
  WriteAtRows w{.rows = target[axis], .inner_bytes = static_cast<int64_t>(SizeOf(dtype)),
                .written = value[axis]};
  for (int d = 0; d < axis; ++d) w.outer *= target[d];
  for (int d = axis + 1; d < target.rank(); ++d) w.inner_bytes *= target[d];
  return w;
}

int WriteAtWordBytes(const WriteAtRows& w, const void* target, const void* value) {
  const auto fits = [&](int64_t bytes) {
    return w.inner_bytes % bytes == 0 && reinterpret_cast<uintptr_t>(target) % bytes == 0 &&
           reinterpret_cast<uintptr_t>(value) % bytes == 0;
  };
  return fits(4) ? 4 : fits(2) ? 2 : 1;
}

std::string WriteAtStartMessage(int64_t start, const Shape& target, const Shape& value,
                                int64_t axis) {
  return absl::StrCat("start ", start, " is outside [0, ", target[axis] - value[axis],
                      "]: writing ", value[axis], " along axis ", axis, " of ",
                      target.ToString());
}

Value WriteAt(Value target, Value value, Value start, int64_t axis) {
  const int64_t given = axis;
  if (target.ok() && axis < 0) axis += target.rank();
  if (target.ok() && (axis < 0 || axis >= target.rank())) {
    return target.graph()->Error(absl::InvalidArgumentError(absl::StrCat(
        "write_at: axis ", given, " is outside the target's rank ", target.rank())));
  }
  return BuildOp(kWriteAt, {target, value, start}, Attrs().Int("axis", axis));
}

}  // namespace dagrad
