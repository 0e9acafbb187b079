// libFuzzer target: graphs built from random op sequences with random
// shapes, dtypes and attributes over inputs, constants and parameters, then
// (when they build) differentiated with respect to a random set of values
// (with parameters made after the loss, and unused ones), given optimizer
// updates, more ops built after those, compiled and run with random feeds.
// Every failure must be a Status; nothing may crash, hang or exhaust memory
// (shapes are at most 5^4 elements and the executor has a memory limit).
// Two properties trap when broken: a value made after the loss has a null
// gradient, and a run that fails has changed no variable (executor.h).

#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/bfloat16.h"
#include "engine/executor.h"
#include "ops/autodiff/autodiff.h"
#include "ops/dropout.h"
#include "ops/elementwise.h"
#include "ops/fill.h"
#include "ops/gather.h"
#include "ops/layer_norm.h"
#include "ops/loss.h"
#include "ops/matmul.h"
#include "ops/optim.h"
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
      case DType::kBFloat16:
        t.data<BFloat16>()[i] = FloatToBFloat16(in.ConsumeFloatingPointInRange(-4.0f, 4.0f));
        break;
      case DType::kFloat16:
        t.data<Float16>()[i] = FloatToFloat16(in.ConsumeFloatingPointInRange(-4.0f, 4.0f));
        break;
    }
  }
  return t;
}

// AddParameter adds a float parameter of random shape with a random
// constant, or nothing when the name or shape is refused.
std::optional<Value> AddParameter(FuzzedDataProvider& in, Graph& g, const std::string& name) {
  const Value p = g.Parameter(name, RandomShape(in),
                              Initializer::Constant(in.ConsumeFloatingPointInRange(-2.0, 2.0)),
                              in.ConsumeBool() ? DType::kFloat32 : DType::kFloat64);
  return p.ok() ? std::optional<Value>(p) : std::nullopt;
}

// AddTrainingStep differentiates `loss` with respect to a random pick of
// `candidates` and of parameters made after the loss, fetches the
// gradients, and adds an SGD or Adam update for some parameters that have
// one. A parameter made after the loss must get a null gradient.
void AddTrainingStep(FuzzedDataProvider& in, Graph& g, Value loss,
                     std::vector<Value> candidates, std::vector<Value>& fetches,
                     std::vector<Value>& targets) {
  const int late = in.ConsumeIntegralInRange(0, 2);
  for (int i = 0; i < late; ++i) {
    if (auto p = AddParameter(in, g, "late" + std::to_string(i))) candidates.push_back(*p);
  }
  if (candidates.empty() || !loss.ok()) return;
  std::vector<Value> wrt(in.ConsumeIntegralInRange(0, 6));
  for (Value& v : wrt) v = candidates[in.ConsumeIntegralInRange<size_t>(0, candidates.size() - 1)];
  auto grads = Gradients(loss, wrt);
  if (!grads.ok()) return;
  const Value lr = g.Input("lr", DType::kFloat64, {});
  const Value step = g.Input("step", DType::kFloat64, {});
  for (size_t i = 0; i < wrt.size(); ++i) {
    const Value& grad = (*grads)[i];
    if (wrt[i].id() > loss.id() && !grad.is_null()) __builtin_trap();  // issue 23, bug 1
    if (!grad.ok()) continue;
    fetches.push_back(grad);
    const Node& p = wrt[i].node();
    // A parameter picked twice is updated twice, in order.
    if (!p.is_variable() || !in.ConsumeBool()) continue;
    auto state = [&](const char* name) {
      return g.Variable(name + std::to_string(targets.size()), p.shape, Initializer::Zeros(),
                        p.dtype);
    };
    targets.push_back(in.ConsumeBool()
                          ? SgdUpdate(wrt[i], grad, state("velocity"), lr, {.momentum = 0.9})
                          : AdamUpdate(wrt[i], grad, state("m"), state("v"), lr, step, {}));
    // The parameter and a view of it, fetched: values before the update.
    if (in.ConsumeBool()) fetches.push_back(in.ConsumeBool() ? wrt[i] : Reshape(wrt[i], {-1}));
  }
}

// VariableBytes reads every variable of the graph.
std::vector<std::string> VariableBytes(Executor& exec, Graph& g) {
  std::vector<std::string> bytes;
  for (const Value& v : g.Variables()) {
    auto t = exec.Read(v);
    bytes.push_back(t.ok() ? std::string(static_cast<const char*>(t->raw_data()), t->nbytes())
                           : std::string(t.status().message()));
  }
  return bytes;
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
  std::vector<Value> wrt_candidates;
  for (const Value& v : inputs) {
    if (IsFloating(v.dtype())) wrt_candidates.push_back(v);
  }
  const int n_params = in.ConsumeIntegralInRange(0, 3);
  for (int i = 0; i < n_params; ++i) {
    if (auto p = AddParameter(in, g, "p" + std::to_string(i))) {
      pool.push_back(*p);
      wrt_candidates.push_back(*p);
    }
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
      [&] {
        const DType dtype = in.PickValueInArray(kDTypes);
        return g.Constant(RandomTensor(in, dtype, RandomShape(in)));
      },
      [&] {
        // A constant that may not fit the dtype (3e9 as int32, 1.5 as int64).
        return g.Variable("state" + std::to_string(pool.size()), RandomShape(in),
                          Initializer::Constant(in.ConsumeFloatingPointInRange(-5e9, 5e9) /
                                                in.ConsumeIntegralInRange(1, 4)),
                          in.PickValueInArray(kDTypes));
      },
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
  std::vector<Value> fetches = {out}, targets;
  if (IsFloating(out.dtype())) {
    const Value loss = Sum(out);
    AddTrainingStep(in, g, loss, wrt_candidates, fetches, targets);
  }
  // Ops built after the step: by id they would run after its updates.
  const int more = in.ConsumeIntegralInRange(0, 3);
  for (int i = 0; i < more && in.remaining_bytes() > 0; ++i) {
    Value v = builders[in.ConsumeIntegralInRange<size_t>(0, builders.size() - 1)]();
    if (v.ok()) fetches.push_back(v);
  }
  auto plan = exec.Compile(fetches, targets);
  if (!plan.ok()) return 0;
  Feeds feeds;
  for (NodeId id : (*plan)->info().inputs) {
    const Node& n = g.node(id);
    feeds.push_back({g.value(id), RandomTensor(in, n.dtype, n.shape)});
  }
  const std::vector<std::string> before = VariableBytes(exec, g);
  const bool ok = exec.Run(**plan, feeds, {.training = in.ConsumeBool(), .step = 1}).ok();
  if (!ok && VariableBytes(exec, g) != before) __builtin_trap();  // a failed run wrote
  return 0;
}
