// fill, arange, zeros_like, ones_like: hand-worked values, constant folding,
// errors. PyTorch goldens are in golden_ops_test.cc.

#include <cmath>
#include <cstdint>
#include <limits>

#include "absl/strings/str_cat.h"
#include "engine/bfloat16.h"
#include "engine/executor.h"
#include "engine/initializer.h"
#include "ops/autodiff/autodiff.h"
#include "ops/elementwise.h"
#include "ops/fill.h"
#include "ops/op_util.h"
#include "ops/reduce.h"
#include "ops/registry.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(Fill, HandWorkedValues) {
  Graph g;
  ASSERT_OK_AND_ASSIGN(
      auto out, RunOnce(g, {Fill(g, {2, 3}, -1.5), Fill(g, {2}, 7, DType::kInt32),
                            Fill(g, {3}, 1, DType::kBool), Fill(g, {2}, -kInf, DType::kFloat64),
                            Fill(g, {}, 4, DType::kInt64), Fill(g, {0, 5}, 1)}));
  EXPECT_EQ(out[0].dtype(), DType::kFloat32);
  EXPECT_EQ(out[0].shape(), Shape({2, 3}));
  ExpectAllClose(out[0], std::vector<double>(6, -1.5), 0, 0, "float32");
  EXPECT_EQ(out[1].dtype(), DType::kInt32);
  ExpectAllClose(out[1], {7, 7}, 0, 0, "int32");
  EXPECT_EQ(out[2].dtype(), DType::kBool);
  ExpectAllClose(out[2], {1, 1, 1}, 0, 0, "bool");
  ExpectAllClose(out[3], {-kInf, -kInf}, 0, 0, "-inf");
  EXPECT_EQ(out[4].shape(), Shape({}));
  ExpectAllClose(out[4], {4}, 0, 0, "0-d");
  EXPECT_EQ(out[5].shape(), Shape({0, 5}));
}

TEST(Arange, HandWorkedValues) {
  Graph g;
  Value a = Arange(g, 0, 5);
  Value b = Arange(g, 1, 0, -0.25, DType::kFloat64);
  Value c = Arange(g, -3, 10, 3, DType::kInt64);
  Value d = Arange(g, 0, 1, 0.3);  // ceil(1 / 0.3) = 4 elements
  Value e = Arange(g, 5, 5);       // empty
  Value f = Arange(g, 5, 0);       // empty, as Python's range(5, 0)
  ASSERT_OK_AND_ASSIGN(auto out, RunOnce(g, {a, b, c, d, e, f}));
  EXPECT_EQ(out[0].dtype(), DType::kFloat32);
  ExpectAllClose(out[0], {0, 1, 2, 3, 4}, 0, 0, "0..5");
  ExpectAllClose(out[1], {1, 0.75, 0.5, 0.25}, 0, 0, "negative step");
  EXPECT_EQ(out[2].dtype(), DType::kInt64);
  ExpectAllClose(out[2], {-3, 0, 3, 6, 9}, 0, 0, "int64 step 3");
  ExpectAllClose(out[3], {0, 0.3, 0.6, 0.9}, 1e-7, 0, "fractional step");
  EXPECT_EQ(out[4].shape(), Shape({0}));
  EXPECT_EQ(out[5].shape(), Shape({0}));
}

TEST(Fill, ZerosLikeAndOnesLike) {
  Graph g;
  Value x = g.Input("x", DType::kInt64, {2, 2});
  Value m = g.Input("m", DType::kBool, {3});
  Value z = ZerosLike(x), o = OnesLike(m);
  EXPECT_EQ(z.dtype(), DType::kInt64);
  EXPECT_EQ(o.dtype(), DType::kBool);
  // Neither reads its argument's values, so no feed is needed.
  EXPECT_TRUE(z.node().inputs.empty());
  ASSERT_OK_AND_ASSIGN(auto out, RunOnce(g, {z, o}));
  ExpectAllClose(out[0], {0, 0, 0, 0}, 0, 0, "zeros");
  ExpectAllClose(out[1], {1, 1, 1}, 0, 0, "ones");
  EXPECT_TRUE(ZerosLike(Value()).is_null());
  Value bad = Add(x, m);
  EXPECT_EQ(OnesLike(bad).status(), bad.status());
}

