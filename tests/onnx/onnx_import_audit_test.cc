// ONNX import against ONNX's semantics, op by op, on models built here with
// the protobuf API, one section per class of fault an audit found. The
// expected values are worked by hand from ONNX's definitions, as numpy and
// ONNX Runtime compute them.

#ifdef DAGRAD_HAVE_ONNX

#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "engine/op.h"
#include "engine/status_macros.h"
#include "ops/autodiff/autodiff.h"
#include "ops/onnx/import.h"
#include "ops/onnx/import_gelu.h"
#include "ops/onnx/onnx_tensor.h"
#include "ops/reduce.h"
#include "tests/onnx/support/onnx_test_model.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
const float kNaN = std::numeric_limits<float>::quiet_NaN();

// ---- comparisons -------------------------------------------------------------
// NaN compares false, as IEEE, numpy and ONNX Runtime have it.

// a <= b and a >= b for a = [NaN, 1, 2, NaN, 0], b = [1, 1, 1, NaN, -0]:
// numpy gives [F, T, F, F, T] and [F, T, T, F, T]. Run at run time and
// folded at import (inputs fixed): both paths agree.
TEST(OnnxImportAudit, OrEqualComparisonsAreFalseForNaN) {
  for (bool fixed : {false, true}) {
    OnnxTestModel m;
    m.Input("a", T<float>({5}, {kNaN, 1, 2, kNaN, 0.0f}));
    m.Input("b", T<float>({5}, {1, 1, 1, kNaN, -0.0f}));
    m.Node("LessOrEqual", {"a", "b"}, {"le"});
    m.Node("GreaterOrEqual", {"a", "b"}, {"ge"});
    m.Output("le");
    m.Output("ge");
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> y, m.Run(fixed));
    EXPECT_THAT(y[0].ToVector<bool>(), ElementsAre(false, true, false, false, true)) << fixed;
    EXPECT_THAT(y[1].ToVector<bool>(), ElementsAre(false, true, true, false, true)) << fixed;
  }
}

TEST(OnnxImportAudit, OrEqualComparisonsOfIntegersBroadcast) {
  OnnxTestModel m;
  m.Input("a", T<int64_t>({3, 1}, {1, 2, 3}));
  m.Constant("b", Tensor::Scalar<int64_t>(2));
  m.Node("LessOrEqual", {"a", "b"}, {"le"});
  m.Node("GreaterOrEqual", {"a", "b"}, {"ge"});
  m.Output("le");
  m.Output("ge");
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> y, m.Run());
  EXPECT_EQ(y[0].shape(), Shape({3, 1}));
  EXPECT_THAT(y[0].ToVector<bool>(), ElementsAre(true, true, false));
  EXPECT_THAT(y[1].ToVector<bool>(), ElementsAre(false, true, true));
}

// LeakyRelu and Clip keep a NaN a NaN (numpy's where and clip).
TEST(OnnxImportAudit, LeakyReluAndClipPropagateNaN) {
  OnnxTestModel m;
  m.Input("x", T<float>({3}, {kNaN, -2, 3}));
  m.Constant("lo", Tensor::Scalar<float>(-1));
  m.Constant("hi", Tensor::Scalar<float>(1));
  m.Node("LeakyRelu", {"x"}, {"leaky"});
  m.Node("Clip", {"x", "lo", "hi"}, {"clip"});
  m.Output("leaky");
  m.Output("clip");
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> y, m.Run());
  std::vector<float> leaky = y[0].ToVector<float>(), clip = y[1].ToVector<float>();
  EXPECT_TRUE(std::isnan(leaky[0]) && std::isnan(clip[0]));
  EXPECT_FLOAT_EQ(leaky[1], -0.02f);
  EXPECT_EQ(leaky[2], 3.0f);
  EXPECT_EQ(clip[1], -1.0f);
  EXPECT_EQ(clip[2], 1.0f);
}

// ---- shapes ------------------------------------------------------------------
// Each result has the shape ONNX's shape inference gives, after the GELU fusion
// too.

