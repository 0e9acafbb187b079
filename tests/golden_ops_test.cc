// PyTorch goldens run through dagrad's ops. The cases are written by
// tools/goldens/basic_ops.py (unary, binary, reduce, shape and matmul ops),
// tools/goldens/nn_ops.py (layer_norm, gather, where, fill, arange) and
// tools/goldens/edges.py (NaN, +-inf and zeros through all of those and the
// softmax and loss families, values and gradients);
// each case name maps here, explicitly, to the dagrad builder it checks,
// with its op attributes read from the case so the two sides cannot drift.
//
// A case with an input "gy" also checks the backward pass: autodiff's
// gradients with seed gy against torch.autograd's, one output grad_<x> per
// input x.
//
// Goldens are torch's float64 results rounded once to the output dtype, so
// float32 outputs are held to float32 tolerance, float64 outputs to 1e-12,
// integer and bool outputs exactly.

#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/executor.h"
#include "ops/autodiff/autodiff.h"
#include "ops/elementwise.h"
#include "ops/fill.h"
#include "ops/gather.h"
#include "ops/gelu.h"
#include "ops/layer_norm.h"
#include "ops/loss.h"
#include "ops/matmul.h"
#include "ops/op_util.h"
#include "ops/reduce.h"
#include "ops/registry.h"
#include "ops/sampling.h"
#include "ops/select.h"
#include "ops/shape_ops.h"
#include "ops/softmax.h"
#include "tests/support/golden.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

using Json = nlohmann::json;
using Inputs = std::map<std::string, Value>;
using Build = std::function<Value(Graph&, const Inputs&, const Json&)>;

struct Golden {
  Build build;
  double rtol = 1e-5, atol = 1e-6;  // float32 outputs
};

// G wraps a builder expression over `g` (the graph), `in` (the inputs by
// name) and `attrs` (the case's attributes); GT sets float32 tolerances.
#define G(expr) \
  Golden { [](Graph& g, const Inputs& in, const Json& attrs) -> Value { return expr; } }
#define GT(expr, rtol, atol)                                                                \
  Golden {                                                                                  \
    [](Graph& g, const Inputs& in, const Json& attrs) -> Value { return expr; }, rtol, atol \
  }

std::vector<int64_t> Ints(const Json& j) { return j.get<std::vector<int64_t>>(); }

// Number reads a float attribute; JSON has no infinities, so the generators
// write them as strings.
double Number(const Json& j) {
  if (!j.is_string()) return j.get<double>();
  const std::string s = j.get<std::string>();
  return s == "inf" ? HUGE_VAL : s == "-inf" ? -HUGE_VAL : std::nan("");
}

DType DTypeAttr(const Json& attrs) { return *DTypeFromName(attrs["dtype"].get<std::string>()); }

Value Reduce(Value (*op)(Value, std::vector<int64_t>, bool), const Inputs& in, const Json& a) {
  return op(in.at("x"), Ints(a["axes"]), a["keepdims"].get<bool>());
}

Value SliceOf(const Inputs& in, const Json& a) {
  return Slice(in.at("x"), a["axis"], a["start"], a["end"], a["step"]);
}

Value MatMulOf(const Inputs& in, const Json& a) {
  return MatMul(in.at("a"), in.at("b"),
                {.transpose_a = a["transpose_a"].get<bool>(),
                 .transpose_b = a["transpose_b"].get<bool>()});
}