// fill and arange have no inputs, so the planner evaluates them (and what
// depends only on them) once, when compiling.
TEST(Fill, PlannerFoldsFillAndArange) {
  Graph g;
  Value x = g.Input("x", DType::kFloat32, {2, 3});
  Value y = x * Fill(g, {2, 3}, 2) + Arange(g, 0, 3) * OnesLike(x);
  Executor exec(g);
  ASSERT_OK_AND_ASSIGN(auto plan, exec.Compile({y}));
  EXPECT_EQ(plan->info().num_folded, 4);  // fill, arange, ones_like, arange * ones
  for (NodeId id : plan->info().steps) {
    const std::string op(g.node(id).op->name);
    EXPECT_NE(op, "fill");
    EXPECT_NE(op, "arange");
  }
  ASSERT_OK_AND_ASSIGN(auto out, exec.Run(*plan, {{x, T<float>({2, 3}, {1, 2, 3, 4, 5, 6})}}));
  ExpectAllClose(out[0], {2, 5, 8, 8, 11, 14}, 0, 0, "2x + [0, 1, 2]");
}

// Gradients stop at fill: it is not differentiable, and has no inputs.
TEST(Fill, NotDifferentiable) {
  Graph g;
  Value x = g.Input("x", DType::kFloat64, {3});
  ASSERT_OK_AND_ASSIGN(auto grads, Gradients(Sum(x * OnesLike(x) + ZerosLike(x)), {x}));
  ASSERT_OK_AND_ASSIGN(auto out, RunOnce(g, {grads[0]}));
  ExpectAllClose(out[0], {1, 1, 1}, 0, 0, "d/dx");
}

TEST(Fill, Errors) {
  Graph g;
  EXPECT_STATUS(Fill(g, {2, -3}, 0).status(), absl::StatusCode::kInvalidArgument,
                "fill 'fill': negative dimension -3 in shape (2, -3)");
  EXPECT_STATUS(Fill(g, {int64_t{1} << 40, int64_t{1} << 40}, 0).status(),
                absl::StatusCode::kInvalidArgument,
                "element count of shape (1099511627776, 1099511627776) overflows int64");
  EXPECT_STATUS(Fill(g, {int64_t{1} << 61}, 0).status(), absl::StatusCode::kInvalidArgument,
                "shape (2305843009213693952,) of float32 needs more than the 2^62 bytes");
  EXPECT_STATUS(Fill(g, {2}, 1.5, DType::kInt64).status(), absl::StatusCode::kInvalidArgument,
                "value 1.5 is not an integer (dtype int64)");
  EXPECT_STATUS(Fill(g, {2}, 3e9, DType::kInt32).status(), absl::StatusCode::kInvalidArgument,
                "value 3000000000 is out of range (dtype int32)");
  EXPECT_STATUS(Fill(g, {2}, 2, DType::kBool).status(), absl::StatusCode::kInvalidArgument,
                "value 2 is not 0 or 1 (dtype bool)");
  EXPECT_STATUS(Fill(g, {2}, 1e40).status(), absl::StatusCode::kInvalidArgument,
                "value 1e+40 is beyond float32's range");
  EXPECT_STATUS(Fill(g, {2}, std::nan(""), DType::kInt64).status(),
                absl::StatusCode::kInvalidArgument, "value nan is not an integer");
  {
    Graph::Scope s(g, "masks");
    EXPECT_STATUS(Fill(g, {-1}, 0).status(), absl::StatusCode::kInvalidArgument,
                  "fill 'masks/fill'");
  }
}

