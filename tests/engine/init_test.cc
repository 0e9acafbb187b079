// Random tensors and parameter re-initialisation (engine/random_tensor.h,
// Initializer::TruncatedNormal): large draws against their distribution's
// moments, computed here from the textbook formulas (a truncated normal's by
// its density and CDF), within a few standard errors; determinism per seed;
// every error path; InitParameters by name.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numbers>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/executor.h"
#include "engine/random_tensor.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

constexpr int64_t kDraws = 200000;

struct Moments {
  double mean = 0, var = 0, m4 = 0, min = 0, max = 0;
};

Moments Measure(const Tensor& t) {
  const std::vector<double> x = AsDoubles(t);
  Moments m;
  for (double v : x) m.mean += v;
  m.mean /= x.size();
  for (double v : x) {
    const double d2 = (v - m.mean) * (v - m.mean);
    m.var += d2;
    m.m4 += d2 * d2;
  }
  m.var /= x.size() - 1;
  m.m4 /= x.size();
  m.min = *std::min_element(x.begin(), x.end());
  m.max = *std::max_element(x.begin(), x.end());
  return m;
}

// ExpectMoments checks the sample mean and variance against the
// distribution's within 5 standard errors (the variance's from the sample's
// fourth central moment: sqrt((m4 - var²) / n)).
void ExpectMoments(const Tensor& t, double mean, double var, const std::string& what) {
  const Moments m = Measure(t);
  const double n = t.num_elements();
  EXPECT_NEAR(m.mean, mean, 5 * std::sqrt(var / n)) << what;
  EXPECT_NEAR(m.var, var, 5 * std::sqrt((m.m4 - m.var * m.var) / n)) << what;
}

double Pdf(double x) { return std::exp(-x * x / 2) / std::sqrt(2 * std::numbers::pi); }
double Cdf(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }

// The truncated normal's mean and variance (Johnson, Kotz and Balakrishnan),
// a = (low - mean) / std, b = (high - mean) / std, Z = Φ(b) - Φ(a).
void TruncatedMoments(double mu, double sigma, double low, double high, double* mean,
                      double* var) {
  const double a = (low - mu) / sigma, b = (high - mu) / sigma;
  const double z = Cdf(b) - Cdf(a), d = (Pdf(a) - Pdf(b)) / z;
  *mean = mu + sigma * d;
  *var = sigma * sigma * (1 + (a * Pdf(a) - b * Pdf(b)) / z - d * d);
}

TEST(RandomTensor, NormalMatchesItsMoments) {
  ASSERT_OK_AND_ASSIGN(Tensor t, RandomNormal(DType::kFloat64, {kDraws}, 1.5, 2.0, 3));
  ExpectMoments(t, 1.5, 4.0, "N(1.5, 2)");
  ASSERT_OK_AND_ASSIGN(Tensor f, RandomNormal(DType::kFloat32, {400, 500}, -1.0, 0.5, 3));
  EXPECT_EQ(f.shape(), Shape({400, 500}));
  ExpectMoments(f, -1.0, 0.25, "float32 N(-1, 0.5)");
}

TEST(RandomTensor, UniformMatchesItsMomentsAndBounds) {
  ASSERT_OK_AND_ASSIGN(Tensor t, RandomUniform(DType::kFloat64, {kDraws}, -1.0, 3.0, 5));
  ExpectMoments(t, 1.0, 16.0 / 12, "U[-1, 3)");
  const Moments m = Measure(t);
  EXPECT_GE(m.min, -1.0);
  EXPECT_LT(m.max, 3.0);
  EXPECT_LT(m.min, -1.0 + 1e-3);  // the whole range is reached
  EXPECT_GT(m.max, 3.0 - 1e-3);
}