const std::map<std::string, Golden>& BasicOps() {
  static const auto* const cases = new std::map<std::string, Golden>{
      // ops/binary.cc
      {"add_broadcast", G(Add(in.at("a"), in.at("b")))},
      {"sub_broadcast_leading", G(Sub(in.at("a"), in.at("b")))},
      {"mul_broadcast_both", G(Mul(in.at("a"), in.at("b")))},
      {"div_broadcast", G(Div(in.at("a"), in.at("b")))},
      {"maximum_broadcast", G(Maximum(in.at("a"), in.at("b")))},
      {"minimum_same_shape", G(Minimum(in.at("a"), in.at("b")))},
      {"add_int64", G(Add(in.at("a"), in.at("b")))},
      {"mul_float64", G(Mul(in.at("a"), in.at("b")))},
      {"equal_broadcast", G(Equal(in.at("a"), in.at("b")))},
      {"less_broadcast", G(Less(in.at("a"), in.at("b")))},
      {"greater_broadcast", G(Greater(in.at("a"), in.at("b")))},
      {"less_int64", G(Less(in.at("a"), in.at("b")))},
      {"logical_and_broadcast", G(LogicalAnd(in.at("a"), in.at("b")))},
      {"logical_or_broadcast", G(LogicalOr(in.at("a"), in.at("b")))},
      {"logical_not", G(LogicalNot(in.at("a")))},
      {"atan2_quadrants", G(Atan2(in.at("y"), in.at("x")))},
      // ops/unary.cc
      {"neg", G(Neg(in.at("x")))},
      {"exp", G(Exp(in.at("x")))},
      {"log", G(Log(in.at("x")))},
      {"sqrt", G(Sqrt(in.at("x")))},
      {"rsqrt", G(Rsqrt(in.at("x")))},
      {"pow_square", G(Pow(in.at("x"), attrs["exponent"]))},
      {"pow_cube", G(Pow(in.at("x"), attrs["exponent"]))},
      {"pow_fractional", G(Pow(in.at("x"), attrs["exponent"]))},
      {"scale", G(Scale(in.at("x"), attrs["factor"]))},
      {"add_scalar", G(AddScalar(in.at("x"), attrs["offset"]))},
      {"relu", G(Relu(in.at("x")))},
      {"gelu_exact", G(Gelu(in.at("x")))},
      {"tanh", G(Tanh(in.at("x")))},
      {"sigmoid", G(Sigmoid(in.at("x")))},
      {"sin", G(Sin(in.at("x")))},
      {"cos", G(Cos(in.at("x")))},
      {"sin_float64", G(Sin(in.at("x")))},
      {"softplus_tails", G(Softplus(in.at("x")))},
      {"relu_grad", G(ReluGrad(in.at("x"), in.at("g")))},
      {"gelu_grad", G(GeluGrad(in.at("x"), in.at("g")))},
      {"cast_float32_to_int64", G(Cast(in.at("x"), DTypeAttr(attrs)))},
      {"cast_float32_to_int32", G(Cast(in.at("x"), DTypeAttr(attrs)))},
      {"cast_float32_to_bool", G(Cast(in.at("x"), DTypeAttr(attrs)))},
      {"cast_float32_to_float64", G(Cast(in.at("x"), DTypeAttr(attrs)))},
      {"cast_float64_to_float32", G(Cast(in.at("x"), DTypeAttr(attrs)))},
      {"cast_int64_to_float32", G(Cast(in.at("x"), DTypeAttr(attrs)))},
      {"cast_bool_to_float32", G(Cast(in.at("x"), DTypeAttr(attrs)))},
      // ops/reduce.cc
      {"sum_all", G(Reduce(Sum, in, attrs))},
      {"sum_last", G(Reduce(Sum, in, attrs))},
      {"sum_leading_keepdims", G(Reduce(Sum, in, attrs))},
      {"sum_non_contiguous", G(Reduce(Sum, in, attrs))},
      {"sum_middle_keepdims", G(Reduce(Sum, in, attrs))},
      {"sum_int64", G(Reduce(Sum, in, attrs))},
      {"mean_all", G(Reduce(Mean, in, attrs))},
      {"mean_last", G(Reduce(Mean, in, attrs))},
      {"mean_leading_keepdims", G(Reduce(Mean, in, attrs))},
      {"mean_non_contiguous", G(Reduce(Mean, in, attrs))},
      {"mean_middle_keepdims", G(Reduce(Mean, in, attrs))},
      {"max_all", G(Reduce(Max, in, attrs))},
      {"max_last", G(Reduce(Max, in, attrs))},
      {"max_leading_keepdims", G(Reduce(Max, in, attrs))},
      {"max_non_contiguous", G(Reduce(Max, in, attrs))},
      {"max_middle_keepdims", G(Reduce(Max, in, attrs))},
      {"max_ties", G(Reduce(Max, in, attrs))},
      // ops/shape_ops.cc (unslice through slice's gradient)
      {"reshape_infer", G(Reshape(in.at("x"), Ints(attrs["shape"])))},
      {"permute_4d", G(Permute(in.at("x"), Ints(attrs["perm"])))},
      {"permute_int64", G(Permute(in.at("x"), Ints(attrs["perm"])))},
      {"broadcast_to", G(BroadcastTo(in.at("x"), Shape(Ints(attrs["shape"]))))},
      {"concat_middle_axis", G(Concat({in.at("a"), in.at("b"), in.at("a")}, attrs["axis"]))},
      {"concat_bool_first_axis", G(Concat({in.at("a"), in.at("b")}, attrs["axis"]))},
      {"slice_step", G(SliceOf(in, attrs))},
      {"slice_negative_start_clamped_end", G(SliceOf(in, attrs))},
      {"slice_middle_axis_step3", G(SliceOf(in, attrs))},
      // ops/matmul.cc; products of up to 5 terms: a few float32 ulps of 4.
      {"matmul_plain", GT(MatMulOf(in, attrs), 1e-5, 2e-6)},
      {"matmul_transpose_a", GT(MatMulOf(in, attrs), 1e-5, 2e-6)},
      {"matmul_transpose_b", GT(MatMulOf(in, attrs), 1e-5, 2e-6)},
      {"matmul_transpose_both", GT(MatMulOf(in, attrs), 1e-5, 2e-6)},
      {"matmul_shared_rhs", GT(MatMulOf(in, attrs), 1e-5, 2e-6)},
      {"matmul_shared_lhs", GT(MatMulOf(in, attrs), 1e-5, 2e-6)},
      {"matmul_batch_broadcast", GT(MatMulOf(in, attrs), 1e-5, 2e-6)},
      {"matmul_float64", G(MatMulOf(in, attrs))},
      {"linear_bias", GT(Linear(in.at("input"), in.at("weight"), in.at("bias")), 1e-5, 2e-6)},
      {"linear_no_bias", GT(Linear(in.at("input"), in.at("weight")), 1e-5, 2e-6)},
  };
  return *cases;
}