// x (3) ** e (2, 1, 1) is (2, 1, 3); x (1) ** e (0) is (0); x (3) ** e (0)
// does not broadcast.
TEST(OnnxImportAudit, PowBroadcastsTheExponentsShape) {
  OnnxTestModel m;
  m.Input("x", T<float>({3}, {1, 2, 3}));
  m.Constant("e", T<float>({2, 1, 1}, {2, 2}));
  m.Node("Pow", {"x", "e"}, {"y"});
  m.Output("y");
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> y, m.Run());
  EXPECT_EQ(y[0].shape(), Shape({2, 1, 3}));
  EXPECT_THAT(y[0].ToVector<float>(), ElementsAre(1, 4, 9, 1, 4, 9));

  OnnxTestModel empty;
  empty.Input("x", T<float>({1}, {5}));
  empty.Constant("e", T<float>({0}, {}));
  empty.Node("Pow", {"x", "e"}, {"y"});
  empty.Output("y");
  ASSERT_OK_AND_ASSIGN(y, empty.Run());
  EXPECT_EQ(y[0].shape(), Shape({0}));

  OnnxTestModel mismatch;
  mismatch.Input("x", T<float>({3}, {1, 2, 3}));
  mismatch.Constant("e", T<float>({0}, {}));
  mismatch.Node("Pow", {"x", "e"}, {"y"});
  mismatch.Output("y");
  EXPECT_STATUS(mismatch.Run().status(), absl::StatusCode::kInvalidArgument,
                "shapes (3,) and (0,) do not broadcast");
}

// An exponent of NaNs is one exponent: x ** NaN is NaN (1 ** NaN is 1).
TEST(OnnxImportAudit, PowTakesANaNExponent) {
  OnnxTestModel m;
  m.Input("x", T<float>({2}, {1, 2}));
  m.Constant("e", T<float>({2}, {kNaN, kNaN}));
  m.Node("Pow", {"x", "e"}, {"y"});
  m.Output("y");
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> y, m.Run());
  EXPECT_EQ(y[0].ToVector<float>()[0], 1.0f);
  EXPECT_TRUE(std::isnan(y[0].ToVector<float>()[1]));
}

// GeluChain is PyTorch's exact GELU, 0.5 * x * (1 + erf(x / sqrt(2))), with
// its three constants of shape `dims`.
OnnxTestModel GeluChain(const Shape& dims) {
  OnnxTestModel m;
  m.Input("x", T<float>({5}, {-2, -0.5, 0, 1, 3}));
  auto constant = [&](const std::string& name, float v) {
    m.Constant(name, T<float>(dims, std::vector<float>(dims.num_elements(), v)));
  };
  constant("sqrt2", std::sqrt(2.0f));
  constant("one", 1.0f);
  constant("half", 0.5f);
  m.Node("Div", {"x", "sqrt2"}, {"scaled"});
  m.Node("Erf", {"scaled"}, {"erf"});
  m.Node("Add", {"erf", "one"}, {"one_plus"});
  m.Node("Mul", {"x", "one_plus"}, {"product"});
  m.Node("Mul", {"product", "half"}, {"y"});
  m.Output("y");
  return m;
}

// The fusion keeps ONNX's shape: x (5) with rank-0 constants is (5), with
// (1, 1) constants (1, 5); both run dagrad's GELU.
TEST(OnnxImportAudit, GeluFusionKeepsTheConstantsBroadcast) {
  const std::vector<double> x = {-2, -0.5, 0, 1, 3};
  std::vector<double> want;
  for (double v : x) want.push_back(0.5 * v * (1 + std::erf(v / std::sqrt(2.0))));
  for (const Shape& dims : {Shape(), Shape({1, 1})}) {
    OnnxTestModel m = GeluChain(dims);
    onnx::GraphProto graph = m.graph();
    EXPECT_EQ(FuseGelu(graph), 1) << dims.ToString();
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> y, m.Run());
    EXPECT_EQ(y[0].shape(), dims.rank() == 0 ? Shape({5}) : Shape({1, 5}));
    ExpectAllClose(y[0], want, 1e-6, 1e-6, dims.ToString());
    ASSERT_OK_AND_ASSIGN(OnnxModel model, m.Import());
    int gelus = 0;
    for (NodeId id = 0; id < model.graph->num_nodes(); ++id) {
      const Node& node = model.graph->node(id);
      gelus += node.kind == NodeKind::kOp && node.op->name == "gelu";
    }
    EXPECT_EQ(gelus, 1) << dims.ToString();
  }
}

