// The planner and executor: hand-computed results, memory reuse, in-place
// execution, feed validation, variables, constant folding, numerics checks.

#include "engine/executor.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "ops/reduce.h"
#include "ops/shape_ops.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

TEST(Executor, RunsManyTimesWithNewFeeds) {
  Graph g;
  Value x = g.Input("x", DType::kFloat32, {2, 2});
  Value w = g.Parameter("w", {2, 2}, Initializer::Ones());
  Value y = Sum(MatMul(x, w) * 2.0);
  Executor exec(g);
  ASSERT_OK_AND_ASSIGN(auto plan, exec.Compile({y}));
  for (float v : {1.0f, 2.0f, -3.0f}) {
    ASSERT_OK_AND_ASSIGN(auto out, exec.Run(*plan, {{x, T<float>({2, 2}, {v, v, v, v})}}));
    // (x·1) has every entry 2v; eight entries of... sum(2 * 2v over 4) = 16v.
    ExpectAllClose(out[0], {16.0 * v}, 1e-6, 0, "sum");
  }
}

TEST(Executor, MemoryIsReusedAcrossAChain) {
  Graph g;
  Value x = g.Input("x", DType::kFloat32, {256, 256});
  Value h = x;
  for (int i = 0; i < 10; ++i) h = Tanh(MatMul(h, x));
  Executor exec(g);
  ASSERT_OK_AND_ASSIGN(auto plan, exec.Compile({Sum(h)}));
  const int64_t one = 256 * 256 * 4;
  // 20 intermediates of 256 KiB each; at most two (a product and its input)
  // are alive at once, and tanh runs in place.
  EXPECT_GE(plan->intermediate_bytes(), 20 * one);
  EXPECT_LE(plan->peak_bytes(), 2 * one + 64);
  EXPECT_EQ(plan->info().num_in_place, 10);
  ExecutionPlan no_reuse = *PlanGraph(g, {Sum(h)}, {}, {.reuse_memory = false, .in_place = false});
  EXPECT_GE(no_reuse.arena_bytes, 20 * one);
}

TEST(Executor, InPlaceNeverClobbersALiveValue) {
  Graph g;
  Value x = g.Input("x", DType::kFloat32, {4});
  Value a = Exp(x);
  Value b = Neg(a);     // a is still read below, so b must not overwrite it
  Value c = Add(a, b);  // = 0
  ASSERT_OK_AND_ASSIGN(auto out, RunOnce(g, {c, a}, {{x, T<float>({4}, {0, 1, 2, 3})}}));
  ExpectAllClose(out[0], {0, 0, 0, 0}, 0, 0, "exp(x) - exp(x)");
  ExpectAllClose(out[1], {1, std::exp(1.0), std::exp(2.0), std::exp(3.0)}, 1e-6, 0, "fetched a");
}