Value Optional(const Inputs& in, const char* name) {
  auto it = in.find(name);
  return it == in.end() ? Value() : it->second;
}

Value LayerNormOf(const Inputs& in, const Json& a) {
  return LayerNorm(in.at("x"), Optional(in, "gamma"), Optional(in, "beta"), a["eps"]);
}

// FillValueOf reads a value of fill or arange: an integer as an integer.
FillValue FillValueOf(const Json& j) {
  if (j.is_number_integer()) return j.get<int64_t>();
  return Number(j);
}

Value FillOf(Graph& g, const Json& a) {
  return Fill(g, Shape(Ints(a["shape"])), FillValueOf(a["value"]), DTypeAttr(a));
}

Value ArangeOf(Graph& g, const Json& a) {
  return Arange(g, FillValueOf(a["start"]), FillValueOf(a["stop"]), FillValueOf(a["step"]),
                DTypeAttr(a));
}

Value GeluOf(const Inputs& in, const Json& a) {
  return Gelu(in.at("x"), a["approximate"] == "tanh" ? GeluApproximate::kTanh
                                                      : GeluApproximate::kNone);
}

const std::map<std::string, Golden>& NnOps() {
  static const auto* const cases = new std::map<std::string, Golden>{
      // ops/layer_norm.cc (layer_norm_grad and layer_norm_param_grad through
      // the gradients). dx scales with 1/std: the constant row's is
      // 1/sqrt(eps) ~ 316 times gy.
      {"layer_norm_affine_3d", GT(LayerNormOf(in, attrs), 1e-5, 2e-6)},
      {"layer_norm_plain", GT(LayerNormOf(in, attrs), 1e-5, 2e-6)},
      {"layer_norm_gamma_only", GT(LayerNormOf(in, attrs), 1e-5, 2e-6)},
      {"layer_norm_beta_only", GT(LayerNormOf(in, attrs), 1e-5, 2e-6)},
      {"layer_norm_large_mean", GT(LayerNormOf(in, attrs), 1e-5, 2e-6)},
      {"layer_norm_constant_row", GT(LayerNormOf(in, attrs), 1e-5, 1e-4)},
      {"layer_norm_float64", G(LayerNormOf(in, attrs))},
      {"layer_norm_wide_rows", GT(LayerNormOf(in, attrs), 1e-5, 2e-6)},
      // ops/gather.cc (scatter_add through the gradients)
      {"gather_axis0_repeats", G(Gather(in.at("params"), in.at("indices"), attrs["axis"]))},
      {"gather_middle_axis_int32", G(Gather(in.at("params"), in.at("indices"), attrs["axis"]))},
      {"gather_last_axis_negative", G(Gather(in.at("params"), in.at("indices"), attrs["axis"]))},
      {"gather_scalar_index", G(Gather(in.at("params"), in.at("indices"), attrs["axis"]))},
      {"gather_int64_params", G(Gather(in.at("params"), in.at("indices"), attrs["axis"]))},
      {"gather_matches_torch_gather",
       G(Gather(in.at("params"), in.at("indices"), attrs["axis"]))},
      {"embedding", G(Embedding(in.at("table"), in.at("ids")))},
      // ops/select.cc
      {"where_broadcast", G(Where(in.at("cond"), in.at("a"), in.at("b")))},
      {"where_same_shape", G(Where(in.at("cond"), in.at("a"), in.at("b")))},
      {"where_scalar_b", G(Where(in.at("cond"), in.at("a"), in.at("b")))},
      {"where_int64", G(Where(in.at("cond"), in.at("a"), in.at("b")))},
      // ops/fill.cc
      {"fill_float32", G(FillOf(g, attrs))},
      {"fill_float64_inf", G(FillOf(g, attrs))},
      {"fill_int32", G(FillOf(g, attrs))},
      {"fill_int64_scalar", G(FillOf(g, attrs))},
      {"fill_bool", G(FillOf(g, attrs))},
      {"fill_empty", G(FillOf(g, attrs))},
      {"arange_int64", G(ArangeOf(g, attrs))},
      {"arange_int64_step3", G(ArangeOf(g, attrs))},
      {"arange_int32_negative_step", G(ArangeOf(g, attrs))},
      {"arange_float32_fraction", G(ArangeOf(g, attrs))},
      {"arange_float64_negative_step", G(ArangeOf(g, attrs))},
      {"arange_float32_default_step", G(ArangeOf(g, attrs))},
      {"zeros_like_float32", G(ZerosLike(in.at("x")))},
      {"ones_like_int64", G(OnesLike(in.at("x")))},
      {"ones_like_bool", G(OnesLike(in.at("x")))},
      // ops/gelu.cc, both forms (the "approximate" attribute, as torch's)
      {"gelu_none_wide", G(GeluOf(in, attrs))},
      {"gelu_none_near_switch", G(GeluOf(in, attrs))},
      {"gelu_none_float64", G(GeluOf(in, attrs))},
      {"gelu_tanh_wide", G(GeluOf(in, attrs))},
      {"gelu_tanh_near_switch", G(GeluOf(in, attrs))},
      {"gelu_tanh_float64", G(GeluOf(in, attrs))},
      // ops/sampling.cc
      {"argmax_rows", G(ArgMax(in.at("x"), attrs["axis"]))},
      {"argmax_axis0", G(ArgMax(in.at("x"), attrs["axis"]))},
      {"argmax_middle_axis", G(ArgMax(in.at("x"), attrs["axis"]))},
      {"argmax_ties_int64", G(ArgMax(in.at("x"), attrs["axis"]))},
      {"argmax_nan", G(ArgMax(in.at("x"), attrs["axis"]))},
      {"topk_values_rows", G(TopK(in.at("x"), attrs["k"], attrs["axis"]).values)},
      {"topk_indices_rows", G(TopK(in.at("x"), attrs["k"], attrs["axis"]).indices)},
      {"topk_values_middle_axis", G(TopK(in.at("x"), attrs["k"], attrs["axis"]).values)},
      {"topk_indices_middle_axis", G(TopK(in.at("x"), attrs["k"], attrs["axis"]).indices)},
      {"topk_values_int32", G(TopK(in.at("x"), attrs["k"], attrs["axis"]).values)},
      {"topk_indices_int32", G(TopK(in.at("x"), attrs["k"], attrs["axis"]).indices)},
      {"topk_values_float64_axis0", G(TopK(in.at("x"), attrs["k"], attrs["axis"]).values)},
      {"topk_indices_float64_axis0", G(TopK(in.at("x"), attrs["k"], attrs["axis"]).indices)},
      {"topk_values_k_zero", G(TopK(in.at("x"), attrs["k"], attrs["axis"]).values)},
      {"topk_indices_k_zero", G(TopK(in.at("x"), attrs["k"], attrs["axis"]).indices)},
  };
  return *cases;
}

