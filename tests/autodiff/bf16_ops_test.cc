// The 16-bit floats in graphs, with hand-worked values: the ops without a
// 16-bit kernel refuse them when the graph is built, naming the op and the
// ops that take them; casts from and to every dtype; the layout ops move
// their bits exactly; bfloat16 products accumulate in float32 (against a
// float64 sum of the same values, within float32's error bound); their
// gradients are float32.

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "engine/bfloat16.h"
#include "engine/executor.h"
#include "engine/graph.h"
#include "ops/autodiff/autodiff.h"
#include "ops/elementwise.h"
#include "ops/fill.h"
#include "ops/gather.h"
#include "ops/matmul.h"
#include "ops/op_util.h"
#include "ops/reduce.h"
#include "ops/registry.h"
#include "ops/shape_ops.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

Tensor BF16(const Shape& shape, const std::vector<uint16_t>& bits) {
  std::vector<BFloat16> values;
  for (uint16_t b : bits) values.push_back({b});
  return T<BFloat16>(shape, values);
}

std::vector<uint16_t> BitsOf(const Tensor& t) {
  std::vector<uint16_t> out;
  const auto* p = static_cast<const uint16_t*>(t.raw_data());
  for (int64_t i = 0; i < t.num_elements(); ++i) out.push_back(p[i]);
  return out;
}

// ---- refusals -------------------------------------------------------------------

constexpr char kTakeBFloat16[] =
    "the ops that take bfloat16 are broadcast_to, cast, concat, detach, gather, linear, matmul, "
    "permute, reshape, slice";

TEST(ReducedFloatOps, AnOpWithoutAKernelRefusesThemWhenTheGraphIsBuilt) {
  Graph g;
  const Value x = g.Input("x", DType::kBFloat16, {2, 3});
  {
    Graph::Scope s(g, "block");
    Tanh(x);
  }
  EXPECT_STATUS(g.status(), absl::StatusCode::kInvalidArgument,
                absl::StrCat("in 'block': tanh: takes no bfloat16 (input 0 is bfloat16 (2, 3)): "
                             "cast it to float32 first; ",
                             kTakeBFloat16));
  Graph g2;
  const Value a = g2.Input("a", DType::kFloat32, {3});
  Add(a, Cast(g2.Input("b", DType::kBFloat16, {3}), DType::kBFloat16));
  EXPECT_STATUS(g2.status(), absl::StatusCode::kInvalidArgument,
                "add: takes no bfloat16 (input 1 is bfloat16 (3,))");
  Graph g3;
  Sum(g3.Input("h", DType::kFloat16, {4}));
  EXPECT_STATUS(g3.status(), absl::StatusCode::kInvalidArgument,
                "sum: takes no float16 (input 0 is float16 (4,)): cast it to float32 first; the "
                "ops that take float16 are broadcast_to, cast, concat, detach, gather, "
                "permute, reshape, slice");
  // An output dtype from an attribute is refused too.
  Graph g4;
  Fill(g4, {2}, 1.0, DType::kBFloat16);
  EXPECT_STATUS(g4.status(), absl::StatusCode::kInvalidArgument,
                absl::StrCat("fill: gives no bfloat16: make float32 and cast that; ",
                             kTakeBFloat16));
  // Nothing was added for the refused op.
  EXPECT_EQ(g4.num_nodes(), 0);
}

