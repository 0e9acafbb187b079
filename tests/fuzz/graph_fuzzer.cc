// libFuzzer target: graphs built from random op sequences with random
// shapes, dtypes and attributes, then (when they build) compiled, run with
// random feeds in training mode, and differentiated. Every failure must be a
// Status; nothing may crash, hang or exhaust memory (the executor has a
// memory limit).

#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <functional>

#include "engine/autodiff.h"
#include "engine/executor.h"
#include "ops/dropout.h"
#include "ops/elementwise.h"
#include "ops/fill.h"
#include "ops/gather.h"
#include "ops/layer_norm.h"
#include "ops/loss.h"
#include "ops/matmul.h"
#include "ops/reduce.h"
#include "ops/select.h"
#include "ops/shape_ops.h"
#include "ops/softmax.h"

namespace {

using namespace dagrad;

constexpr DType kDTypes[] = {DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kInt64,
                             DType::kBool};

Shape RandomShape(FuzzedDataProvider& in) {
  Dims dims(in.ConsumeIntegralInRange(0, 4));
  for (int64_t& d : dims) d = in.ConsumeIntegralInRange<int64_t>(0, 5);
  return Shape(dims);
}

std::vector<int64_t> RandomInts(FuzzedDataProvider& in, int max_len, int64_t lo, int64_t hi) {
  std::vector<int64_t> v(in.ConsumeIntegralInRange(0, max_len));
  for (int64_t& x : v) x = in.ConsumeIntegralInRange(lo, hi);
  return v;
}

Tensor RandomTensor(FuzzedDataProvider& in, DType dtype, const Shape& shape) {
  Tensor t = *Tensor::Zeros(dtype, shape);
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    switch (dtype) {
      case DType::kFloat32: t.data<float>()[i] = in.ConsumeFloatingPointInRange(-4.0f, 4.0f); break;
      case DType::kFloat64: t.data<double>()[i] = in.ConsumeFloatingPointInRange(-4.0, 4.0); break;
      case DType::kInt32: t.data<int32_t>()[i] = in.ConsumeIntegralInRange(-2, 6); break;
      case DType::kInt64: t.data<int64_t>()[i] = in.ConsumeIntegralInRange(-2, 6); break;
      case DType::kBool: t.data<bool>()[i] = in.ConsumeBool(); break;
    }
  }
  return t;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  Graph g;
  std::vector<Value> pool, inputs;
  const int n_inputs = in.ConsumeIntegralInRange(1, 4);
  for (int i = 0; i < n_inputs; ++i) {
    Value v = g.Input("in" + std::to_string(i), in.PickValueInArray(kDTypes), RandomShape(in));
    pool.push_back(v);
    inputs.push_back(v);
  }
  auto pick = [&] { return pool[in.ConsumeIntegralInRange<size_t>(0, pool.size() - 1)]; };
  const std::vector<std::function<Value()>> builders = {
      [&] { return Add(pick(), pick()); },
      [&] { return Mul(pick(), pick()); },
      [&] { return Div(pick(), pick()); },
      [&] { return Maximum(pick(), pick()); },
      [&] { return Less(pick(), pick()); },
      [&] { return LogicalAnd(pick(), pick()); },
      [&] { return Exp(pick()); },
      [&] { return Log(pick()); },
      [&] { return Pow(pick(), in.ConsumeFloatingPointInRange(-3.0, 3.0)); },
      [&] { return Gelu(pick()); },
      [&] { return Cast(pick(), in.PickValueInArray(kDTypes)); },
      [&] { return Sum(pick(), RandomInts(in, 3, -5, 5), in.ConsumeBool()); },
      [&] { return Max(pick(), RandomInts(in, 2, -5, 5), in.ConsumeBool()); },
      [&] { return Reshape(pick(), RandomInts(in, 4, -2, 6)); },
      [&] { return Permute(pick(), RandomInts(in, 4, -1, 4)); },
      [&] { return Transpose(pick(), in.ConsumeIntegralInRange(-5, 5), in.ConsumeIntegralInRange(-5, 5)); },
      [&] { return BroadcastTo(pick(), RandomShape(in)); },
      [&] { return Concat({pick(), pick()}, in.ConsumeIntegralInRange(-5, 5)); },
      [&] {
        return Slice(pick(), in.ConsumeIntegralInRange(-5, 5), in.ConsumeIntegralInRange(-8, 8),
                     in.ConsumeIntegralInRange(-8, 8), in.ConsumeIntegralInRange(-1, 3));
      },
      [&] { return MatMul(pick(), pick(), {in.ConsumeBool(), in.ConsumeBool()}); },
      [&] { return Linear(pick(), pick(), in.ConsumeBool() ? pick() : Value()); },
      [&] {
        SoftmaxMask m;
        if (in.ConsumeBool()) m.keep = pick();
        if (in.ConsumeBool()) m.valid_lens = pick();
        if (in.ConsumeBool()) m.bias = pick();
        m.causal = in.ConsumeBool();
        m.causal_offset = in.ConsumeIntegralInRange(-3, 3);
        return MaskedSoftmax(pick(), m, in.ConsumeFloatingPointInRange(-2.0, 2.0));
      },
      [&] { return LogSoftmax(pick()); },
      [&] { return Dropout(pick(), in.ConsumeFloatingPointInRange(-0.5, 1.5)); },
      [&] { return LayerNorm(pick(), in.ConsumeBool() ? pick() : Value(), Value(),
                             in.ConsumeFloatingPointInRange(-1e-3, 1e-2)); },
      [&] { return Gather(pick(), pick(), in.ConsumeIntegralInRange(-3, 3)); },
      [&] { return Where(pick(), pick(), pick()); },
      [&] { return Fill(g, RandomShape(in), in.ConsumeFloatingPointInRange(-2.0, 2.0), in.PickValueInArray(kDTypes)); },
      [&] {
        return Arange(g, in.ConsumeFloatingPointInRange(-1e3, 1e3), in.ConsumeFloatingPointInRange(-1e3, 1e3),
                      in.ConsumeFloatingPointInRange(-2.0, 2.0), in.PickValueInArray(kDTypes));
      },
      [&] {
        CrossEntropyOptions o;
        o.ignore_index = in.ConsumeIntegralInRange(-100, 3);
        o.reduction = static_cast<CrossEntropyOptions::Reduction>(in.ConsumeIntegralInRange(0, 2));
        return CrossEntropy(pick(), pick(), o);
      },
  };
  const int steps = in.ConsumeIntegralInRange(1, 12);
  for (int i = 0; i < steps && in.remaining_bytes() > 0; ++i) {
    Value v = builders[in.ConsumeIntegralInRange<size_t>(0, builders.size() - 1)]();
    if (v.ok()) pool.push_back(v);
  }
  const Value out = pool.back();
  Executor exec(g, {.seed = in.ConsumeIntegral<uint64_t>(),
                    .check_numerics = in.ConsumeBool(),
                    .memory_limit_bytes = 64 << 20});
  std::vector<Value> fetches = {out};
  if (IsFloating(out.dtype())) {
    std::vector<Value> wrt;
    for (const Value& v : inputs) {
      if (IsFloating(v.dtype())) wrt.push_back(v);
    }
    auto grads = Gradients(Sum(out), wrt);
    if (grads.ok()) {
      for (const Value& v : *grads) {
        if (v.ok()) fetches.push_back(v);
      }
    }
  }
  auto plan = exec.Compile(fetches);
  if (!plan.ok()) return 0;
  Feeds feeds;
  for (NodeId id : (*plan)->info().inputs) {
    const Node& n = g.node(id);
    feeds.push_back({g.value(id), RandomTensor(in, n.dtype, n.shape)});
  }
  (void)exec.Run(**plan, feeds, {.training = in.ConsumeBool(), .step = 1});
  return 0;
}
