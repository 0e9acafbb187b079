// A Run is a transaction whose fetches show the values before its updates
// (engine/executor.h; issue 23, bugs 4 and 5):
//   - every op that can fail at run time, built after a training step (so
//     that by id it would run after the updates), fails the run with every
//     variable unchanged, bit for bit; the retry with a corrected feed
//     applies the step exactly once;
//   - fetched views of an updated variable, the variable itself, copies and
//     computed values of it all show the value before the update.
// Expected values are worked by hand: SGD on Sum(w * w) at w = 1 with lr 0.1
// gives w = 1 - 0.1 * 2; Adam's first step moves by lr * g / (|g| + eps).

#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/executor.h"
#include "ops/autodiff/autodiff.h"
#include "ops/elementwise.h"
#include "ops/gather.h"
#include "ops/loss.h"
#include "ops/optim.h"
#include "ops/reduce.h"
#include "ops/shape_ops.h"
#include "ops/softmax.h"
#include "ops/write_at.h"
#include "tests/support/host_memory_device.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

constexpr double kLr = 0.1;

// Step is an SGD update of w and an Adam update of u, both at 1, on the
// loss Sum(w * w) + Sum(u * u), built before the op under test.
struct Step {
  explicit Step(Graph& g) {
    w = g.Parameter("w", {2}, Initializer::Ones(), DType::kFloat64);
    u = g.Parameter("u", {2}, Initializer::Ones(), DType::kFloat64);
    loss = Sum(w * w) + Sum(u * u);
    lr = g.Input("lr", DType::kFloat64, {});
    step = g.Input("step", DType::kFloat64, {});
    auto grads = Gradients(loss, {w, u});
    EXPECT_TRUE(grads.ok()) << grads.status();
    Value velocity = g.Variable("velocity", {2}, Initializer::Zeros(), DType::kFloat64);
    Value m = g.Variable("m", {2}, Initializer::Zeros(), DType::kFloat64);
    Value v = g.Variable("v", {2}, Initializer::Zeros(), DType::kFloat64);
    updates = {SgdUpdate(w, (*grads)[0], velocity, lr, {}),
               AdamUpdate(u, (*grads)[1], m, v, lr, step, {})};
    variables = {w, u, velocity, m, v};
  }

  Value w, u, loss, lr, step;
  std::vector<Value> updates, variables;
};

// Snapshot reads every variable's bytes.
std::vector<std::string> Snapshot(Executor& exec, const std::vector<Value>& variables) {
  std::vector<std::string> bytes;
  for (const Value& v : variables) {
    auto t = exec.Read(v);
    EXPECT_TRUE(t.ok()) << t.status();
    bytes.emplace_back(static_cast<const char*>(t->raw_data()), t->nbytes());
  }
  return bytes;
}

// A FailingOp builds, after the step, an op that fails at run time on
// `bad` fed to `input`, and runs on `good`.
struct FailingOp {
  std::string name;
  std::function<Value(Graph&, Step&, Value* input)> build;
  Tensor bad, good;
  std::string error;
};