// Clip's bounds are scalars: a (1) bound leaves a rank-0 x rank 0.
TEST(OnnxImportAudit, ClipKeepsTheShapeOfX) {
  OnnxTestModel m;
  m.Input("x", Tensor::Scalar<float>(5));
  m.Constant("lo", T<float>({1}, {0}));
  m.Constant("hi", T<float>({1}, {2}));
  m.Node("Clip", {"x", "lo", "hi"}, {"y"});
  m.Output("y");
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> y, m.Run());
  EXPECT_EQ(y[0].shape(), Shape());
  EXPECT_THAT(y[0].ToVector<float>(), ElementsAre(2));
}

// Gemm's C broadcasts to (M, N) one way, and A and B are matrices: a
// (1, 1, 2) C or a (1, 2, 2) A is refused (ONNX Runtime: "Invalid bias
// shape for broadcast"), not a (1, 2, 2) result.
TEST(OnnxImportAudit, GemmKeepsItsMatrixShape) {
  OnnxTestModel m;
  m.Input("a", T<float>({2, 2}, {1, 0, 0, 1}));
  m.Input("b", T<float>({2, 2}, {1, 2, 3, 4}));
  m.Constant("c", T<float>({1, 1, 2}, {1, 1}));
  m.Node("Gemm", {"a", "b", "c"}, {"y"});
  m.Output("y");
  EXPECT_STATUS(m.Run().status(), absl::StatusCode::kInvalidArgument,
                "C (1, 1, 2) does not broadcast to (2, 2)");

  OnnxTestModel batched;
  batched.Input("a", T<float>({1, 2, 2}, {1, 0, 0, 1}));
  batched.Input("b", T<float>({2, 2}, {1, 2, 3, 4}));
  batched.Node("Gemm", {"a", "b"}, {"y"});
  batched.Output("y");
  EXPECT_STATUS(batched.Run().status(), absl::StatusCode::kInvalidArgument,
                "A (1, 2, 2) and B (2, 2) must be matrices");
}

// ---- integers ----------------------------------------------------------------
// Integer values and attributes reach the graph exactly, never through a double.

// ConstantOfShape holds its value exactly: 2^53 + 1 (a double rounds it to
// 2^53), INT64_MAX and INT64_MIN (2^63 as a double is out of range).
TEST(OnnxImportAudit, ConstantOfShapeKeepsInt64ValuesExact) {
  for (int64_t v : {(int64_t{1} << 53) + 1, kMax, kMin}) {
    OnnxTestModel m;
    m.Constant("shape", T<int64_t>({2}, {2, 1}));
    OnnxTestModel::TensorAttr(m.Node("ConstantOfShape", {"shape"}, {"y"}), "value",
                              T<int64_t>({1}, {v}));
    m.Output("y");
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> y, m.Run());
    EXPECT_EQ(y[0].shape(), Shape({2, 1}));
    EXPECT_THAT(y[0].ToVector<int64_t>(), ElementsAre(v, v));
  }
}

// Trilu with k = INT64_MAX keeps no element of the upper triangle (j - i >=
// k nowhere) and every one of the lower; k = INT64_MIN the reverse.
TEST(OnnxImportAudit, TriluTakesEveryInt64K) {
  const std::vector<float> x = {1, 2, 3, 4, 5, 6};
  const std::vector<float> zeros(6, 0.0f);
  for (int64_t k : {kMax, kMin}) {
    for (int64_t upper : {1, 0}) {
      OnnxTestModel m;
      m.Input("x", T<float>({2, 3}, x));
      m.Constant("k", Tensor::Scalar<int64_t>(k));
      OnnxTestModel::IntAttr(m.Node("Trilu", {"x", "k"}, {"y"}), "upper", upper);
      m.Output("y");
      ASSERT_OK_AND_ASSIGN(std::vector<Tensor> y, m.Run());
      EXPECT_EQ(y[0].ToVector<float>(), (upper == 1) == (k == kMax) ? zeros : x)
          << "k " << k << ", upper " << upper;
    }
  }
}