TEST(Executor, FeedValidation) {
  Graph g;
  Value x = g.Input("x", DType::kFloat32, {2});
  Value z = g.Input("z", DType::kFloat32, {2});
  Value unused = g.Input("unused", DType::kFloat32, {2});
  Executor exec(g);
  ASSERT_OK_AND_ASSIGN(auto plan, exec.Compile({x + z}));
  const Tensor good = T<float>({2}, {1, 2});
  EXPECT_STATUS(exec.Run(*plan, {{x, good}}).status(), absl::StatusCode::kInvalidArgument,
                "missing feed for input 'z' (float32 (2,))");
  EXPECT_STATUS(exec.Run(*plan, {{x, good}, {z, T<float>({3}, {1, 2, 3})}}).status(),
                absl::StatusCode::kInvalidArgument,
                "feed of 'z': expected float32 (2,), got float32 (3,)");
  EXPECT_STATUS(exec.Run(*plan, {{x, good}, {z, T<double>({2}, {1, 2})}}).status(),
                absl::StatusCode::kInvalidArgument, "got float64 (2,)");
  EXPECT_STATUS(exec.Run(*plan, {{x, good}, {z, good}, {x, good}}).status(),
                absl::StatusCode::kInvalidArgument, "input 'x' is fed twice");
  // An input the plan does not read may be fed (one feed set, several plans).
  EXPECT_TRUE(exec.Run(*plan, {{x, good}, {z, good}, {unused, good}}).ok());
  EXPECT_STATUS(exec.Run(*plan, {{x, good}, {z, good}, {unused, good}, {unused, good}}).status(),
                absl::StatusCode::kInvalidArgument, "input 'unused' is fed twice");
  EXPECT_STATUS(exec.Run(*plan, {{x, good}, {z, good}, {x + z, good}}).status(),
                absl::StatusCode::kInvalidArgument, "only inputs can be fed");
  EXPECT_TRUE(exec.Run(*plan, {{x, good}, {z, good}}).ok());
  Executor other(g);
  EXPECT_STATUS(other.Run(*plan, {{x, good}, {z, good}}).status(),
                absl::StatusCode::kInvalidArgument, "another executor");
}

// Integers fed to float inputs: converted exactly, or refused when one
// would round (float64 holds every integer up to 2^53, float32 up to 2^24).
TEST(Executor, IntegerFeedsOfFloatInputs) {
  Graph g;
  Value step = g.Input("step", DType::kFloat64, {});
  Value x = g.Input("x", DType::kFloat32, {3});
  Executor exec(g);
  ASSERT_OK_AND_ASSIGN(auto plan, exec.Compile({step * 2.0, x * 0.5}));
  ASSERT_OK_AND_ASSIGN(auto out, exec.Run(*plan, {{step, Tensor::Scalar(3)},
                                                  {x, T<int64_t>({3}, {-7, 0, 1 << 24})}}));
  EXPECT_EQ(out[0].dtype(), DType::kFloat64);
  ExpectAllClose(out[0], {6}, 0, 0, "int32 step");
  ExpectAllClose(out[1], {-3.5, 0, 8388608}, 0, 0, "int64 into float32");
  const int64_t two53 = int64_t{1} << 53;
  ASSERT_OK_AND_ASSIGN(out, exec.Run(*plan, {{step, Tensor::Scalar<int64_t>(-two53)},
                                             {x, T<int32_t>({3}, {1, 2, 3})}}));
  ExpectAllClose(out[0], {-2.0 * static_cast<double>(two53)}, 0, 0, "-2^53");
  // 2^53 + 2 and 2^63 - 1024 are float64 values; 2^53 + 1 and 2^63 - 1 are not.
  EXPECT_TRUE(exec.Run(*plan, {{step, Tensor::Scalar<int64_t>(two53 + 2)}, {x, T<int32_t>({3}, {1, 2, 3})}}).ok());
  EXPECT_TRUE(exec.Run(*plan, {{step, Tensor::Scalar<int64_t>(INT64_MAX - 1023)}, {x, T<int32_t>({3}, {1, 2, 3})}}).ok());
  EXPECT_STATUS(
      exec.Run(*plan, {{step, Tensor::Scalar<int64_t>(two53 + 1)}, {x, T<int32_t>({3}, {1, 2, 3})}})
          .status(),
      absl::StatusCode::kInvalidArgument,
      "feed of 'step': int64 value 9007199254740993 at element 0 is not exactly a float64 (which "
      "holds every integer up to 2^53 in magnitude); feed a float64 tensor");
  EXPECT_STATUS(
      exec.Run(*plan, {{step, Tensor::Scalar<int64_t>(INT64_MAX)}, {x, T<int32_t>({3}, {1, 2, 3})}})
          .status(),
      absl::StatusCode::kInvalidArgument, "value 9223372036854775807 at element 0");
  EXPECT_STATUS(exec.Run(*plan, {{step, Tensor::Scalar(1)}, {x, T<int32_t>({3}, {1, 16777217, 3})}})
                    .status(),
                absl::StatusCode::kInvalidArgument,
                "feed of 'x': int32 value 16777217 at element 1 is not exactly a float32 (which "
                "holds every integer up to 2^24 in magnitude)");
  // Another shape is the usual mismatch; floats are not fed to integers.
  EXPECT_STATUS(exec.Run(*plan, {{step, Tensor::Scalar(1)}, {x, T<int32_t>({2}, {1, 2})}}).status(),
                absl::StatusCode::kInvalidArgument, "feed of 'x': expected float32 (3,), got int32 (2,)");
}