TEST(RandomTensor, TruncatedNormalMatchesTheFormula) {
  struct Case {
    double mu, sigma, low, high;
  };
  // trunc_normal_'s defaults; an asymmetric window; both tails far out
  // (1 - Φ(6) is 1e-9: the upper one needs the mirrored CDF).
  for (const Case& c : {Case{0, 1, -2, 2}, Case{0.5, 2, -1, 4}, Case{0, 1, 3, 5},
                        Case{0, 1, 6, 7}, Case{0, 1, -9, -8}, Case{0, 0.02, -0.04, 0.04}}) {
    const std::string what = absl::StrCat("N(", c.mu, ", ", c.sigma, ") on [", c.low, ", ",
                                          c.high, "]");
    ASSERT_OK_AND_ASSIGN(Tensor t, RandomTruncatedNormal(DType::kFloat64, {kDraws}, c.mu,
                                                         c.sigma, c.low, c.high, 11));
    double mean, var;
    TruncatedMoments(c.mu, c.sigma, c.low, c.high, &mean, &var);
    ExpectMoments(t, mean, var, what);
    const Moments m = Measure(t);
    EXPECT_GE(m.min, c.low) << what;
    EXPECT_LE(m.max, c.high) << what;
  }
}

TEST(RandomTensor, LowPrecisionDtypesKeepTheBounds) {
  for (DType dtype : {DType::kBFloat16, DType::kFloat16, DType::kFloat32}) {
    ASSERT_OK_AND_ASSIGN(Tensor t,
                         RandomTruncatedNormal(dtype, {kDraws}, 0.0, 1.0, -2.0, 2.0, 1));
    EXPECT_EQ(t.dtype(), dtype);
    double mean, var;
    TruncatedMoments(0, 1, -2, 2, &mean, &var);
    const Moments m = Measure(t);
    EXPECT_GE(m.min, -2.0);
    EXPECT_LE(m.max, 2.0);
    // Rounding to bfloat16 (8 significant bits) moves a value by 2^-9 of it at most.
    EXPECT_NEAR(m.var, var, 0.02) << DTypeName(dtype);
  }
}

// A draw near high rounded up to it in bfloat16 (1 in 512 of U[0, 1)) and
// float16, and one near a low that bfloat16 cannot hold rounded below it
// (U[-0.1, 0.1) gave -0.10009765625): [low, high) holds in every dtype, as
// torch's uniform_ keeps it, and the value below high is still reached,
// for bounds of either sign.
TEST(RandomTensor, UniformNeverDrawsHighInAnyDtype) {
  struct Case {
    double low, high, largest_below;  // in bfloat16
  };
  for (DType dtype : {DType::kBFloat16, DType::kFloat16, DType::kFloat32}) {
    for (const Case& c : {Case{0, 1, 0.99609375}, Case{-0.5, 0.5, 0.498046875},
                          Case{-2, -1, -1.0078125}}) {
      const std::string what = absl::StrCat(DTypeName(dtype), " U[", c.low, ", ", c.high, ")");
      ASSERT_OK_AND_ASSIGN(Tensor t, RandomUniform(dtype, {kDraws}, c.low, c.high, 7));
      const Moments m = Measure(t);
      EXPECT_GE(m.min, c.low) << what;
      EXPECT_LT(m.max, c.high) << what;
      if (dtype == DType::kBFloat16) EXPECT_EQ(m.max, c.largest_below) << what;
    }
    for (auto [low, high] : {std::pair{-0.1, 0.1}, std::pair{-0.3, -0.1}}) {
      ASSERT_OK_AND_ASSIGN(Tensor t, RandomUniform(dtype, {kDraws}, low, high, 7));
      const Moments m = Measure(t);
      EXPECT_GE(m.min, low) << DTypeName(dtype) << " U[" << low << ", " << high << ")";
      EXPECT_LT(m.max, high) << DTypeName(dtype) << " U[" << low << ", " << high << ")";
    }
    ASSERT_OK_AND_ASSIGN(Tensor t, RandomTruncatedNormal(dtype, {kDraws}, 0, 1, -0.1, 0.1, 3));
    EXPECT_GE(Measure(t).min, -0.1) << DTypeName(dtype) << " truncated on [-0.1, 0.1]";
    EXPECT_LE(Measure(t).max, 0.1) << DTypeName(dtype) << " truncated on [-0.1, 0.1]";
  }
  ASSERT_OK_AND_ASSIGN(Tensor w, Tensor::Zeros(DType::kBFloat16, {256, 256}));
  ASSERT_OK(Initializer::XavierUniform().Fill(3, "w", w));
  EXPECT_LT(Measure(w).max, std::sqrt(6.0 / 512));
  EXPECT_GE(Measure(w).min, -std::sqrt(6.0 / 512));
}