// RangeOf returns Range(start, limit, delta) of int64 (or int32) scalars.
absl::StatusOr<std::vector<Tensor>> RangeOf(int64_t start, int64_t limit, int64_t delta,
                                            DType dtype = DType::kInt64) {
  OnnxTestModel m;
  const char* names[3] = {"start", "limit", "delta"};
  const int64_t values[3] = {start, limit, delta};
  for (int i = 0; i < 3; ++i) {
    m.Constant(names[i], dtype == DType::kInt64
                             ? Tensor::Scalar<int64_t>(values[i])
                             : Tensor::Scalar<int32_t>(static_cast<int32_t>(values[i])));
  }
  m.Node("Range", {"start", "limit", "delta"}, {"y"});
  m.Output("y");
  return m.Run();
}

// start + i * delta, exactly, near both ends of int64 (limit - start may
// need 65 bits, i * delta overflow), and of int32: numpy's arange and
// Python's range (ONNX Runtime takes limit - start as a double, and its
// first two ranges here are empty).
TEST(OnnxImportAudit, RangeKeepsIntegerBoundsExact) {
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> y, RangeOf(kMax - 3, kMax, 1));
  EXPECT_THAT(y[0].ToVector<int64_t>(), ElementsAre(kMax - 3, kMax - 2, kMax - 1));
  ASSERT_OK_AND_ASSIGN(y, RangeOf(kMin, kMin + 5, 2));
  EXPECT_THAT(y[0].ToVector<int64_t>(), ElementsAre(kMin, kMin + 2, kMin + 4));
  ASSERT_OK_AND_ASSIGN(y, RangeOf(kMax, kMin, kMin));
  EXPECT_THAT(y[0].ToVector<int64_t>(), ElementsAre(kMax, -1));
  const int64_t quarter = int64_t{1} << 62;
  ASSERT_OK_AND_ASSIGN(y, RangeOf(kMin + 1, kMax, quarter));
  EXPECT_THAT(y[0].ToVector<int64_t>(),
              ElementsAre(kMin + 1, -quarter + 1, 1, quarter + 1));
  ASSERT_OK_AND_ASSIGN(y, RangeOf(INT32_MAX - 7, INT32_MAX, 3, DType::kInt32));
  EXPECT_THAT(y[0].ToVector<int32_t>(),
              ElementsAre(INT32_MAX - 7, INT32_MAX - 4, INT32_MAX - 1));
  ASSERT_OK_AND_ASSIGN(y, RangeOf(10, 4, -2));
  EXPECT_THAT(y[0].ToVector<int64_t>(), ElementsAre(10, 8, 6));
  ASSERT_OK_AND_ASSIGN(y, RangeOf(4, 10, -2));
  EXPECT_EQ(y[0].shape(), Shape({0}));
  EXPECT_STATUS(RangeOf(kMin, kMax, 1).status(), absl::StatusCode::kInvalidArgument,
                "needs more than the 2^62 bytes a tensor may hold");
  EXPECT_STATUS(RangeOf(0, 1, 0).status(), absl::StatusCode::kInvalidArgument,
                "step must not be 0");
}

// An integer attribute is read as the integer it is: Cast's "to" beyond
// int32 is no type (not FLOAT after truncation), and split sizes near
// INT64_MAX are an error, not an overflow.
TEST(OnnxImportAudit, IntegerAttributesAreCheckedNotTruncated) {
  OnnxTestModel cast;
  cast.Input("x", T<int64_t>({1}, {1}));
  OnnxTestModel::IntAttr(cast.Node("Cast", {"x"}, {"y"}), "to",
                         (int64_t{1} << 32) + onnx::TensorProto::FLOAT);
  cast.Output("y");
  EXPECT_STATUS(cast.Run().status(), absl::StatusCode::kInvalidArgument, "Cast to type 4294967297");

  OnnxTestModel split;
  split.Input("x", T<float>({2}, {1, 2}));
  split.Constant("sizes", T<int64_t>({2}, {kMax, kMax}));
  split.Node("Split", {"x", "sizes"}, {"a", "b"});
  split.Output("a");
  EXPECT_STATUS(split.Run().status(), absl::StatusCode::kInvalidArgument,
                "do not add up to 2");
}