TEST(ReducedFloatOps, ProductsTakeBFloat16OperandsOnly) {
  Graph g;
  const Value h = g.Input("h", DType::kFloat16, {2, 2});
  MatMul(h, h);
  EXPECT_STATUS(g.status(), absl::StatusCode::kInvalidArgument,
                "matmul: takes no float16 (input 0 is float16 (2, 2))");
  Graph g2;
  const Value a = g2.Input("a", DType::kBFloat16, {2, 2});
  MatMul(a, g2.Input("b", DType::kFloat32, {2, 2}));
  EXPECT_STATUS(g2.status(), absl::StatusCode::kInvalidArgument,
                "dtypes differ: bfloat16 vs float32");
  Graph g3;
  const Value c = g3.Input("c", DType::kBFloat16, {2, 2});
  MatMul(c, c, {.output = DType::kFloat64});
  EXPECT_STATUS(g3.status(), absl::StatusCode::kInvalidArgument,
                "output dtype float64 for bfloat16 operands; float32 or bfloat16 is what they "
                "give");
  Graph g4;
  const Value f = g4.Input("f", DType::kFloat32, {2, 2});
  MatMul(f, f, {.output = DType::kBFloat16});
  EXPECT_STATUS(g4.status(), absl::StatusCode::kInvalidArgument,
                "output dtype bfloat16 for float32 operands; float32 is what they give");
  Graph g5;
  const Value x = g5.Input("x", DType::kBFloat16, {4, 3});
  Linear(x, g5.Input("w", DType::kBFloat16, {2, 3}), g5.Input("b", DType::kBFloat16, {2}));
  EXPECT_STATUS(g5.status(), absl::StatusCode::kInvalidArgument,
                "bias must be float32, got bfloat16");
}

TEST(ReducedFloatOps, CheckReducedFloatsNamesTheOp) {
  Graph g;
  const Value x = g.Input("x", DType::kBFloat16, {3});
  EXPECT_STATUS(CheckReducedFloats(*FindOp("exp"), {x}, Attrs()),
                absl::StatusCode::kInvalidArgument, "exp: takes no bfloat16");
  EXPECT_TRUE(CheckReducedFloats(*FindOp("reshape"), {x}, Attrs().Ints("shape", {3})).ok());
}

// ---- casts ----------------------------------------------------------------------

TEST(ReducedFloatOps, CastsFromAndToEveryDType) {
  Graph g;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Value x = g.Input("x", DType::kFloat32, {5});
  const Value ints = g.Input("i", DType::kInt64, {3});
  const Value bf = Cast(x, DType::kBFloat16), half = Cast(x, DType::kFloat16);
  const std::vector<Value> fetches = {
      bf, half, Cast(bf, DType::kFloat32), Cast(half, DType::kFloat64), Cast(bf, DType::kBool),
      Cast(ints, DType::kBFloat16), Cast(ints, DType::kFloat16), Cast(half, DType::kBFloat16),
      Cast(Slice(bf, 0, 0, 2), DType::kInt32)};
  ASSERT_OK_AND_ASSIGN(
      std::vector<Tensor> out,
      RunOnce(g, fetches,
              {{x, T<float>({5}, {1.0f / 3, -0.0f, -nan, 70000.0f, -3.75f})},
               {ints, T<int64_t>({3}, {257, -2049, 0})}}));
  EXPECT_THAT(BitsOf(out[0]), ::testing::ElementsAre(0x3eab, 0x8000, 0xffc0, 0x4789, 0xc070));
  EXPECT_THAT(BitsOf(out[1]), ::testing::ElementsAre(0x3555, 0x8000, 0xfe00, 0x7c00, 0xc380));
  const std::vector<float> back = out[2].ToVector<float>();
  EXPECT_EQ(back[0], 0.333984375f);
  EXPECT_TRUE(std::signbit(back[1]) && back[1] == 0);
  EXPECT_TRUE(std::isnan(back[2]) && std::signbit(back[2]));
  EXPECT_EQ(back[3], 70144.0f);
  EXPECT_EQ(out[3].data<double>()[0], 0.333251953125);
  EXPECT_TRUE(std::isinf(out[3].data<double>()[3]));
  EXPECT_THAT(out[4].ToVector<bool>(), ::testing::ElementsAre(true, false, true, true, true));
  EXPECT_THAT(BitsOf(out[5]), ::testing::ElementsAre(0x4380, 0xc500, 0x0000));  // 256, -2048
  EXPECT_THAT(BitsOf(out[6]), ::testing::ElementsAre(0x5c04, 0xe800, 0x0000));  // 257, -2048
  EXPECT_THAT(BitsOf(out[7]), ::testing::ElementsAre(0x3eab, 0x8000, 0xffc0, 0x7f80, 0xc070));
  EXPECT_THAT(out[8].ToVector<int32_t>(), ::testing::ElementsAre(0, 0));
}