TEST(Arange, Errors) {
  Graph g;
  EXPECT_STATUS(Arange(g, 0, 5, 0).status(), absl::StatusCode::kInvalidArgument,
                "arange 'arange': step must not be 0, got start=0, stop=5, step=0");
  EXPECT_STATUS(Arange(g, 0, kInf).status(), absl::StatusCode::kInvalidArgument,
                "start, stop and step must be finite, got start=0, stop=inf, step=1");
  EXPECT_STATUS(Arange(g, std::nan(""), 1).status(), absl::StatusCode::kInvalidArgument,
                "got start=nan");
  EXPECT_STATUS(Arange(g, 0, 1e300, 1, DType::kFloat64).status(),
                absl::StatusCode::kInvalidArgument,
                "length 1e+300 (start=0, stop=1e+300, step=1) of float64 needs more than the "
                "2^62 bytes");
  EXPECT_STATUS(Arange(g, 0, 1e300).status(), absl::StatusCode::kInvalidArgument,
                "stop 1e+300 is beyond float32's range");
  // stop - start overflows to inf.
  EXPECT_STATUS(Arange(g, -1.7e308, 1.7e308, 1, DType::kFloat64).status(),
                absl::StatusCode::kInvalidArgument, "length inf");
  EXPECT_STATUS(Arange(g, 0, 1, 1e-300).status(), absl::StatusCode::kInvalidArgument,
                "needs more than the 2^62 bytes");
  EXPECT_STATUS(Arange(g, 0, 2, 1, DType::kBool).status(), absl::StatusCode::kInvalidArgument,
                "dtype bool has no ranges");
  EXPECT_STATUS(Arange(g, 0, 5e9, 1e9, DType::kInt32).status(),
                absl::StatusCode::kInvalidArgument,
                "stop 5000000000 is out of range (dtype int32), start=0, stop=5000000000, "
                "step=1000000000");
  EXPECT_STATUS(Arange(g, 0.5, 3, 1, DType::kInt64).status(), absl::StatusCode::kInvalidArgument,
                "start 0.5 is not an integer (dtype int64)");
  // An integer stop must itself be an int64 (it was cast from 2^63).
  EXPECT_STATUS(Arange(g, 0, 9223372036854775808.0, 1, DType::kInt64).status(),
                absl::StatusCode::kInvalidArgument,
                "stop 9223372036854775808 is out of range (dtype int64), start=0, "
                "stop=9223372036854775808, step=1");
  EXPECT_STATUS(Arange(g, int64_t{1} << 40, 0, -1, DType::kInt32).status(),
                absl::StatusCode::kInvalidArgument,
                "start 1099511627776 is out of range (dtype int32)");
  EXPECT_STATUS(Arange(g, 0, kInf, 1, DType::kInt64).status(), absl::StatusCode::kInvalidArgument,
                "start, stop and step must be finite, got start=0, stop=inf, step=1");
  EXPECT_STATUS(Arange(g, 0, 3, 0.5, DType::kInt64).status(),
                absl::StatusCode::kInvalidArgument, "step 0.5 is not an integer");
}

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();
constexpr int64_t kBig = (int64_t{1} << 53) + 1;  // the first int64 a double cannot hold

// Integers reach integer dtypes exactly: 2^53 + 1 and the ends of int64
// were doubles on their way (2^53 + 1 became 2^53), and an integer given
// for a float dtype rounds as C++ converts it.
TEST(Fill, IntegersAreExact) {
  Graph g;
  ASSERT_OK_AND_ASSIGN(
      auto out, RunOnce(g, {Fill(g, {2}, kBig, DType::kInt64), Fill(g, {1}, kInt64Max, DType::kInt64),
                            Fill(g, {1}, kInt64Min, DType::kInt64),
                            Fill(g, {1}, std::numeric_limits<int32_t>::min(), DType::kInt32),
                            Fill(g, {1}, kBig, DType::kFloat64), Fill(g, {1}, true, DType::kBool),
                            Fill(g, {1}, 9007199254740992.0, DType::kInt64)}));
  EXPECT_EQ(out[0].ToVector<int64_t>(), (std::vector<int64_t>{9007199254740993, 9007199254740993}));
  EXPECT_EQ(out[1].ToVector<int64_t>(), std::vector<int64_t>{9223372036854775807});
  EXPECT_EQ(out[2].ToVector<int64_t>(), std::vector<int64_t>{kInt64Min});
  EXPECT_EQ(out[3].ToVector<int32_t>(), std::vector<int32_t>{-2147483647 - 1});
  EXPECT_EQ(out[4].ToVector<double>(), std::vector<double>{9007199254740992.0});
  EXPECT_EQ(out[5].ToVector<bool>(), std::vector<bool>{true});
  EXPECT_EQ(out[6].ToVector<int64_t>(), std::vector<int64_t>{9007199254740992});
  EXPECT_STATUS(Fill(g, {1}, int64_t{1} << 40, DType::kInt32).status(),
                absl::StatusCode::kInvalidArgument, "value 1099511627776 is out of range (dtype int32)");
  EXPECT_STATUS(Fill(g, {1}, uint64_t{1} << 63, DType::kInt64).status(),
                absl::StatusCode::kInvalidArgument,
                "value 9223372036854775808 is out of range (dtype int64)");
  EXPECT_STATUS(Fill(g, {1}, int64_t{-1}, DType::kBool).status(),
                absl::StatusCode::kInvalidArgument, "value -1 is not 0 or 1 (dtype bool)");
}