bool SameBytes(const Tensor& a, const Tensor& b) {
  return a.nbytes() == b.nbytes() && std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

TEST(RandomTensor, DeterministicPerSeedAndDifferentAcrossSeeds) {
  ASSERT_OK_AND_ASSIGN(Tensor a, RandomNormal(DType::kFloat32, {64}, 0, 1, 42));
  ASSERT_OK_AND_ASSIGN(Tensor b, RandomNormal(DType::kFloat32, {64}, 0, 1, 42));
  ASSERT_OK_AND_ASSIGN(Tensor c, RandomNormal(DType::kFloat32, {64}, 0, 1, 43));
  EXPECT_TRUE(SameBytes(a, b));
  EXPECT_FALSE(SameBytes(a, c));
  ASSERT_OK_AND_ASSIGN(Tensor u1, RandomUniform(DType::kFloat64, {64}, 0, 1, 7));
  ASSERT_OK_AND_ASSIGN(Tensor u2, RandomUniform(DType::kFloat64, {64}, 0, 1, 7));
  ASSERT_OK_AND_ASSIGN(Tensor u3, RandomUniform(DType::kFloat64, {64}, 0, 1, 8));
  EXPECT_TRUE(SameBytes(u1, u2));
  EXPECT_FALSE(SameBytes(u1, u3));
  ASSERT_OK_AND_ASSIGN(Tensor t1, RandomTruncatedNormal(DType::kFloat64, {64}, 0, 1, -1, 1, 7));
  ASSERT_OK_AND_ASSIGN(Tensor t2, RandomTruncatedNormal(DType::kFloat64, {64}, 0, 1, -1, 1, 7));
  ASSERT_OK_AND_ASSIGN(Tensor t3, RandomTruncatedNormal(DType::kFloat64, {64}, 0, 1, -1, 1, 9));
  EXPECT_TRUE(SameBytes(t1, t2));
  EXPECT_FALSE(SameBytes(t1, t3));
}

TEST(RandomTensor, ErrorsNameTheArgument) {
  const auto kInvalid = absl::StatusCode::kInvalidArgument;
  const double nan = std::nan("");
  EXPECT_STATUS(RandomNormal(DType::kInt32, {2}, 0, 1, 0).status(), kInvalid, "dtype");
  EXPECT_STATUS(RandomNormal(DType::kFloat32, {-2}, 0, 1, 0).status(), kInvalid, "shape");
  EXPECT_STATUS(RandomNormal(DType::kFloat32, {2}, nan, 1, 0).status(), kInvalid, "mean");
  EXPECT_STATUS(RandomNormal(DType::kFloat32, {2}, 0, -1, 0).status(), kInvalid, "std");
  EXPECT_STATUS(RandomNormal(DType::kFloat32, {2}, 0, INFINITY, 0).status(), kInvalid, "std");
  EXPECT_STATUS(RandomUniform(DType::kBool, {2}, 0, 1, 0).status(), kInvalid, "dtype");
  EXPECT_STATUS(RandomUniform(DType::kFloat32, {2}, 1, 1, 0).status(), kInvalid, "low < high");
  EXPECT_STATUS(RandomUniform(DType::kFloat32, {2}, 0, INFINITY, 0).status(), kInvalid,
                "low < high");
  // Bounds a dtype cannot hold, or a width past a double's range: every
  // draw clamped to the dtype's largest value (even below low), or to 1e308.
  EXPECT_STATUS(RandomUniform(DType::kFloat64, {4}, -1e308, 1e308, 1).status(), kInvalid,
                "no wider than a double holds");
  EXPECT_STATUS(RandomUniform(DType::kFloat32, {4}, 1e39, 2e39, 1).status(), kInvalid,
                "must lie within float32's finite range, +-3.40282e+38");
  EXPECT_STATUS(RandomUniform(DType::kFloat16, {4}, 0, 1e5, 1).status(), kInvalid,
                "float16's finite range, +-65504");
  EXPECT_TRUE(RandomUniform(DType::kFloat32, {4}, -3e38, 3e38, 1).ok());
  EXPECT_STATUS(RandomTruncatedNormal(DType::kInt64, {2}, 0, 1, -2, 2, 0).status(), kInvalid,
                "dtype");
  EXPECT_STATUS(RandomTruncatedNormal(DType::kFloat32, {2}, 0, 0, -2, 2, 0).status(),
                kInvalid, "std");
  EXPECT_STATUS(RandomTruncatedNormal(DType::kFloat32, {2}, 0, 1, 2, -2, 0).status(),
                kInvalid, "low < high");
  EXPECT_STATUS(RandomTruncatedNormal(DType::kFloat32, {2}, 0, 1, 100, 101, 0).status(),
                kInvalid, "no probability mass");
  EXPECT_STATUS(RandomTruncatedNormal(DType::kFloat32, {2}, 0, 1, -101, -100, 0).status(),
                kInvalid, "no probability mass");
  EXPECT_STATUS(RandomTruncatedNormal(DType::kFloat32, {2}, nan, 1, -2, 2, 0).status(),
                kInvalid, "mean");
}

TEST(TruncatedNormalInitializer, ValidatesAndFillsParameters) {
  EXPECT_STATUS(Initializer::TruncatedNormal(0, -1).Validate({2}, DType::kFloat32),
                absl::StatusCode::kInvalidArgument, "stddev > 0");
  EXPECT_STATUS(Initializer::TruncatedNormal(0, 1, 100, 101).Validate({2}, DType::kFloat32),
                absl::StatusCode::kInvalidArgument, "no probability mass");
  EXPECT_STATUS(Initializer::TruncatedNormal(0, 1).Validate({2}, DType::kInt32),
                absl::StatusCode::kInvalidArgument, "floating dtype");
  EXPECT_EQ(Initializer::TruncatedNormal(0, 0.5).ToString(), "truncated_normal(0, 0.5, [-2, 2])");
  Graph g;
  Value w = g.Parameter("w", {300, 300}, Initializer::TruncatedNormal(0.0, 0.02, -0.04, 0.04));
  ASSERT_OK(w.status());
  Value bad = g.Parameter("bad", {2}, Initializer::TruncatedNormal(0.0, 1.0, 1.0, 1.0));
  EXPECT_STATUS(bad.status(), absl::StatusCode::kInvalidArgument, "low < high");
  Executor exec(g);
  ASSERT_OK_AND_ASSIGN(Tensor value, exec.Read(w));
  double mean, var;
  TruncatedMoments(0, 0.02, -0.04, 0.04, &mean, &var);
  ExpectMoments(value, mean, var, "parameter w");
  const Moments m = Measure(value);
  EXPECT_GE(m.min, -0.04);
  EXPECT_LE(m.max, 0.04);
}

// torch.nn.init's fan-scaled inits on a (300, 200, 3) weight: fan_in 600,
// fan_out 900; each draw's moments and bounds against the documented std
// (torch.nn.init: xavier_normal_ gain * sqrt(2 / (fan_in + fan_out)),
// kaiming_*_ gain / sqrt(fan), its uniform's bound sqrt(3) * std).
TEST(FanScaledInitializers, DrawWithTorchsVariance) {
  using Fan = Initializer::Fan;
  const double fan_in = 600, fan_out = 900, relu = std::sqrt(2.0);
  struct Case {
    Initializer init;
    double stddev;
    bool uniform;
    const char* name;
  };
  const Case cases[] = {
      {Initializer::XavierUniform(2), 2 * std::sqrt(2 / (fan_in + fan_out)), true,
       "xavier_uniform(gain=2)"},
      {Initializer::XavierNormal(2), 2 * std::sqrt(2 / (fan_in + fan_out)), false,
       "xavier_normal(gain=2)"},
      {Initializer::KaimingUniform(), relu / std::sqrt(fan_in), true,
       "kaiming_uniform(gain=1.41421, fan_in)"},
      {Initializer::KaimingNormal(relu, Fan::kOut), relu / std::sqrt(fan_out), false,
       "kaiming_normal(gain=1.41421, fan_out)"},
      {Initializer::KaimingUniform(Initializer::LeakyReluGain(0.2), Fan::kOut),
       std::sqrt(2 / 1.04) / std::sqrt(fan_out), true, "kaiming_uniform(gain=1.38675, fan_out)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(c.init.ToString(), c.name);
    ASSERT_OK(c.init.Validate({300, 200, 3}, DType::kFloat64));
    ASSERT_OK_AND_ASSIGN(Tensor t, Tensor::Zeros(DType::kFloat64, {300, 200, 3}));
    ASSERT_OK(c.init.Fill(7, "w", t));
    ExpectMoments(t, 0.0, c.stddev * c.stddev, c.name);
    const Moments m = Measure(t);
    if (c.uniform) {  // the whole of (-bound, bound), nothing beyond
      const double bound = std::sqrt(3.0) * c.stddev;
      EXPECT_GE(m.min, -bound * (1 + 1e-12));
      EXPECT_LE(m.max, bound * (1 + 1e-12));
      EXPECT_GT(m.max, bound * 0.999);
    } else {  // a normal's tails reach past its uniform twin's bound
      EXPECT_GT(m.max, 3 * c.stddev);
    }
  }
  EXPECT_STATUS(Initializer::KaimingNormal().Validate({4}, DType::kFloat32),
                absl::StatusCode::kInvalidArgument,
                "kaiming_normal(gain=1.41421, fan_in) needs a tensor of rank >= 2, got shape (4,)");
  EXPECT_STATUS(Initializer::XavierNormal(-1).Validate({4, 4}, DType::kFloat32),
                absl::StatusCode::kInvalidArgument, "the gain must be finite and >= 0, got -1");
  EXPECT_STATUS(Initializer::KaimingUniform().Validate({4, 4}, DType::kInt64),
                absl::StatusCode::kInvalidArgument, "needs a floating dtype");
}

// WithZeroRow: an embedding's padding row, drawn and then zeroed.
TEST(ZeroRowInitializer, ZeroesOneRowOfTheDraw) {
  const Initializer init = Initializer::Normal(0.0, 1.0).WithZeroRow(2);
  EXPECT_EQ(init.ToString(), "normal(0, 1) zero_row=2");
  ASSERT_OK(init.Validate({4, 3}, DType::kFloat32));
  ASSERT_OK_AND_ASSIGN(Tensor t, Tensor::Zeros(DType::kFloat32, {4, 3}));
  ASSERT_OK(init.Fill(1, "w", t));
  ASSERT_OK_AND_ASSIGN(Tensor drawn, Tensor::Zeros(DType::kFloat32, {4, 3}));
  ASSERT_OK(Initializer::Normal(0.0, 1.0).Fill(1, "w", drawn));
  for (int64_t i = 0; i < 12; ++i) {
    EXPECT_EQ(t.data<float>()[i], i / 3 == 2 ? 0.0f : drawn.data<float>()[i]) << i;
  }
  EXPECT_STATUS(init.Validate({2, 3}, DType::kFloat32), absl::StatusCode::kInvalidArgument,
                "the zero row 2 is outside axis 0 of shape (2, 3)");
}

TEST(MatchesName, Globs) {
  EXPECT_TRUE(MatchesName("*c_proj.weight", "h.0.mlp.c_proj.weight"));
  EXPECT_TRUE(MatchesName("*.weight", "fc.weight"));
  EXPECT_FALSE(MatchesName("*.weight", "fc.weight_g"));
  EXPECT_FALSE(MatchesName("*.weight", "weight"));
  EXPECT_TRUE(MatchesName("h.?.ln_1.*", "h.3.ln_1.bias"));
  EXPECT_FALSE(MatchesName("h.?.ln_1.*", "h.10.ln_1.bias"));
  EXPECT_TRUE(MatchesName("*", ""));
  EXPECT_TRUE(MatchesName("a*b*c", "aXbYbZc"));
  EXPECT_FALSE(MatchesName("a*b*c", "aXbYbZ"));
  EXPECT_TRUE(MatchesName("exact", "exact"));
  EXPECT_FALSE(MatchesName("exact", "exactly"));
}

// A small two-layer graph: fc/weight (64, 32), fc/bias (64), out/weight
// (8, 64), out/bias (8).
struct TwoLayers {
  Graph g;
  Value fc_w, fc_b, out_w, out_b;
  TwoLayers() {
    {
      Graph::Scope s(g, "fc");
      fc_w = g.Parameter("weight", {64, 32}, Initializer::XavierUniform());
      fc_b = g.Parameter("bias", {64}, Initializer::Ones());
    }
    Graph::Scope s(g, "out");
    out_w = g.Parameter("weight", {8, 64}, Initializer::XavierUniform());
    out_b = g.Parameter("bias", {8}, Initializer::Ones());
  }
};

std::vector<double> ValuesOf(Executor& exec, Value v) {
  absl::StatusOr<Tensor> t = exec.Read(v);
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? AsDoubles(*t) : std::vector<double>{};
}

TEST(InitParameters, ReinitialisesTheParametersMatched) {
  TwoLayers m;
  Executor exec(m.g);
  const std::vector<double> fc_w = ValuesOf(exec, m.fc_w), out_w = ValuesOf(exec, m.out_w);
  ASSERT_OK_AND_ASSIGN(int n, InitParameters(exec, m.g.Parameters(), "*.bias",
                                             Initializer::Constant(-3.0)));
  EXPECT_EQ(n, 2);
  EXPECT_EQ(ValuesOf(exec, m.fc_b), std::vector<double>(64, -3.0));
  EXPECT_EQ(ValuesOf(exec, m.out_b), std::vector<double>(8, -3.0));
  EXPECT_EQ(ValuesOf(exec, m.fc_w), fc_w);  // not matched: unchanged
  ASSERT_OK_AND_ASSIGN(n, InitParameters(exec, m.g.Parameters(), "out.weight",
                                         Initializer::Constant(0.5)));
  EXPECT_EQ(n, 1);
  EXPECT_EQ(ValuesOf(exec, m.out_w), std::vector<double>(8 * 64, 0.5));
  EXPECT_NE(ValuesOf(exec, m.out_w), out_w);
}

TEST(InitParameters, DrawsAsTheGraphWouldHave) {
  // Re-drawing with an initializer gives what declaring it would have:
  // the same seed and path key the same stream.
  TwoLayers m;
  Executor exec(m.g, {.seed = 5});
  ASSERT_OK(InitParameter(exec, m.fc_w, Initializer::Normal(0.0, 0.02)));
  Graph g2;
  Graph::Scope s(g2, "fc");
  Value w2 = g2.Parameter("weight", {64, 32}, Initializer::Normal(0.0, 0.02));
  Executor exec2(g2, {.seed = 5});
  EXPECT_EQ(ValuesOf(exec, m.fc_w), ValuesOf(exec2, w2));
  ASSERT_OK_AND_ASSIGN(Tensor drawn, exec.Read(m.fc_w));
  ExpectMoments(drawn, 0.0, 0.02 * 0.02, "fc.weight");
}

TEST(InitParameters, ErrorsChangeNothing) {
  TwoLayers m;
  Executor exec(m.g);
  const std::vector<double> fc_b = ValuesOf(exec, m.fc_b), fc_w = ValuesOf(exec, m.fc_w);
  EXPECT_STATUS(InitParameters(exec, m.g.Parameters(), "*.gamma", Initializer::Zeros()).status(),
                absl::StatusCode::kInvalidArgument, "'*.gamma' matches none");
  // Xavier needs rank 2: the biases match first, and the error leaves them.
  EXPECT_STATUS(InitParameters(exec, m.g.Parameters(), "*", Initializer::XavierUniform())
                    .status(),
                absl::StatusCode::kInvalidArgument, "fc/bias");
  EXPECT_EQ(ValuesOf(exec, m.fc_b), fc_b);
  EXPECT_EQ(ValuesOf(exec, m.fc_w), fc_w);  // drawn before the error, not written
  TwoLayers other;
  EXPECT_STATUS(InitParameter(exec, other.fc_w, Initializer::Zeros()),
                absl::StatusCode::kInvalidArgument, "not a variable of this executor");
  EXPECT_STATUS(InitParameters(exec, {m.fc_w, Value()}, "*", Initializer::Zeros()).status(),
                absl::StatusCode::kFailedPrecondition, "");
  ASSERT_OK(InitParameter(exec, m.fc_b, Initializer::Constant(1.5)));
  EXPECT_EQ(ValuesOf(exec, m.fc_b), std::vector<double>(64, 1.5));
}

}  // namespace
}  // namespace dagrad::testing