TEST(ReducedFloatOps, ACastToIntegersRefusesWhatTheyCannotHold) {
  Graph g;
  const Value x = g.Input("x", DType::kBFloat16, {3});
  const Value y = Cast(x, DType::kInt32);
  EXPECT_STATUS(RunOnce(g, {y}, {{x, BF16({3}, {0x3f80, 0x7f80, 0})}}).status(),
                absl::StatusCode::kInvalidArgument, "cannot cast inf (element 1) to int32");
}

// ---- layout ops --------------------------------------------------------------------

TEST(ReducedFloatOps, LayoutOpsMoveTheBitsExactly) {
  Graph g;
  const Value x = g.Input("x", DType::kBFloat16, {2, 3});
  const Value ids = g.Input("ids", DType::kInt32, {3});
  const Value h = g.Input("h", DType::kFloat16, {3});
  const std::vector<Value> fetches = {Transpose(x, 0, 1),
                                      Reshape(x, {3, 2}),
                                      Slice(x, 1, 1, 3),
                                      Concat({x, x}, 0),
                                      Embedding(Reshape(x, {3, 2}), ids),
                                      BroadcastTo(Slice(x, 0, 0, 1), Shape({2, 3})),
                                      Concat({h, Slice(h, 0, 2, 3)}, 0)};
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out,
                       RunOnce(g, fetches,
                               {{x, BF16({2, 3}, {1, 2, 3, 4, 5, 6})},
                                {ids, T<int32_t>({3}, {2, 0, 2})},
                                {h, T<Float16>({3}, {{7}, {8}, {9}})}}));
  using ::testing::ElementsAre;
  EXPECT_EQ(out[0].TypeString(), "bfloat16 (3, 2)");
  EXPECT_THAT(BitsOf(out[0]), ElementsAre(1, 4, 2, 5, 3, 6));
  EXPECT_THAT(BitsOf(out[1]), ElementsAre(1, 2, 3, 4, 5, 6));
  EXPECT_THAT(BitsOf(out[2]), ElementsAre(2, 3, 5, 6));
  EXPECT_THAT(BitsOf(out[3]), ElementsAre(1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6));
  EXPECT_THAT(BitsOf(out[4]), ElementsAre(5, 6, 1, 2, 5, 6));
  EXPECT_THAT(BitsOf(out[5]), ElementsAre(1, 2, 3, 1, 2, 3));
  EXPECT_EQ(out[6].TypeString(), "float16 (4,)");
  EXPECT_THAT(BitsOf(out[6]), ElementsAre(7, 8, 9, 9));
}

// ---- products ----------------------------------------------------------------------

TEST(ReducedFloatOps, AProductAccumulatesInFloat32) {
  // (1 + 2^-7)^2 x 2 = 2 + 2^-5 + 2^-13: exact in float32; bfloat16
  // (spacing 2^-6 at 2) rounds it to 2 + 2^-5.
  Graph g;
  const Value a = g.Input("a", DType::kBFloat16, {1, 2});
  const Value b = g.Input("b", DType::kBFloat16, {2, 1});
  const Value x = g.Input("x", DType::kBFloat16, {2});
  const Value w = g.Input("w", DType::kBFloat16, {1, 2});
  const Value bias = g.Input("bias", DType::kFloat32, {1});
  ASSERT_OK_AND_ASSIGN(
      std::vector<Tensor> out,
      RunOnce(g, {MatMul(a, b), MatMul(a, b, {.output = DType::kBFloat16}), Linear(x, w, bias)},
              {{a, BF16({1, 2}, {0x3f81, 0x3f81})},
               {b, BF16({2, 1}, {0x3f81, 0x3f81})},
               {x, BF16({2}, {0x3f81, 0x3f81})},
               {w, BF16({1, 2}, {0x3f81, 0x3f81})},
               {bias, T<float>({1}, {0.25f})}}));
  EXPECT_EQ(out[0].TypeString(), "float32 (1, 1)");
  EXPECT_EQ(out[0].data<float>()[0], 2.0313720703125f);
  EXPECT_EQ(out[1].TypeString(), "bfloat16 (1, 1)");
  EXPECT_THAT(BitsOf(out[1]), ::testing::ElementsAre(0x4002));  // 2.03125
  EXPECT_EQ(out[2].TypeString(), "float32 (1,)");
  EXPECT_EQ(out[2].data<float>()[0], 2.2813720703125f);
}