Value CrossEntropyOf(const Inputs& in, const Json& a) {
  const std::string r = a["reduction"];
  return CrossEntropy(in.at("logits"), in.at("targets"),
                      {.reduction = r == "none" ? CrossEntropyOptions::kNone
                                                : CrossEntropyOptions::kMean});
}

// tools/goldens/edges.py: NaN, +-inf and signed zeros through every
// elementwise op and reduction, with gradients at the edges of each rule's
// domain.
const std::map<std::string, Golden>& EdgeOps() {
  static const auto* const cases = [] {
    auto* m = new std::map<std::string, Golden>{
        {"neg_specials", G(Neg(in.at("x")))},
        {"exp_specials", G(Exp(in.at("x")))},
        {"log_specials", G(Log(in.at("x")))},
        {"sqrt_specials", G(Sqrt(in.at("x")))},
        {"rsqrt_specials", G(Rsqrt(in.at("x")))},
        {"relu_specials", G(Relu(in.at("x")))},
        {"gelu_specials", G(Gelu(in.at("x")))},
        {"tanh_specials", G(Tanh(in.at("x")))},
        {"sigmoid_specials", G(Sigmoid(in.at("x")))},
        {"sin_specials", G(Sin(in.at("x")))},
        {"cos_specials", G(Cos(in.at("x")))},
        {"scale_specials", G(Scale(in.at("x"), attrs["factor"]))},
        {"add_scalar_specials", G(AddScalar(in.at("x"), attrs["offset"]))},
        {"cast_specials_to_float64", G(Cast(in.at("x"), DTypeAttr(attrs)))},
        {"cast_float64_overflow_to_float32", G(Cast(in.at("x"), DTypeAttr(attrs)))},
        {"add_specials", G(Add(in.at("a"), in.at("b")))},
        {"sub_specials", G(Sub(in.at("a"), in.at("b")))},
        {"mul_specials", G(Mul(in.at("a"), in.at("b")))},
        {"div_specials", G(Div(in.at("a"), in.at("b")))},
        {"maximum_specials", G(Maximum(in.at("a"), in.at("b")))},
        {"maximum_nan_broadcast", G(Maximum(in.at("a"), in.at("b")))},
        {"maximum_infinities_grad", G(Maximum(in.at("a"), in.at("b")))},
        {"minimum_specials", G(Minimum(in.at("a"), in.at("b")))},
        {"minimum_infinities_grad", G(Minimum(in.at("a"), in.at("b")))},
        {"equal_specials", G(Equal(in.at("a"), in.at("b")))},
        {"less_specials", G(Less(in.at("a"), in.at("b")))},
        {"greater_specials", G(Greater(in.at("a"), in.at("b")))},
        {"where_specials", G(Where(in.at("cond"), in.at("a"), in.at("b")))},
        {"softmax_specials_masked", G(MaskedSoftmax(in.at("x"), {.keep = in.at("keep")}))},
        {"log_softmax_specials", G(LogSoftmax(in.at("x")))},
        {"cross_entropy_specials_none", G(CrossEntropyOf(in, attrs))},
        {"cross_entropy_neg_inf_logits", G(CrossEntropyOf(in, attrs))},
        {"layer_norm_specials", G(LayerNormOf(in, attrs))},
        {"linear_1d_input", GT(Linear(in.at("input"), in.at("weight"), in.at("bias")), 1e-5, 2e-6)},
        {"linear_1d_input_no_bias", GT(Linear(in.at("input"), in.at("weight")), 1e-5, 2e-6)},
    };
    for (const char* p : {"0", "1", "2", "3", "half", "minus_half", "minus_1", "minus_2",
                          "minus_1_5", "2_5"}) {
      (*m)[absl::StrCat("pow_", p, "_specials")] = G(Pow(in.at("x"), attrs["exponent"]));
    }
    (*m)["pow_0_specials_float64"] = G(Pow(in.at("x"), attrs["exponent"]));
    for (const char* where : {"rows", "columns", "middle", "non_contiguous", "all"}) {
      (*m)[absl::StrCat("sum_specials_", where)] = G(Reduce(Sum, in, attrs));
      (*m)[absl::StrCat("mean_specials_", where)] = G(Reduce(Mean, in, attrs));
      (*m)[absl::StrCat("max_specials_", where)] = G(Reduce(Max, in, attrs));
    }
    for (const char* where : {"rows", "columns"}) {
      (*m)[absl::StrCat("sum_empty_", where)] = G(Reduce(Sum, in, attrs));
      (*m)[absl::StrCat("mean_empty_", where)] = G(Reduce(Mean, in, attrs));
    }
    return m;
  }();
  return *cases;
}