// An integer arange counts in int64: elements beyond 2^53 and beside the
// ends of int64, a step whose products pass 2^63 (INT64_MIN + 3 * 2^62 is
// 2^62), and a non-integer stop that counts as the integer beyond it.
TEST(Arange, IntegersAreExact) {
  Graph g;
  ASSERT_OK_AND_ASSIGN(
      auto out, RunOnce(g, {Arange(g, kBig, kBig + 3, 1, DType::kInt64),
                            Arange(g, kInt64Max - 2, kInt64Max, 1, DType::kInt64),
                            Arange(g, kInt64Min, kInt64Max, int64_t{1} << 62, DType::kInt64),
                            Arange(g, kInt64Max, kInt64Min, kInt64Min, DType::kInt64),
                            Arange(g, 0, 1.5, 1, DType::kInt64), Arange(g, 3, -1.5, -1, DType::kInt64),
                            Arange(g, 2147483645, 2147483647, 1, DType::kInt32)}));
  EXPECT_EQ(out[0].ToVector<int64_t>(),
            (std::vector<int64_t>{9007199254740993, 9007199254740994, 9007199254740995}));
  EXPECT_EQ(out[1].ToVector<int64_t>(),
            (std::vector<int64_t>{9223372036854775805, 9223372036854775806}));
  EXPECT_EQ(out[2].ToVector<int64_t>(),
            (std::vector<int64_t>{kInt64Min, -4611686018427387904, 0, 4611686018427387904}));
  EXPECT_EQ(out[3].ToVector<int64_t>(), (std::vector<int64_t>{kInt64Max, -1}));
  EXPECT_EQ(out[4].ToVector<int64_t>(), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(out[5].ToVector<int64_t>(), (std::vector<int64_t>{3, 2, 1, 0, -1}));
  EXPECT_EQ(out[6].ToVector<int32_t>(), (std::vector<int32_t>{2147483645, 2147483646}));
}

// The attributes are of the type the dtype's kernel reads; a node built by
// hand with the other type is refused, not read as 0.
TEST(Fill, AttributeOfTheOtherTypeIsRefused) {
  Graph g;
  const OpDef& fill = *FindOp("fill");
  const Attrs int64_fill = Attrs().Ints("shape", {2}).Str("dtype", "int64");
  EXPECT_STATUS(BuildOpIn(g, fill, {}, Attrs(int64_fill).Float("value", 2.0)).status(),
                absl::StatusCode::kInvalidArgument,
                "value must be an attribute of type int64 for dtype int64");
  EXPECT_STATUS(BuildOpIn(g, fill, {}, Attrs(int64_fill)).status(),
                absl::StatusCode::kInvalidArgument, "value must be an attribute of type int64");
  EXPECT_STATUS(
      BuildOpIn(g, fill, {}, Attrs().Ints("shape", {2}).Str("dtype", "float32").Int("value", 2))
          .status(),
      absl::StatusCode::kInvalidArgument,
      "value must be an attribute of type double for dtype float32");
}

// AsDouble reads element i of any dtype as a double.
double AsDouble(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::kFloat32: return t.data<float>()[i];
    case DType::kFloat64: return t.data<double>()[i];
    case DType::kInt32: return t.data<int32_t>()[i];
    case DType::kInt64: return static_cast<double>(t.data<int64_t>()[i]);
    case DType::kBool: return t.data<bool>()[i];
    case DType::kBFloat16: return BFloat16ToFloat(t.data<BFloat16>()[i]);
    case DType::kFloat16: return Float16ToFloat(t.data<Float16>()[i]);
  }
  return 0;
}