// Clip's attributes (before opset 11) are floats, for float x only: an
// int32 x with -inf as its bound is refused, not converted.
TEST(OnnxImportAudit, ClipBeforeOpset11TakesFloatsOnly) {
  OnnxTestModel m(7);
  m.Input("x", T<int32_t>({2}, {1, 2}));
  m.Node("Clip", {"x"}, {"y"});
  m.Output("y");
  EXPECT_STATUS(m.Run().status(), absl::StatusCode::kUnimplemented, "not int32");
}

// ---- initializers ------------------------------------------------------------
// A float initializer is known wherever an op needs a value to build (as
// onnx-simplifier writes Pow exponents, Dropout ratios and Range bounds), and a
// parameter only where an op reads it as data.

// SimplifiedModel is what onnx-simplifier writes: y = Dropout((x * weight)
// ** e, ratio) + Range(start, limit, delta), the exponent, the ratio and
// the bounds float initializers beside the weight.
OnnxTestModel SimplifiedModel() {
  OnnxTestModel m;
  m.Input("x", T<float>({2, 3}, {1, 2, 3, 4, 5, 6}));
  m.Initializer("weight", T<float>({3}, {0.5, 2, -1}));
  m.Initializer("onnx::Pow_3", Tensor::Scalar<float>(2));
  m.Initializer("onnx::Dropout_4", Tensor::Scalar<float>(0.25));
  m.Initializer("start", Tensor::Scalar<float>(0));
  m.Initializer("limit", Tensor::Scalar<float>(1.5));
  m.Initializer("delta", Tensor::Scalar<float>(0.5));
  m.Node("Mul", {"x", "weight"}, {"xw"});
  m.Node("Pow", {"xw", "onnx::Pow_3"}, {"square"});
  m.Node("Dropout", {"square", "onnx::Dropout_4"}, {"dropped"});
  m.Node("Range", {"start", "limit", "delta"}, {"range"});
  m.Node("Add", {"dropped", "range"}, {"y"});
  m.Output("y");
  return m;
}

// It imports and evaluates to (x w)^2 + [0, 0.5, 1]; only the weight is a
// parameter, and its gradient is sum_i 2 w_j x_ij^2.
TEST(OnnxImportAudit, FloatInitializersAreKnownWhereAValueIsNeeded) {
  OnnxTestModel simplified = SimplifiedModel();
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> y, simplified.Run());
  EXPECT_THAT(y[0].ToVector<float>(), ElementsAre(0.25, 16.5, 10, 4, 100.5, 37));
  ASSERT_OK_AND_ASSIGN(OnnxModel m, simplified.Import());
  ASSERT_EQ(m.parameters.size(), 1u);
  EXPECT_EQ(m.parameters[0].name, "weight");
  EXPECT_EQ(m.graph->Parameters().size(), 1u);
  for (NodeId id = 0; id < m.graph->num_nodes(); ++id) {
    const Node& node = m.graph->node(id);
    EXPECT_TRUE(node.kind != NodeKind::kOp || node.op->name != "arange") << "Range not folded";
  }
  Value loss = Sum(m.outputs[0].value);
  ASSERT_OK_AND_ASSIGN(std::vector<Value> grads, Gradients(loss, {m.parameters[0].value}));
  Executor exec(*m.graph);
  ASSERT_OK(m.LoadParameters(exec));
  ASSERT_OK_AND_ASSIGN(auto plan, exec.Compile({grads[0], m.outputs[0].value}));
  const Feeds feeds = {{m.inputs[0].value, T<float>({2, 3}, {1, 2, 3, 4, 5, 6})}};
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> got, exec.Run(*plan, feeds));
  EXPECT_THAT(got[0].ToVector<float>(), ElementsAre(17, 116, -90));
  // Training: the ratio is 0.25, so each square is dropped or scaled by 4/3.
  ASSERT_OK_AND_ASSIGN(got, exec.Run(*plan, feeds, {.training = true, .step = 1}));
  const std::vector<float> square = {0.25, 16, 9, 4, 100, 36}, range = {0, 0.5, 1};
  std::vector<float> trained = got[1].ToVector<float>();
  for (int i = 0; i < 6; ++i) {
    const float kept = trained[i] - range[i % 3];
    EXPECT_TRUE(kept == 0 || std::fabs(kept - square[i] / 0.75f) < 1e-4f) << i << ": " << kept;
  }
}