#undef G
#undef GT

const std::map<std::string, const std::map<std::string, Golden>*>& Files() {
  static const auto* const files = new std::map<std::string, const std::map<std::string, Golden>*>{
      {"basic_ops", &BasicOps()}, {"nn_ops", &NnOps()}, {"edges", &EdgeOps()}};
  return *files;
}

// A built case: the graph's fetches with the golden outputs they match.
struct Built {
  std::vector<Value> fetches;
  std::vector<std::string> outputs;
};

absl::StatusOr<Built> BuildCase(Graph& g, const GoldenCase& c, const Golden& golden) {
  Inputs in;
  for (const auto& [name, t] : c.inputs) in[name] = g.Input(name, t.dtype(), t.shape());
  Value y = golden.build(g, in, c.attrs);
  if (!y.ok()) return y.status();
  Built b{{y}, {"out"}};
  if (!in.count("gy")) return b;
  std::vector<Value> wrt;
  for (const auto& [name, t] : c.outputs) {
    if (!absl::StartsWith(name, "grad_")) continue;
    b.outputs.push_back(name);
    wrt.push_back(in.at(name.substr(5)));
  }
  auto grads = Gradients(y, wrt, in.at("gy"));
  if (!grads.ok()) return grads.status();
  for (const Value& v : *grads) {
    if (!v.ok()) return absl::InternalError("autodiff gave no gradient for a golden input");
    b.fetches.push_back(v);
  }
  return b;
}