TEST(Executor, CompileErrors) {
  Graph g;
  Value x = g.Input("x", DType::kFloat32, {2});
  Executor exec(g);
  EXPECT_STATUS(exec.Compile({}).status(), absl::StatusCode::kInvalidArgument, "nothing to compute");
  EXPECT_STATUS(exec.Compile({Value()}).status(), absl::StatusCode::kInvalidArgument, "null fetch");
  Value bad = Add(x, g.Input("y", DType::kFloat32, {3}));
  EXPECT_STATUS(exec.Compile({bad}).status(), absl::StatusCode::kInvalidArgument, "do not broadcast");
  Graph other;
  Value o = other.Input("o", DType::kFloat32, {1});
  EXPECT_STATUS(exec.Compile({o}).status(), absl::StatusCode::kInvalidArgument,
                "belongs to another graph");
  // An op mixing the graphs names the value from the other one, and where.
  Value w = other.Input("w", DType::kFloat32, {2});
  Value mixed;
  {
    Graph::Scope fc(g, "fc");
    mixed = Add(x, w);
  }
  EXPECT_STATUS(mixed.status(), absl::StatusCode::kInvalidArgument,
                "in 'fc': add: input 1 'w' belongs to another graph");
}

TEST(Executor, VariablesPersistAndCanBeAssigned) {
  Graph g;
  Value w = g.Parameter("w", {3}, Initializer::Constant(2.0));
  Value x = g.Input("x", DType::kFloat32, {3});
  Executor exec(g);
  ASSERT_OK_AND_ASSIGN(auto plan, exec.Compile({Sum(w * x)}));
  const Tensor ones = T<float>({3}, {1, 1, 1});
  ASSERT_OK_AND_ASSIGN(auto out, exec.Run(*plan, {{x, ones}}));
  ExpectAllClose(out[0], {6}, 0, 0, "initial");
  ASSERT_OK(exec.Assign(w, T<float>({3}, {1, 2, 3})));
  ASSERT_OK_AND_ASSIGN(out, exec.Run(*plan, {{x, ones}}));
  ExpectAllClose(out[0], {6}, 0, 0, "assigned");
  ASSERT_OK_AND_ASSIGN(out, exec.Run(*plan, {{x, T<float>({3}, {1, 0, 0})}}));
  ExpectAllClose(out[0], {1}, 0, 0, "assigned, new feed");
  EXPECT_STATUS(exec.Assign(w, T<float>({2}, {1, 2})), absl::StatusCode::kInvalidArgument,
                "expected float32 (3,), got float32 (2,)");
  EXPECT_STATUS(exec.Assign(x, ones), absl::StatusCode::kInvalidArgument, "not a variable");
  ASSERT_OK(exec.InitializeVariables());
  ExpectAllClose(*exec.Read(w), {2, 2, 2}, 0, 0, "reinitialised");
}