// Dropout's mask output is the mask y got, in a training run: an element of
// x = 0 that was kept is true (y is 0 there either way).
TEST(OnnxImportAudit, DropoutMaskIsTheMaskAppliedInTraining) {
  OnnxTestModel onnx;
  std::vector<float> xs(400);
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = i % 2 == 0 ? 0.0f : 1.0f;
  onnx.Input("x", T<float>({400}, xs));
  onnx.Initializer("ratio", Tensor::Scalar<float>(0.5));
  onnx.Node("Dropout", {"x", "ratio"}, {"y", "mask"});
  onnx.Output("y");
  onnx.Output("mask");
  ASSERT_OK_AND_ASSIGN(OnnxModel m, onnx.Import());
  Executor exec(*m.graph);
  ASSERT_OK_AND_ASSIGN(auto plan, exec.Compile({m.outputs[0].value, m.outputs[1].value}));
  const Feeds feeds = {{m.inputs[0].value, T<float>({400}, xs)}};
  ASSERT_OK_AND_ASSIGN(auto got, exec.Run(*plan, feeds, {.training = true, .step = 1}));
  const std::vector<float> y = got[0].ToVector<float>();
  const std::vector<bool> mask = got[1].ToVector<bool>();
  int kept_zeros = 0, dropped_zeros = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    if (xs[i] != 0) EXPECT_EQ(mask[i], y[i] != 0) << i;
    if (xs[i] == 0) ++(mask[i] ? kept_zeros : dropped_zeros);
  }
  EXPECT_GT(kept_zeros, 50);
  EXPECT_GT(dropped_zeros, 50);
}

// An initializer read both as data and as a value is a parameter where it
// is data; the value is the file's: 3 x and x ** 3.
TEST(OnnxImportAudit, AnInitializerReadAsDataStaysAParameter) {
  OnnxTestModel m;
  m.Input("x", T<float>({2}, {1, 2}));
  m.Initializer("scale", Tensor::Scalar<float>(3));
  m.Initializer("onnx::Clip_1", Tensor::Scalar<float>(0));
  m.Initializer("onnx::Clip_2", Tensor::Scalar<float>(6));
  m.Node("Mul", {"x", "scale"}, {"scaled"});
  m.Node("Pow", {"x", "scale"}, {"cubed"});
  m.Node("Clip", {"cubed", "onnx::Clip_1", "onnx::Clip_2"}, {"clipped"});
  m.Output("scaled");
  m.Output("clipped");
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> y, m.Run());
  EXPECT_THAT(y[0].ToVector<float>(), ElementsAre(3, 6));
  EXPECT_THAT(y[1].ToVector<float>(), ElementsAre(1, 6));
  ASSERT_OK_AND_ASSIGN(OnnxModel model, m.Import());
  ASSERT_EQ(model.parameters.size(), 1u);  // a Clip bound is a setting, not a weight
  EXPECT_EQ(model.parameters[0].name, "scale");
}

// ---- opsets and dtypes at the edges (second import audit) -----------------------