struct CaseName {
  std::string file, name;
};

void PrintTo(const CaseName& c, std::ostream* os) { *os << c.file << "/" << c.name; }

std::vector<CaseName> AllCases() {
  std::vector<CaseName> all;
  for (const auto& [file, cases] : Files()) {
    for (const auto& [name, golden] : *cases) all.push_back({file, name});
  }
  return all;
}

class GoldenOpsTest : public ::testing::TestWithParam<CaseName> {};

TEST_P(GoldenOpsTest, MatchesPyTorch) {
  const auto& [file, name] = GetParam();
  const Golden& golden = Files().at(file)->at(name);
  ASSERT_OK_AND_ASSIGN(GoldenCase c, LoadGolden(file, name));
  Graph g;
  ASSERT_OK_AND_ASSIGN(Built b, BuildCase(g, c, golden));
  Executor exec(g);
  ASSERT_OK_AND_ASSIGN(auto plan, exec.Compile(b.fetches));
  // Feed only what the plan reads: zeros_like reads no values.
  Feeds feeds;
  for (NodeId id : plan->info().inputs) {
    feeds.push_back({g.value(id), c.inputs.at(g.node(id).name)});
  }
  ASSERT_OK_AND_ASSIGN(auto out, exec.Run(*plan, feeds));
  for (size_t i = 0; i < out.size(); ++i) {
    const Tensor& want = c.outputs.at(b.outputs[i]);
    const std::string what = absl::StrCat(file, "/", name, " ", b.outputs[i]);
    EXPECT_EQ(out[i].dtype(), want.dtype()) << what;
    EXPECT_EQ(out[i].shape(), want.shape()) << what;
    const DType d = want.dtype();
    const double rtol = d == DType::kFloat32 ? golden.rtol : d == DType::kFloat64 ? 1e-12 : 0;
    const double atol = d == DType::kFloat32 ? golden.atol : d == DType::kFloat64 ? 1e-13 : 0;
    ExpectAllClose(out[i], AsDoubles(want), rtol, atol, what);
  }
}