TEST(Executor, ConstantSubgraphsAreFolded) {
  Graph g;
  Value c = g.Constant(T<float>({3}, {0, 1, 2}));
  Value table = Exp(c) * 2.0;  // depends on constants only
  Value x = g.Input("x", DType::kFloat32, {3});
  Executor exec(g);
  ASSERT_OK_AND_ASSIGN(auto plan, exec.Compile({x + table}));
  EXPECT_EQ(plan->info().num_folded, 2);
  EXPECT_EQ(plan->info().steps.size(), 1u);
  ASSERT_OK_AND_ASSIGN(auto out, exec.Run(*plan, {{x, T<float>({3}, {1, 1, 1})}}));
  ExpectAllClose(out[0], {3, 1 + 2 * std::exp(1.0), 1 + 2 * std::exp(2.0)}, 1e-6, 0, "folded");
}

TEST(Executor, CheckNumericsNamesTheFirstBadNode) {
  Graph g;
  Value x = g.Input("x", DType::kFloat32, {2});
  Value y;
  {
    Graph::Scope s(g, "block");
    y = Sqrt(Log(x));  // log(0) = -inf first, then sqrt(-inf) = nan
  }
  Executor exec(g, {.check_numerics = true});
  ASSERT_OK_AND_ASSIGN(auto plan, exec.Compile({y}));
  EXPECT_STATUS(exec.Run(*plan, {{x, T<float>({2}, {1, 0})}}).status(),
                absl::StatusCode::kInvalidArgument,
                "check_numerics: forward node 'block/log' (op log, float32 (2,)) produced Inf at "
                "element 1");
  EXPECT_TRUE(exec.Run(*plan, {{x, T<float>({2}, {1, 2})}}).ok());
}

TEST(Executor, MemoryLimitIsAClearError) {
  Graph g;
  Value x = g.Input("x", DType::kFloat32, {1024, 1024});
  Executor exec(g, {.memory_limit_bytes = 1 << 20});
  EXPECT_STATUS(exec.Compile({Exp(x)}).status(), absl::StatusCode::kResourceExhausted,
                "compiling the plan on cpu needs 4.19 MB, over the memory limit of 1.05 MB "
                "(ExecutorOptions::memory_limit_bytes 1.05 MB): arena 4.19 MB. Biggest: exp "
                "'exp' float32 (1024, 1024) = 4.19 MB");
  // A need and a limit that round alike are given exact.
  Executor tight(g, {.memory_limit_bytes = (4 << 20) - 64});
  EXPECT_STATUS(tight.Compile({Exp(x)}).status(), absl::StatusCode::kResourceExhausted,
                "needs 4194304 bytes, over the memory limit of 4194240 bytes");
}

// On the CPU, a plan's folded constants were not counted while it held
// them: plans of 1 MiB of arena and 1 MiB of folded constants each fitted
// a 3.5 MiB limit any number of times.
TEST(Executor, MemoryLimitCountsFoldedConstantsOnTheHost) {
  constexpr int64_t kFloats = 1 << 18;  // 1 MiB
  Graph g;
  Value x = g.Input("x", DType::kFloat32, {kFloats});
  Value c = g.Constant(*Tensor::Zeros(DType::kFloat32, {kFloats}), "c");
  Value y = Mul(Exp(Scale(c, 2)), x);  // Exp(Scale(c)) folds
  Executor exec(g, {.memory_limit_bytes = 7 << 19});
  ASSERT_OK_AND_ASSIGN(auto first, exec.Compile({y}));
  EXPECT_EQ(exec.bytes_in_use(), 2 << 20);
  EXPECT_STATUS(exec.Compile({y}).status(), absl::StatusCode::kResourceExhausted,
                "memory limit");
  first.reset();
  EXPECT_EQ(exec.bytes_in_use(), 0);
  ASSERT_OK(exec.Compile({y}).status());
}