std::vector<FailingOp> FailingOps() {
  const Tensor floats = T<double>({3, 2}, {1, 2, 3, 4, 5, 6});
  auto input_like = [](Graph& g, const Tensor& t) {
    return g.Input("in", t.dtype(), t.shape());
  };
  return {
      {"gather", [=](Graph& g, Step&, Value* in) {
         *in = input_like(g, T<int64_t>({2}, {0, 0}));
         return Gather(g.Constant(floats), *in);
       }, T<int64_t>({2}, {0, 3}), T<int64_t>({2}, {2, 1}), "is out of range [0, 3)"},
      {"gather of the updated variable", [=](Graph& g, Step& s, Value* in) {
         *in = input_like(g, T<int32_t>({1}, {0}));
         return Gather(s.w, *in);
       }, T<int32_t>({1}, {-1}), T<int32_t>({1}, {1}), "is out of range [0, 2)"},
      {"embedding", [=](Graph& g, Step&, Value* in) {
         *in = input_like(g, T<int64_t>({1, 2}, {0, 0}));
         return Embedding(g.Constant(floats), *in);
       }, T<int64_t>({1, 2}, {1, 9}), T<int64_t>({1, 2}, {1, 2}), "is out of range [0, 3)"},
      {"scatter_add", [=](Graph& g, Step&, Value* in) {
         *in = input_like(g, T<int64_t>({3}, {0, 0, 0}));
         return ScatterAdd(*in, g.Constant(floats), 4);
       }, T<int64_t>({3}, {0, 4, 1}), T<int64_t>({3}, {0, 3, 1}), "is out of range [0, 4)"},
      {"valid_lens", [=](Graph& g, Step&, Value* in) {
         *in = input_like(g, T<int64_t>({3}, {0, 0, 0}));
         return MaskedSoftmax(g.Constant(floats), {.valid_lens = *in});
       }, T<int64_t>({3}, {1, 3, 2}), T<int64_t>({3}, {1, 0, 2}), "is outside [0, 2]"},
      {"cross_entropy targets", [=](Graph& g, Step&, Value* in) {
         *in = input_like(g, T<int64_t>({3}, {0, 0, 0}));
         return CrossEntropy(g.Constant(floats), *in);
       }, T<int64_t>({3}, {0, 2, 1}), T<int64_t>({3}, {0, -100, 1}), "is outside [0, 2)"},
      {"integer division", [=](Graph& g, Step&, Value* in) {
         *in = input_like(g, T<int64_t>({2}, {1, 1}));
         return Div(g.Constant(T<int64_t>({2}, {6, 8})), *in);
       }, T<int64_t>({2}, {3, 0}), T<int64_t>({2}, {3, 4}), "integer division by zero"},
      {"cast", [=](Graph& g, Step&, Value* in) {
         *in = input_like(g, T<double>({2}, {0, 0}));
         return Cast(*in, DType::kInt32);
       }, T<double>({2}, {1, NAN}), T<double>({2}, {1, 2}), "cannot cast nan"},
      {"adam step", [](Graph&, Step& s, Value* in) {
         *in = s.step;  // the step itself: fed below
         return s.loss;
       }, Tensor::Scalar<double>(0), Tensor::Scalar<double>(1), "step must be >= 1, got 0"},
      {"lr", [](Graph&, Step& s, Value* in) {
         *in = s.lr;  // both updates' rate: fed below
         return s.loss;
       }, Tensor::Scalar<double>(NAN), Tensor::Scalar<double>(kLr), "lr must be finite and >= 0, got nan"},
  };
}

// DeferringDevice reports kernels' errors as the CUDA device does: not
// when the kernel is queued, which goes on with the next kernel, but at the
// next Synchronize. Not being the host, it gets the updates queued as a
// phase of their own.
class DeferringDevice final : public HostMemoryDevice {
 public:
  std::string name() const override { return "deferring host"; }
  Kernel KernelFor(const OpDef& op) const override {
    return op.cpu == nullptr ? nullptr : &Deferred;
  }
  void* kernel_state() const override { return const_cast<absl::Status*>(&first_error_); }
  absl::Status Synchronize() override { return std::exchange(first_error_, absl::OkStatus()); }

 private:
  static absl::Status Deferred(const KernelContext& ctx) {
    absl::Status& first = *static_cast<absl::Status*>(ctx.run.device_state);
    if (absl::Status st = ctx.node.op->cpu(ctx); !st.ok() && first.ok()) first = st;
    return absl::OkStatus();
  }

  absl::Status first_error_;
};