// Opsets before 7 meant some ops otherwise. Add-6 broadcast b along its
// `axis` attribute (the spec's example: [[1, 2], [3, 4]] + [10, 20] along
// axis 0 is [[11, 12], [23, 24]]; numpy's [[11, 22], [13, 24]] was the
// wrong answer), and by default along a's last dims; without broadcast=1
// the shapes must agree. Reshape-1, whose shape was an attribute, is
// refused, naming it. An op defined then as now (Not-1) imports.
TEST(OnnxImportAudit, OpsBeforeOpset7KeepTheirMeaningOrAreRefused) {
  auto add6 = [](const Tensor& b, int64_t broadcast, int64_t axis) {
    OnnxTestModel m(6);
    m.Input("a", T<float>({2, 2}, {1, 2, 3, 4}));
    m.Input("b", b);
    onnx::NodeProto& add = m.Node("Add", {"a", "b"}, {"y"});
    OnnxTestModel::IntAttr(add, "broadcast", broadcast);
    if (axis >= 0) OnnxTestModel::IntAttr(add, "axis", axis);
    m.Output("y");
    return m.Run();
  };
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> y, add6(T<float>({2}, {10, 20}), 1, 0));
  EXPECT_THAT(y[0].ToVector<float>(), ElementsAre(11, 12, 23, 24));
  ASSERT_OK_AND_ASSIGN(y, add6(T<float>({2}, {10, 20}), 1, -1));
  EXPECT_THAT(y[0].ToVector<float>(), ElementsAre(11, 22, 13, 24));
  EXPECT_STATUS(add6(T<float>({2}, {10, 20}), 0, -1).status(),
                absl::StatusCode::kInvalidArgument,
                "without broadcast=1 (opset 6), (2, 2) and (2,) must be of one shape");
  OnnxTestModel reshape(1);
  reshape.Input("x", T<float>({4}, {1, 2, 3, 4}));
  reshape.Node("Reshape", {"x"}, {"y"});
  reshape.Output("y");
  EXPECT_STATUS(reshape.Import().status(), absl::StatusCode::kUnimplemented,
                "the model uses ONNX opset 1, where Reshape-1 meant otherwise than dagrad knows it");
  OnnxTestModel not_1(1);
  not_1.Input("x", T<bool>({2}, {true, false}));
  not_1.Node("Not", {"x"}, {"y"});
  not_1.Output("y");
  ASSERT_OK_AND_ASSIGN(y, not_1.Run());
  EXPECT_THAT(y[0].ToVector<bool>(), ElementsAre(false, true));
}

// TopK-1 (opsets 1 to 9) takes k as an attribute.
TEST(OnnxImportAudit, TopKBeforeOpset10TakesKAsAnAttribute) {
  OnnxTestModel m(9);
  m.Input("x", T<float>({2, 3}, {1, 5, 3, 9, 7, 8}));
  OnnxTestModel::IntAttr(m.Node("TopK", {"x"}, {"values", "indices"}), "k", 2);
  m.Output("values");
  m.Output("indices");
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> y, m.Run());
  EXPECT_THAT(y[0].ToVector<float>(), ElementsAre(5, 3, 9, 8));
  EXPECT_THAT(y[1].ToVector<int64_t>(), ElementsAre(1, 2, 0, 2));
  OnnxTestModel without_k(9);
  without_k.Input("x", T<float>({3}, {1, 2, 3}));
  without_k.Node("TopK", {"x"}, {"values", "indices"});
  without_k.Output("values");
  EXPECT_STATUS(without_k.Import().status(), absl::StatusCode::kInvalidArgument,
                "the k attribute is missing");
}

// Softmax and LogSoftmax before opset 13 see x as 2-D, (prod(dims[:axis]),
// prod(dims[axis:])): of a zero-size x, an empty result of x's shape.
TEST(OnnxImportAudit, CoercedSoftmaxOfAnEmptyInputIsEmpty) {
  for (const char* op : {"Softmax", "LogSoftmax"}) {
    for (const Shape& shape : {Shape({0, 3}), Shape({2, 0, 3})}) {
      OnnxTestModel m(11);
      m.Input("x", T<float>(shape, {}));
      OnnxTestModel::IntAttr(m.Node(op, {"x"}, {"y"}), "axis", shape.rank() - 1);
      m.Output("y");
      ASSERT_OK_AND_ASSIGN(std::vector<Tensor> y, m.Run());
      EXPECT_EQ(y[0].shape(), shape) << op;
    }
  }
}

// Clip without bounds clamps to the dtype's lowest and largest finite
// values, float16's +-65504 too (ONNX Runtime: [65504, -65504, 3]).
TEST(OnnxImportAudit, ClipWithoutBoundsClampsFloat16ToItsFiniteRange) {
  ASSERT_OK_AND_ASSIGN(Tensor x, Tensor::Zeros(DType::kFloat16, Shape({3})));
  const float values[] = {std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity(), 3};
  for (int i = 0; i < 3; ++i) x.data<Float16>()[i] = FloatToFloat16(values[i]);
  OnnxTestModel m;
  m.Input("x", x);
  m.Node("Clip", {"x"}, {"y"});
  m.Output("y");
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> y, m.Run());
  ASSERT_EQ(y[0].dtype(), DType::kFloat16);
  std::vector<float> got;
  for (Float16 h : y[0].ToVector<Float16>()) got.push_back(Float16ToFloat(h));
  EXPECT_THAT(got, ElementsAre(65504, -65504, 3));
}