// A folded node was computed at Compile, where check_numerics never looked:
// the NaN of Log(-1) was blamed on the node that read it.
TEST(Executor, CheckNumericsNamesAConstantNodeThatWouldBeFolded) {
  Graph g;
  Value x = g.Input("x", DType::kFloat32, {3});
  Value log = Log(g.Constant(T<float>({3}, {1, -1, 2}), "c"));
  Value y = Add(Scale(x, 2), log);
  Executor exec(g, {.check_numerics = true});
  ASSERT_OK_AND_ASSIGN(auto plan, exec.Compile({y}));
  EXPECT_STATUS(exec.Run(*plan, {{x, T<float>({3}, {1, 2, 3})}}).status(),
                absl::StatusCode::kInvalidArgument,
                absl::StrCat("check_numerics: forward node '", log.path(), "' (op log"));
}


TEST(Executor, IntegerDivisionByZeroIsAnError) {
  Graph g;
  Value a = g.Input("a", DType::kInt64, {3});
  Value b = g.Input("b", DType::kInt64, {3});
  EXPECT_STATUS(RunOnce(g, {Div(a, b)}, {{a, T<int64_t>({3}, {1, 2, 3})},
                                         {b, T<int64_t>({3}, {1, 0, 1})}})
                    .status(),
                absl::StatusCode::kInvalidArgument,
                "div 'div': integer division by zero (divisor element 1)");
  // An empty output divides nothing, as torch: a broadcast 0 is no error.
  Value empty = g.Input("empty", DType::kInt32, {0});
  Value zero = g.Input("zero", DType::kInt32, {1});
  ASSERT_OK_AND_ASSIGN(auto out, RunOnce(g, {Div(empty, zero)}, {{empty, T<int32_t>({0}, {})},
                                                                 {zero, T<int32_t>({1}, {0})}}));
  EXPECT_EQ(out[0].shape(), Shape({0}));
}

TEST(Executor, CastOfNanOrHugeFloatToIntIsAnError) {
  Graph g;
  Value x = g.Input("x", DType::kFloat32, {2});
  EXPECT_STATUS(RunOnce(g, {Cast(x, DType::kInt32)}, {{x, T<float>({2}, {1.5f, 3e9f})}}).status(),
                absl::StatusCode::kInvalidArgument, "cannot cast 3e+09 (element 1) to int32");
  EXPECT_STATUS(RunOnce(g, {Cast(x, DType::kInt64)}, {{x, T<float>({2}, {NAN, 1})}}).status(),
                absl::StatusCode::kInvalidArgument, "cannot cast nan (element 0) to int64");
  // The value in full: one past int32's lowest, not a rounded -2.14748e+09.
  Value d = g.Input("d", DType::kFloat64, {1});
  EXPECT_STATUS(RunOnce(g, {Cast(d, DType::kInt32)}, {{d, T<double>({1}, {-2147483649.0})}})
                    .status(),
                absl::StatusCode::kInvalidArgument, "cannot cast -2147483649 (element 0) to int32");
  // A float as the float it is (not its double, 1.0000000200408773e+20);
  // NaN without the sign bit that x86's default NaN carries.
  EXPECT_STATUS(RunOnce(g, {Cast(x, DType::kInt64)}, {{x, T<float>({2}, {1, 1e20f})}}).status(),
                absl::StatusCode::kInvalidArgument, "cannot cast 1e+20 (element 1) to int64");
  EXPECT_STATUS(RunOnce(g, {Cast(Sqrt(x), DType::kInt32)}, {{x, T<float>({2}, {-1, 1})}}).status(),
                absl::StatusCode::kInvalidArgument, "cannot cast nan (element 0) to int32");
}

TEST(Executor, FoldedConstantsRespectTheMemoryLimit) {
  Graph g;
  Value big = Exp(g.Constant(*Tensor::Zeros(DType::kFloat32, {1024, 1024})));
  Value x = g.Input("x", DType::kFloat32, {1024, 1024});
  Executor exec(g, {.memory_limit_bytes = 1 << 20});
  EXPECT_STATUS(exec.Compile({x + big}).status(), absl::StatusCode::kResourceExhausted,
                "memory limit: folding constant exp 'exp'");
}

}  // namespace
}  // namespace dagrad::testing