void ExpectAFailedRunChangesNothing(bool deferring) {
  for (const FailingOp& op : FailingOps()) {
    SCOPED_TRACE(op.name);
    Graph g;
    Step s(g);
    Value in;
    Value failing = op.build(g, s, &in);
    ASSERT_TRUE(failing.ok()) << failing.status();
    Executor exec = deferring ? Executor(g, std::make_unique<DeferringDevice>()) : Executor(g);
    ASSERT_OK_AND_ASSIGN(auto plan, exec.Compile({s.loss, failing}, s.updates));
    const std::vector<std::string> before = Snapshot(exec, s.variables);
    auto feeds = [&](const Tensor& t) {
      Feeds f = {{s.lr, in == s.lr ? t : Tensor::Scalar(kLr)}};
      if (in != s.step && in != s.lr) f.push_back({in, t});
      f.push_back({s.step, in == s.step ? t : Tensor::Scalar<double>(1)});
      return f;
    };
    for (int attempt = 0; attempt < 2; ++attempt) {
      EXPECT_STATUS(exec.Run(*plan, feeds(op.bad)).status(), absl::StatusCode::kInvalidArgument,
                    op.error);
      EXPECT_EQ(Snapshot(exec, s.variables), before) << "a failed run wrote a variable";
    }
    ASSERT_OK_AND_ASSIGN(auto out, exec.Run(*plan, feeds(op.good)));
    ExpectAllClose(out[0], {4}, 0, 0, "loss before the step");
    ExpectAllClose(*exec.Read(s.w), {1 - kLr * 2, 1 - kLr * 2}, 0, 0, "w after one SGD step");
    const double adam = 1 - kLr * 2 / (2 + 1e-8);
    ExpectAllClose(*exec.Read(s.u), {adam, adam}, 1e-14, 0, "u after one Adam step");
  }
}

TEST(Transaction, AFailedRunChangesNoVariableAndARetryStepsOnce) {
  ExpectAFailedRunChangesNothing(/*deferring=*/false);
}

TEST(Transaction, SoOnADeviceThatReportsErrorsAtSynchronize) {
  ExpectAFailedRunChangesNothing(/*deferring=*/true);
}

// Two updates of one variable both apply, in the order they were built.
TEST(Transaction, TwoUpdatesOfOneVariableApplyInOrder) {
  Graph g;
  Value w = g.Parameter("w", {1}, Initializer::Ones(), DType::kFloat64);
  Value lr = g.Input("lr", DType::kFloat64, {});
  Value vel = g.Variable("vel", {1}, Initializer::Zeros(), DType::kFloat64);
  ASSERT_OK_AND_ASSIGN(auto grads, Gradients(Sum(w * w), {w}));
  Value first = SgdUpdate(w, grads[0], vel, lr, {});
  Value second = SgdUpdate(w, grads[0] * 0.5, vel, lr, {});
  Executor exec(g);
  ASSERT_OK_AND_ASSIGN(auto plan, exec.Compile({}, {second, first}));
  ASSERT_OK(exec.Run(*plan, {{lr, Tensor::Scalar(kLr)}}).status());
  // Both read the gradient at w = 1, 2; without momentum the velocity is
  // the last update's gradient: 1 when `second` runs last.
  ExpectAllClose(*exec.Read(vel), {1}, 0, 0, "velocity");
  ExpectAllClose(*exec.Read(w), {1 - kLr * 2 - kLr * 1}, 1e-15, 0, "w");
}

// Updates come last, so nothing may depend on one: not a read of the
// variable after its update, nor anything that could fail after it.
TEST(Transaction, AnOpAfterAnUpdateIsAnError) {
  Graph g;
  Value w = g.Parameter("w", {2}, Initializer::Ones());
  Value vel = g.Variable("vel", {2}, Initializer::Zeros());
  Value lr = g.Input("lr", DType::kFloat64, {});
  Value update = SgdUpdate(w, w, vel, lr, {});
  Value after = Concat({update, w}, 0);  // update's output is (0,)
  ASSERT_TRUE(after.ok()) << after.status();
  Executor exec(g);
  EXPECT_STATUS(exec.Compile({after}, {update}).status(),
                absl::StatusCode::kFailedPrecondition,
                "concat 'concat' takes the output of sgd_update 'sgd_update', which writes a "
                "variable");
}