// Reference is the float64 product of a (m, k) and b (k, n) read through
// strides (elements as doubles), with the error bound of a float32 sum of
// k products: k x 2^-24 x sum |a||b|.
struct Reference {
  std::vector<double> value, bound;
};

Reference ProductOf(const std::vector<double>& a, int64_t rsa, int64_t csa,
                    const std::vector<double>& b, int64_t rsb, int64_t csb, int64_t m, int64_t k,
                    int64_t n) {
  Reference r{std::vector<double>(m * n), std::vector<double>(m * n)};
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0, magnitude = 0;
      for (int64_t p = 0; p < k; ++p) {
        const double t = a[i * rsa + p * csa] * b[p * rsb + j * csb];
        sum += t;
        magnitude += std::abs(t);
      }
      r.value[i * n + j] = sum;
      r.bound[i * n + j] = (k + 1) * std::ldexp(magnitude, -24);
    }
  }
  return r;
}

struct ProductShape {
  Shape a, b;
  bool ta, tb;
};

TEST(ReducedFloatOps, ProductsEqualTheFloat32ProductOfTheBFloat16Values) {
  // A tall product, batched ones (one operand broadcast), transposes, k = 0.
  // A's panels (GemmBFloat16) split the (2100, 520) one.
  for (const ProductShape& s : std::vector<ProductShape>{{{3, 70, 33}, {33, 21}, false, false},
                                                        {{3, 70, 33}, {21, 33}, false, true},
                                                        {{4, 9, 17}, {4, 12, 17}, false, true},
                                                        {{3, 17, 9}, {17, 12}, true, false},
                                                        {{1, 9, 17}, {4, 17, 12}, false, false},
                                                        {{2100, 520}, {520, 3}, false, false},
                                                        {{5, 0}, {0, 7}, false, false}}) {
    SCOPED_TRACE(s.a.ToString() + " x " + s.b.ToString());
    Graph g;
    const Value a = g.Input("a", DType::kBFloat16, s.a), b = g.Input("b", DType::kBFloat16, s.b);
    const Value y = MatMul(a, b, {.transpose_a = s.ta, .transpose_b = s.tb});
    const Tensor ta = Random(DType::kBFloat16, s.a, 1, -2, 2);
    const Tensor tb = Random(DType::kBFloat16, s.b, 2, -2, 2);
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, RunOnce(g, {y}, {{a, ta}, {b, tb}}));
    const std::vector<double> va = AsDoubles(ta), vb = AsDoubles(tb), got = AsDoubles(out[0]);
    const int64_t m = y.dim(-2), n = y.dim(-1), k = s.ta ? s.a[s.a.rank() - 2] : s.a.dims().back();
    const int64_t mat_a = s.a[s.a.rank() - 2] * s.a.dims().back();
    const int64_t mat_b = s.b[s.b.rank() - 2] * s.b.dims().back();
    const int64_t batches = out[0].num_elements() / std::max<int64_t>(m * n, 1);
    for (int64_t batch = 0; batch < batches; ++batch) {
      // Each operand above has one matrix per batch entry, or one for all.
      const int64_t oa = (ta.num_elements() == mat_a ? 0 : batch) * mat_a;
      const int64_t ob = (tb.num_elements() == mat_b ? 0 : batch) * mat_b;
      const std::vector<double> sub_a(va.begin() + oa, va.begin() + oa + mat_a);
      const std::vector<double> sub_b(vb.begin() + ob, vb.begin() + ob + mat_b);
      const int64_t lda = s.a.dims().back(), ldb = s.b.dims().back();
      const Reference r = ProductOf(sub_a, s.ta ? 1 : lda, s.ta ? lda : 1, sub_b,
                                    s.tb ? 1 : ldb, s.tb ? ldb : 1, m, k, n);
      for (int64_t i = 0; i < m * n; ++i) {
        ASSERT_LE(std::abs(got[batch * m * n + i] - r.value[i]), r.bound[i])
            << "batch " << batch << " element " << i;
      }
    }
  }
}

// ---- gradients ----------------------------------------------------------------------

