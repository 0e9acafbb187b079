// libFuzzer target: shape and size arithmetic with hostile sizes. Dims are
// drawn mostly from edge values (0, 1, 2^31, 2^32, 2^61, 2^62, INT64_MAX,
// ...), and inputs, parameters, BroadcastTo, Reshape (with -1) and Slice
// (any int64 start, end and step) are built from them, then compiled under
// a 64 MiB limit and, when that passes, run. Every failure must be a
// Status. Traps when broken:
//   - CheckedAdd, CheckedMul and SliceLength disagree with 128-bit
//     arithmetic (SliceLength against a direct transcription of Python's
//     rule);
//   - a node the graph accepted holds more than 2^62 bytes;
//   - a plan the limit accepted has a bigger arena than the limit.

#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <vector>

#include "engine/checked_math.h"
#include "engine/executor.h"
#include "ops/elementwise.h"
#include "ops/shape_ops.h"

namespace {

using namespace dagrad;
using int128 = __int128;

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kEdges[] = {0,  1,  2,  3,  7,  int64_t{1} << 31, int64_t{1} << 32,
                              int64_t{1} << 61, int64_t{1} << 62, kMax, kMax - 1, -1, kMin};

int64_t HostileInt(FuzzedDataProvider& in) {
  if (in.ConsumeBool()) return in.PickValueInArray(kEdges);
  return in.ConsumeIntegral<int64_t>();
}

int64_t HostileDim(FuzzedDataProvider& in) {
  return in.ConsumeBool() ? in.ConsumeIntegralInRange<int64_t>(0, 4) : HostileInt(in);
}

Shape HostileShape(FuzzedDataProvider& in) {
  Dims dims(in.ConsumeIntegralInRange(0, 4));
  for (int64_t& d : dims) d = HostileDim(in);
  return Shape(dims);
}

// Python's len(range(n)[a:b:c]) in 128-bit arithmetic, step != 0.
int64_t ReferenceSliceLength(int128 n, int128 a, int128 b, int128 c) {
  const int128 lower = c > 0 ? 0 : -1, upper = c > 0 ? n : n - 1;
  auto adjust = [&](int128 v) { return v < 0 ? std::max(v + n, lower) : std::min(v, upper); };
  a = adjust(a);
  b = adjust(b);
  if (c > 0) return static_cast<int64_t>(a < b ? (b - a - 1) / c + 1 : 0);
  return static_cast<int64_t>(b < a ? (a - b - 1) / -c + 1 : 0);
}

void CheckArithmetic(FuzzedDataProvider& in) {
  const int64_t a = HostileInt(in), b = HostileInt(in);
  const int128 sum = int128{a} + b, product = int128{a} * b;
  const auto checked_sum = CheckedAdd(a, b), checked_product = CheckedMul(a, b);
  if (checked_sum.has_value() != (sum >= kMin && sum <= kMax)) std::abort();
  if (checked_sum && *checked_sum != sum) std::abort();
  if (checked_product.has_value() != (product >= kMin && product <= kMax)) std::abort();
  if (checked_product && *checked_product != product) std::abort();
  const int64_t n = in.ConsumeIntegralInRange<int64_t>(0, kMax);
  const int64_t start = HostileInt(in), end = HostileInt(in), step = HostileInt(in);
  if (step != 0 && SliceLength(n, start, end, step) != ReferenceSliceLength(n, start, end, step)) {
    std::abort();
  }
}

void CheckAccepted(const Value& v) {
  if (v.ok() && !CheckedBytes(v.shape().num_elements(), SizeOf(v.dtype())).has_value()) {
    std::abort();
  }
}

Value HostileOp(FuzzedDataProvider& in, Graph& g, Value x) {
  switch (in.ConsumeIntegralInRange(0, 3)) {
    case 0:
      return BroadcastTo(x, HostileShape(in));
    case 1: {
      std::vector<int64_t> dims(in.ConsumeIntegralInRange(0, 4));
      for (int64_t& d : dims) d = in.ConsumeIntegralInRange(0, 5) == 0 ? -1 : HostileDim(in);
      return Reshape(x, dims);
    }
    case 2:
      return Slice(x, in.ConsumeIntegralInRange(-4, 4), HostileInt(in), HostileInt(in),
                   HostileInt(in));
    default:
      return Exp(x);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  CheckArithmetic(in);
  Graph g;
  const DType dtype = in.ConsumeBool() ? DType::kFloat32 : DType::kFloat64;
  Value x = in.ConsumeBool() ? g.Input("x", dtype, HostileShape(in))
                             : g.Constant(dtype == DType::kFloat32 ? Tensor::Scalar<float>(1)
                                                                   : Tensor::Scalar<double>(1),
                                          "scalar");
  CheckAccepted(x);
  std::vector<Value> fetches;
  for (int i = in.ConsumeIntegralInRange(1, 4); i > 0 && x.ok(); --i) {
    Value y = HostileOp(in, g, x);
    CheckAccepted(y);
    if (y.ok()) x = y;
  }
  if (!x.ok()) return 0;
  constexpr int64_t kLimit = int64_t{64} << 20;
  Executor exec(g, {.memory_limit_bytes = kLimit});
  auto plan = exec.Compile({x});
  if (!plan.ok()) return 0;
  if ((*plan)->peak_bytes() > kLimit) std::abort();
  Feeds feeds;
  for (NodeId id : (*plan)->info().inputs) {
    const Node& node = g.node(id);
    if (!CheckedBytes(node.shape.num_elements(), SizeOf(node.dtype)).has_value() ||
        node.shape.num_elements() > (int64_t{1} << 20)) {
      return 0;  // an input too big to feed here
    }
    auto t = Tensor::Zeros(node.dtype, node.shape);
    if (!t.ok()) return 0;
    feeds.push_back({g.value(id), *t});
  }
  (void)exec.Run(**plan, feeds);
  return 0;
}