// Views of an updated variable (Reshape, a contiguous Slice), the variable,
// copies (Permute, a strided Slice) and ops of it (Scale by 1) all show the
// value before the update: 1, while Read shows 0.5 after it.
TEST(Transaction, FetchesOfAnUpdatedVariableShowItsValueBeforeTheUpdate) {
  Graph g;
  Value w = g.Parameter("w", {2, 3}, Initializer::Ones());
  Value vel = g.Variable("vel", {2, 3}, Initializer::Zeros());
  Value lr = g.Input("lr", DType::kFloat64, {});
  ASSERT_OK_AND_ASSIGN(auto grads, Gradients(Sum(w), {w}));
  Value update = SgdUpdate(w, grads[0], vel, lr, {});
  Value reshaped = Reshape(w, {6});
  const std::vector<Value> fetches = {
      w, reshaped, Slice(w, 0, 1, 2), Reshape(reshaped, {3, 2}), Permute(w, {1, 0}),
      Slice(w, 1, 0, 3, 2), Scale(w, 1.0), reshaped};
  Executor exec(g);
  ASSERT_OK_AND_ASSIGN(auto plan, exec.Compile(fetches, {update}));
  for (double before : {1.0, 0.5}) {
    ASSERT_OK_AND_ASSIGN(auto out, exec.Run(*plan, {{lr, Tensor::Scalar(0.5)}}));
    for (size_t i = 0; i < out.size(); ++i) {
      SCOPED_TRACE(absl::StrCat("fetch ", i, " ", fetches[i].path(), ", before = ", before));
      ExpectAllClose(out[i], std::vector<double>(out[i].num_elements(), before), 0, 0);
    }
    ExpectAllClose(*exec.Read(w), std::vector<double>(6, before - 0.5), 0, 0, "Read");
  }
}

// An update's input computed by the graph (a WriteAt's start, Adam's step)
// is checked, on the host, before the first update writes: two writes of
// which the second's start is out of range leave the first target as it
// was, and the retry with a good start applies both once.
TEST(Transaction, AComputedInputAnUpdateRejectsFailsBeforeAnyUpdate) {
  Graph g;
  Value a = g.Variable("a", {4}, Initializer::Zeros());
  Value b = g.Variable("b", {4}, Initializer::Zeros());
  Value at = g.Input("at", DType::kInt64, {});
  Value seven = g.Constant(*Tensor::FromVector<float>({1}, {7}), "seven");
  Value first = WriteAt(a, seven, at, 0);
  Value second = WriteAt(b, seven, Add(at, g.Constant(Tensor::Scalar<int64_t>(2), "two")), 0);
  Executor exec(g);
  ASSERT_OK_AND_ASSIGN(auto plan, exec.Compile({}, {first, second}));
  EXPECT_STATUS(exec.Run(*plan, {{at, Tensor::Scalar<int64_t>(2)}}).status(),
                absl::StatusCode::kInvalidArgument, "write_at");
  ExpectAllClose(*exec.Read(a), {0, 0, 0, 0}, 0, 0, "a after the failed run");
  ASSERT_OK(exec.Run(*plan, {{at, Tensor::Scalar<int64_t>(1)}}).status());
  ExpectAllClose(*exec.Read(a), {0, 7, 0, 0}, 0, 0, "a");
  ExpectAllClose(*exec.Read(b), {0, 0, 0, 7}, 0, 0, "b");
}