INSTANTIATE_TEST_SUITE_P(Goldens, GoldenOpsTest, ::testing::ValuesIn(AllCases()),
                         [](const auto& info) { return info.param.file + "_" + info.param.name; });

// The generators and the tables above name the same cases.
TEST(GoldenOps, EveryCaseHasABuilderAndEveryBuilderACase) {
  for (const auto& [file, cases] : Files()) {
    ASSERT_OK_AND_ASSIGN(auto names, GoldenCaseNames(file));
    const std::set<std::string> in_file(names.begin(), names.end());
    for (const std::string& n : in_file) {
      EXPECT_TRUE(cases->count(n)) << file << ".json case " << n << " has no builder";
    }
    for (const auto& [n, golden] : *cases) {
      EXPECT_TRUE(in_file.count(n)) << "builder " << n << " has no case in " << file << ".json";
    }
  }
}

// Every op of the families the goldens cover appears in some golden graph
// (forward or backward).
TEST(GoldenOps, EveryOpHasAGolden) {
  std::set<std::string> covered;
  for (const CaseName& cn : AllCases()) {
    ASSERT_OK_AND_ASSIGN(GoldenCase c, LoadGolden(cn.file, cn.name));
    Graph g;
    ASSERT_OK(BuildCase(g, c, Files().at(cn.file)->at(cn.name)).status());
    for (NodeId id = 0; id < g.num_nodes(); ++id) {
      if (g.node(id).kind == NodeKind::kOp) covered.insert(std::string(g.node(id).op->name));
    }
  }
  for (auto family : {UnaryOps, BinaryOps, ReduceOps, ShapeOps, MatMulOps, LayerNormOps,
                      GatherOps, SelectOps, FillOps, SoftmaxOps, LossOps}) {
    for (const OpDef* op : family()) {
      EXPECT_TRUE(covered.count(std::string(op->name))) << "op " << op->name << " has no golden";
    }
  }
}

}  // namespace
}  // namespace dagrad::testing