// Neg of a 16-bit float is refused naming its dtype (it said "Neg of bool").
TEST(OnnxImportAudit, NegOfFloat16NamesItsDType) {
  ASSERT_OK_AND_ASSIGN(Tensor x, Tensor::Zeros(DType::kFloat16, Shape({2})));
  OnnxTestModel m;
  m.Input("x", x);
  m.Node("Neg", {"x"}, {"y"});
  m.Output("y");
  EXPECT_STATUS(m.Import().status(), absl::StatusCode::kUnimplemented,
                "dagrad's Neg takes float32, float64 and integers, not float16");
}

// Dropout-7's mask is of x's dtype (bool from opset 10): all 1 outside
// training.
TEST(OnnxImportAudit, DropoutBeforeOpset10GivesAMaskOfXsDType) {
  for (int64_t opset : {7, 10}) {
    OnnxTestModel m(opset);
    m.Input("x", T<float>({3}, {1, 2, 3}));
    m.Node("Dropout", {"x"}, {"y", "mask"});
    m.Output("y");
    m.Output("mask");
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> y, m.Run());
    if (opset < 10) {
      ASSERT_EQ(y[1].dtype(), DType::kFloat32);
      EXPECT_THAT(y[1].ToVector<float>(), ElementsAre(1, 1, 1));
    } else {
      ASSERT_EQ(y[1].dtype(), DType::kBool);
      EXPECT_THAT(y[1].ToVector<bool>(), ElementsAre(true, true, true));
    }
  }
}

// ONNX names that dagrad's paths flatten alike stay apart: inputs "a/b"
// and "a_b", initializers "w..b" and "w__b" (both "w__b"). The clean name
// keeps its own path (a checkpoint name is the ONNX name again), whichever
// comes first; the flattened one takes a suffix.
TEST(OnnxImportAudit, NamesThatFlattenAlikeStayApart) {
  OnnxTestModel m;
  m.Input("a/b", T<float>({2}, {1, 2}));
  m.Input("a_b", T<float>({2}, {10, 20}));
  m.Initializer("w..b", T<float>({2}, {2, 3}));
  m.Initializer("w__b", T<float>({2}, {5, 7}));
  m.Node("Add", {"a/b", "a_b"}, {"sum"});
  m.Node("Mul", {"sum", "w..b"}, {"scaled"});
  m.Node("Mul", {"scaled", "w__b"}, {"y"});
  m.Output("y");
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> y, m.Run());
  EXPECT_THAT(y[0].ToVector<float>(), ElementsAre(110, 462));
  ASSERT_OK_AND_ASSIGN(OnnxModel model, m.Import());
  ASSERT_EQ(model.inputs.size(), 2u);
  EXPECT_EQ(model.inputs[0].value.path(), "a_b_2");  // "a/b"
  EXPECT_EQ(model.inputs[1].value.path(), "a_b");
  ASSERT_EQ(model.parameters.size(), 2u);
  EXPECT_EQ(model.parameters[0].value.path(), "w__b_2");  // "w..b"
  EXPECT_EQ(model.parameters[1].value.path(), "w__b");
}

// Flatten's error named the axis after adding the rank (-5 of a rank-2
// input was "axis -3").
TEST(OnnxImportAudit, AFlattenAxisOutOfRangeIsNamedAsGiven) {
  OnnxTestModel m;
  m.Input("x", T<float>({2, 3}, {1, 2, 3, 4, 5, 6}));
  OnnxTestModel::IntAttr(m.Node("Flatten", {"x"}, {"y"}), "axis", -5);
  m.Output("y");
  EXPECT_STATUS(m.Import().status(), absl::StatusCode::kInvalidArgument,
                "axis -5 is outside [-2, 2]");
}

}  // namespace
}  // namespace dagrad::testing

#endif  // DAGRAD_HAVE_ONNX