// A write of a variable from a view of itself is a shift (memmove's), and
// two updates that each read the other's variable through a view (a swap)
// are refused at Compile, naming both, instead of a "cycle".
TEST(Transaction, UpdatesReadingTheirOwnOrEachOthersVariablesThroughViews) {
  Graph g;
  Value cache = g.Variable("cache", {5}, Initializer::Zeros());
  Value one = g.Constant(Tensor::Scalar<int64_t>(1), "one");
  Value shift = WriteAt(cache, Slice(cache, 0, 0, 4), one, 0);
  Executor exec(g);
  ASSERT_OK(exec.Assign(cache, *Tensor::FromVector<float>({5}, {1, 2, 3, 4, 5})));
  ASSERT_OK_AND_ASSIGN(auto plan, exec.Compile({}, {shift}));
  ASSERT_OK(exec.Run(*plan, {}).status());
  ExpectAllClose(*exec.Read(cache), {1, 1, 2, 3, 4}, 0, 0, "shifted");

  Value a = g.Variable("a", {2}, Initializer::Ones());
  Value b = g.Variable("b", {2}, Initializer::Zeros());
  Value zero = g.Constant(Tensor::Scalar<int64_t>(0), "zero");
  Value a_from_b = WriteAt(a, Detach(b), zero, 0), b_from_a = WriteAt(b, Detach(a), zero, 0);
  EXPECT_STATUS(exec.Compile({}, {a_from_b, b_from_a}).status(),
                absl::StatusCode::kFailedPrecondition,
                "each read (directly or through a view: Detach, Reshape, a contiguous Slice) a "
                "variable another of them writes");
}

// A shift of a variable from a view of itself that spans several blocks
// (rows): the first row's write landed on bytes the second row still read
// (0 1 0 1 4 5 0 1), where the run's value is the one before its updates.
TEST(Transaction, AShiftFromAViewOfItselfOverSeveralRowsReadsTheValueBefore) {
  Graph g;
  Value t = g.Variable("t", {2, 4}, Initializer::Zeros());
  Value view = Reshape(Slice(Reshape(t, {8}), 0, 0, 4), {2, 2});  // t's bytes 0 1 2 3
  Value two = g.Constant(Tensor::Scalar<int64_t>(2), "two");
  Value write = WriteAt(t, view, two, 1);
  Executor exec(g);
  ASSERT_OK(exec.Assign(t, *Tensor::FromVector<float>({2, 4}, {0, 1, 2, 3, 4, 5, 6, 7})));
  ASSERT_OK_AND_ASSIGN(auto plan, exec.Compile({view}, {write}));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, exec.Run(*plan, {}));
  ExpectAllClose(out[0], {0, 1, 2, 3}, 0, 0, "the fetched view");
  ExpectAllClose(*exec.Read(t), {0, 1, 0, 1, 4, 5, 2, 3}, 0, 0, "t");
}

// A second update of a variable that reads it (its start, a view of the
// variable) ran after the first one's write: it read that write, and its
// failure (start 9) came after the variable had changed, where a failed
// Run changes no variable. Refused at Compile, naming both.
TEST(Transaction, ASecondUpdateThatReadsItsVariableIsRefused) {
  Graph g;
  Value pos = g.Variable("pos", {4}, Initializer::Zeros(), DType::kInt64);
  Value idx = g.Input("idx", DType::kInt64, {1});
  Value zero = g.Constant(Tensor::Scalar<int64_t>(0), "zero");
  Value first = WriteAt(pos, idx, zero, 0);
  Value second = WriteAt(pos, g.Constant(T<int64_t>({1}, {5}), "five"), Slice(pos, 0, 0, 1), 0);
  Executor exec(g);
  EXPECT_STATUS(exec.Compile({}, {first, second}).status(), absl::StatusCode::kFailedPrecondition,
                absl::StrCat("the update '", second.path(), "' reads variable 'pos' (directly or "
                             "through a view) and writes it after '", first.path(), "' does"));
  // Alone, or the read copied, each runs.
  ASSERT_OK(exec.Compile({}, {first}).status());
  ASSERT_OK(exec.Compile({}, {second}).status());
}

}  // namespace
}  // namespace dagrad::testing