// The Fill op and Initializer::Constant turn a double into elements by one
// rule (CheckValueFits; issue 23, bug 10): the same table of values is
// rejected by both, or held exactly by both. Before, an initializer cast
// 3e9 to int32 (undefined behaviour) and truncated 1.5 to 1.
TEST(Fill, FillAndConstantInitializerAcceptTheSameValues) {
  const double kNan = std::nan("");
  const double kFloatMax = std::numeric_limits<float>::max();
  struct Case {
    DType dtype;
    double value;
    bool fits;
  };
  const std::vector<Case> cases = {
      {DType::kInt32, 3e9, false}, {DType::kInt32, 2147483648.0, false},
      {DType::kInt32, -2147483649.0, false}, {DType::kInt32, 1.5, false},
      {DType::kInt32, -0.5, false}, {DType::kInt32, kNan, false},
      {DType::kInt32, kInf, false}, {DType::kInt32, -kInf, false},
      {DType::kInt32, 2147483647.0, true}, {DType::kInt32, -2147483648.0, true},
      {DType::kInt64, 1.5, false}, {DType::kInt64, 9223372036854775808.0, false},
      {DType::kInt64, -1e19, false}, {DType::kInt64, kNan, false},
      {DType::kInt64, kInf, false}, {DType::kInt64, -9223372036854775808.0, true},
      // The largest double below 2^63.
      {DType::kInt64, 9223372036854774784.0, true}, {DType::kInt64, -3, true},
      {DType::kBool, 2, false}, {DType::kBool, -1, false}, {DType::kBool, 0.5, false},
      {DType::kBool, kNan, false}, {DType::kBool, 0, true}, {DType::kBool, 1, true},
      {DType::kFloat32, 1e40, false}, {DType::kFloat32, -1e39, false},
      {DType::kFloat32, kFloatMax, true}, {DType::kFloat32, -kInf, true},
      {DType::kFloat32, kNan, true}, {DType::kFloat64, 1e308, true},
      {DType::kFloat64, kInf, true}, {DType::kFloat64, kNan, true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(absl::StrCat(DTypeName(c.dtype), " ", c.value));
    Graph g;
    Value filled = Fill(g, {2}, c.value, c.dtype);
    Value var = g.Variable("v", {2}, Initializer::Constant(c.value), c.dtype);
    ASSERT_OK_AND_ASSIGN(Tensor direct, Tensor::Zeros(c.dtype, {2}));
    const absl::Status direct_fill = Initializer::Constant(c.value).Fill(0, "d", direct);
    EXPECT_EQ(filled.ok(), c.fits) << filled.status();
    EXPECT_EQ(var.ok(), c.fits) << var.status();
    EXPECT_EQ(direct_fill.ok(), c.fits) << direct_fill;
    if (!c.fits) {
      // One message for all three.
      EXPECT_THAT(std::string(var.status().message()),
                  ::testing::HasSubstr(CheckValueFits(c.value, c.dtype, "").message()));
      EXPECT_THAT(std::string(filled.status().message()),
                  ::testing::HasSubstr(CheckValueFits(c.value, c.dtype, "").message()));
      continue;
    }
    Executor exec(g);
    ASSERT_OK_AND_ASSIGN(Tensor read, exec.Read(var));
    ASSERT_OK_AND_ASSIGN(auto out, exec.Run(*exec.Compile({filled}).value(), {}));
    for (const Tensor* t : {&read, &out[0], &direct}) {
      for (int64_t i = 0; i < 2; ++i) {
        const double got = AsDouble(*t, i);
        if (std::isnan(c.value)) {
          EXPECT_TRUE(std::isnan(got));
        } else {
          EXPECT_EQ(got, c.value);
        }
      }
    }
  }
}

TEST(Fill, RandomInitializerNeedsAFloatingDType) {
  Graph g;
  EXPECT_STATUS(g.Variable("u", {2}, Initializer::Uniform(0, 1), DType::kInt64).status(),
                absl::StatusCode::kInvalidArgument,
                "variable 'u' (2,): random initializer uniform(0, 1) needs a floating dtype, "
                "got int64");
}

}  // namespace
}  // namespace dagrad::testing