TEST(ReducedFloatOps, GradientsOfBFloat16ValuesAreFloat32) {
  // loss = sum(Cast(x) · Cast(w)): dw[i][j] = sum_r bf16(x[r][i]), here
  // 1/3 -> 0.333984375 in both rows; the upstream gradient (ones) is exact.
  Graph g;
  const Value x = g.Input("x", DType::kFloat32, {2, 2});
  const Value w = g.Parameter("w", {2, 3}, Initializer::Constant(0.5));
  const Value x16 = Cast(x, DType::kBFloat16);
  const Value loss = Sum(MatMul(x16, Cast(w, DType::kBFloat16)));
  ASSERT_OK_AND_ASSIGN(std::vector<Value> grads, Gradients(loss, {w, x16, x}));
  EXPECT_EQ(grads[0].dtype(), DType::kFloat32);
  EXPECT_EQ(grads[1].dtype(), DType::kFloat32);
  EXPECT_EQ(grads[2].dtype(), DType::kFloat32);
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out,
                       RunOnce(g, grads, {{x, T<float>({2, 2}, {1.0f / 3, 2, 1.0f / 3, -1})}}));
  EXPECT_THAT(out[0].ToVector<float>(),
              ::testing::ElementsAre(0.66796875f, 0.66796875f, 0.66796875f, 1, 1, 1));
  // dx = ones · bf16(w)ᵀ = 1.5 everywhere, through the cast unrounded.
  EXPECT_THAT(out[2].ToVector<float>(), ::testing::Each(1.5f));
}

TEST(ReducedFloatOps, AnEmbeddingOfABFloat16TableHasAFloat32Gradient) {
  Graph g;
  const Value table = g.Parameter("table", {3, 2}, Initializer::Constant(1.0 / 3),
                                  DType::kBFloat16);
  const Value ids = g.Input("ids", DType::kInt64, {3});
  const Value loss = Sum(MatMul(Reshape(Embedding(table, ids), {1, 6}),
                                Cast(Fill(g, {6, 1}, 2.0), DType::kBFloat16)));
  ASSERT_OK_AND_ASSIGN(std::vector<Value> grads, Gradients(loss, {table}));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out,
                       RunOnce(g, {grads[0], table}, {{ids, T<int64_t>({3}, {2, 0, 2})}}));
  EXPECT_EQ(out[0].TypeString(), "float32 (3, 2)");
  EXPECT_THAT(out[0].ToVector<float>(), ::testing::ElementsAre(2, 2, 0, 0, 4, 4));
  // The constant initializer rounds 1/3 once, to nearest even.
  EXPECT_THAT(BitsOf(out[1]), ::testing::Each(0x3eab));
}

// An op whose rule breaks GradientDType: autodiff names it.
absl::StatusOr<TensorType> SameType(const InferContext& ctx) { return ctx.in(0); }
std::vector<Value> WideningRule(const GradContext& c) {
  return {Cast(c.grad, DType::kFloat64)};
}
const OpDef kWideningGrad = {.name = "widening_grad", .infer = SameType, .grad = WideningRule};

TEST(ReducedFloatOps, AGradientOfTheWrongDTypeIsAnInternalError) {
  Graph g;
  const Value x = g.Input("x", DType::kFloat32, {2});
  const Value y = BuildOp(kWideningGrad, {x});
  EXPECT_STATUS(Gradients(Sum(y), {x}).status(), absl::StatusCode::kInternal,
                "op 'widening_grad': its gradient rule gave input 0 of node 'widening_grad' a "
                "float64 gradient; a float32 value's is float32");
}

TEST(ReducedFloatOps, CheckNumericsFindsAnInfinityInBFloat16) {
  Graph g;
  const Value x = g.Input("x", DType::kFloat32, {2});
  const Value y = Cast(x, DType::kBFloat16);
  Executor exec(g, {.check_numerics = true});
  ASSERT_OK_AND_ASSIGN(auto plan, exec.Compile({y}));
  EXPECT_STATUS(exec.Run(*plan, {{x, T<float>({2}, {1, 3.4e38f})}}).status(),
                absl::StatusCode::kInvalidArgument,
                "(op cast, bfloat16 (2,)) produced Inf at element 1");
}

}  // namespace
}  // namespace dagrad::testing
