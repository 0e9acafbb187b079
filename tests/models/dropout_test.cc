// Dropout: the Philox4x32-10 generator against Random123's known-answer
// vectors and an independent implementation, golden masks element by
// element, statistics on a large tensor, reproducibility, eval mode, the
// gradient's mask and errors (its op case is in dropout_cases.cc).

#include <array>
#include <cmath>
#include <cstdint>

#include "engine/philox.h"
#include "models/nn/attention.h"
#include "models/toy/transformer.h"
#include "ops/autodiff/autodiff.h"
#include "ops/dropout.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

// Philox4x32-10 written independently of engine/philox.h, after Random123's
// philox.h: a round maps (c0, c1, c2, c3) with key (k0, k1) to
// (hi(M1 c2) ^ c1 ^ k0, lo(M1 c2), hi(M0 c0) ^ c3 ^ k1, lo(M0 c0)), and the
// key is bumped by the Weyl constants between rounds.
using Block = std::array<uint32_t, 4>;
Block ReferencePhilox(Block c, uint32_t k0, uint32_t k1) {
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = 0xD2511F53ull * c[0];
    const uint64_t p1 = 0xCD9E8D57ull * c[2];
    c = {static_cast<uint32_t>(p1 >> 32) ^ c[1] ^ k0, static_cast<uint32_t>(p1),
         static_cast<uint32_t>(p0 >> 32) ^ c[3] ^ k1, static_cast<uint32_t>(p0)};
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return c;
}

Block Dagrad(Block c, uint32_t k0, uint32_t k1) {
  const PhiloxBlock r = Philox4x32_10({{c[0], c[1], c[2], c[3]}}, k0, k1);
  return {r.v[0], r.v[1], r.v[2], r.v[3]};
}

// Random123's kat_vectors for philox4x32 with 10 rounds.
TEST(Philox, MatchesRandom123KnownAnswers) {
  struct Kat {
    Block counter;
    uint32_t k0, k1;
    Block expected;
  };
  const Kat kats[] = {
      {{0, 0, 0, 0}, 0, 0, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
      {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
       0xffffffff,
       0xffffffff,
       {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
      {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
       0xa4093822,
       0x299f31d0,
       {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
  };
  for (const Kat& k : kats) {
    EXPECT_EQ(Dagrad(k.counter, k.k0, k.k1), k.expected);
    EXPECT_EQ(ReferencePhilox(k.counter, k.k0, k.k1), k.expected);
  }
}

// RandomStream's layout: key = seed, counter = (i / 4 as two words, stream,
// step), element i takes word i % 4.
TEST(Philox, RandomStreamLayout) {
  const uint64_t seed = 0x0123456789abcdefull;
  const RandomStream rs{seed, 17, 5};
  for (uint64_t i : {0ull, 1ull, 3ull, 4ull, 42ull, (1ull << 34) + 6}) {
    const Block b = ReferencePhilox(
        {static_cast<uint32_t>(i / 4), static_cast<uint32_t>(i / 4 >> 32), 17, 5},
        static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
    EXPECT_EQ(rs.Bits(i), b[i % 4]) << i;
  }
  EXPECT_EQ(UniformFromBits(0xffffffffu), 16777215.0f / 16777216.0f);
  EXPECT_EQ(UniformFromBits(0x000000ffu), 0.0f);
}

// Dropout's output element by element from the documented layout, with the
// reference generator: a partial last group of four, both key words, a step
// and a stream (the node's id).
TEST(Dropout, GoldenElementsFromReferencePhilox) {
  const uint64_t seed = 0xfedcba9876543210ull;
  const double p = 0.37;
  for (bool in_place : {false, true}) {
    Graph g;
    Value x = g.Input("x", DType::kFloat32, {2, 5});
    Value y = Dropout(in_place ? AddScalar(x, 0.0) : x, p);
    const Tensor xv = Random(DType::kFloat32, {2, 5}, 9, 0.5, 1.5);
    Executor exec(g, {.seed = seed});
    ASSERT_OK_AND_ASSIGN(auto plan, exec.Compile({y}));
    EXPECT_EQ(plan->info().num_in_place, in_place ? 1 : 0);
    ASSERT_OK_AND_ASSIGN(auto out, exec.Run(*plan, {{x, xv}}, {.training = true, .step = 11}));
    const float scale = 1.0f / (1.0f - static_cast<float>(p));
    int dropped = 0;
    for (int64_t i = 0; i < 10; ++i) {
      const Block b =
          ReferencePhilox({static_cast<uint32_t>(i / 4), 0, static_cast<uint32_t>(y.id()), 11},
                          static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
      const double u = (b[i % 4] >> 8) / 16777216.0;
      const float want = u >= p ? xv.data<float>()[i] * scale : 0.0f;
      dropped += u < p;
      EXPECT_EQ(out[0].data<float>()[i], want) << "element " << i;
    }
    EXPECT_GT(dropped, 0);  // the check above saw both outcomes
    EXPECT_LT(dropped, 10);
  }
}

TEST(Dropout, StatisticsOnALargeTensor) {
  const int64_t n = 1 << 18;
  for (double p : {0.1, 0.5, 0.8}) {
    Graph g;
    Value x = g.Input("x", DType::kFloat32, {n});
    Value y = Dropout(x, p);
    const Tensor xv = Random(DType::kFloat32, {n}, 3, 0.5, 1.5);
    ASSERT_OK_AND_ASSIGN(auto out, RunOnce(g, {y}, {{x, xv}}, {.training = true, .step = 1}));
    const float scale = 1.0f / (1.0f - static_cast<float>(p));
    int64_t dropped = 0, exact = 0;
    double sum_x = 0, sum_y = 0;
    for (int64_t i = 0; i < n; ++i) {
      const float xi = xv.data<float>()[i], yi = out[0].data<float>()[i];
      sum_x += xi;
      sum_y += yi;
      if (yi == 0.0f) {
        ++dropped;
      } else {
        exact += yi == xi * scale;
      }
    }
    // The dropped fraction has standard deviation sqrt(p (1 - p) / n) < 0.001.
    EXPECT_NEAR(static_cast<double>(dropped) / n, p, 0.006) << "p = " << p;
    EXPECT_NEAR(sum_y / sum_x, 1.0, 0.02) << "mean preserved, p = " << p;
    EXPECT_EQ(exact, n - dropped) << "kept values are x / (1 - p) exactly, p = " << p;
  }
}

// Masks as 0/1 vectors, for comparing runs.
std::vector<bool> MaskOf(const Tensor& t) {
  std::vector<bool> m;
  for (int64_t i = 0; i < t.num_elements(); ++i) m.push_back(t.data<float>()[i] != 0.0f);
  return m;
}

TEST(Dropout, SameSeedStepAndNodeGiveTheSameMask) {
  Graph g;
  Value x = g.Input("x", DType::kFloat32, {4096});
  Value y = Dropout(x, 0.5);
  const Tensor xv = Random(DType::kFloat32, {4096}, 4, 0.5, 1.5);
  auto run = [&](uint64_t seed, uint64_t step) {
    Executor exec(g, {.seed = seed});
    auto plan = exec.Compile({y});
    EXPECT_TRUE(plan.ok());
    auto out = exec.Run(**plan, {{x, xv}}, {.training = true, .step = step});
    EXPECT_TRUE(out.ok()) << out.status();
    return MaskOf((*out)[0]);
  };
  const std::vector<bool> base = run(7, 3);
  EXPECT_EQ(run(7, 3), base);  // another executor, same key: the same mask
  auto differing = [&](const std::vector<bool>& other) {
    int64_t d = 0;
    for (size_t i = 0; i < base.size(); ++i) d += base[i] != other[i];
    return static_cast<double>(d) / base.size();
  };
  // Independent masks with p = 0.5 differ in about half of the positions.
  EXPECT_NEAR(differing(run(7, 4)), 0.5, 0.05) << "another step";
  EXPECT_NEAR(differing(run(8, 3)), 0.5, 0.05) << "another seed";
  // Another node of the same graph (another stream) draws another mask.
  Value y2 = Dropout(x, 0.5);
  ASSERT_OK_AND_ASSIGN(auto out, RunOnce(g, {y2}, {{x, xv}}, {.training = true, .step = 3}));
  EXPECT_NE(MaskOf(out[0]), base);
}

TEST(Dropout, EvalModeAndZeroProbabilityAreTheIdentity) {
  Graph g;
  Value x = g.Input("x", DType::kFloat64, {3, 50});
  const Tensor xv = Random(DType::kFloat64, {3, 50}, 5);
  ASSERT_OK_AND_ASSIGN(auto eval, RunOnce(g, {Dropout(x, 0.9)}, {{x, xv}}));
  ASSERT_OK_AND_ASSIGN(auto p0, RunOnce(g, {Dropout(x, 0.0)}, {{x, xv}}, {.training = true}));
  EXPECT_EQ(eval[0].ToVector<double>(), xv.ToVector<double>());
  EXPECT_EQ(p0[0].ToVector<double>(), xv.ToVector<double>());
}

// The gradient of sum(dropout(x) * w) is w * mask / (1 - p): the backward
// dropout recomputes the forward's mask from the forward node's stream.
TEST(Dropout, GradientAppliesTheForwardMask) {
  Graph g;
  const int64_t n = 1000;
  const double p = 0.3;
  Value x = g.Input("x", DType::kFloat32, {n});
  Value w = g.Input("w", DType::kFloat32, {n});
  Value y = Dropout(x, p);
  ASSERT_OK_AND_ASSIGN(auto grads, Gradients(Sum(Mul(y, w)), {x}));
  const Node& backward = grads[0].node();
  ASSERT_EQ(backward.op->name, "dropout");
  EXPECT_EQ(backward.attrs.GetInt("stream", -1), y.id());
  EXPECT_EQ(backward.attrs.GetFloat("p"), p);

  const Tensor xv = Random(DType::kFloat32, {n}, 6, 0.5, 1.5);
  const Tensor wv = Random(DType::kFloat32, {n}, 7, 0.5, 1.5);
  ASSERT_OK_AND_ASSIGN(auto out, RunOnce(g, {y, grads[0]}, {{x, xv}, {w, wv}},
                                         {.training = true, .step = 9}));
  const float scale = 1.0f / (1.0f - static_cast<float>(p));
  int64_t kept = 0;
  for (int64_t i = 0; i < n; ++i) {
    const bool keep = out[0].data<float>()[i] != 0.0f;
    kept += keep;
    EXPECT_EQ(out[1].data<float>()[i], keep ? wv.data<float>()[i] * scale : 0.0f) << i;
  }
  EXPECT_GT(kept, 0);
  EXPECT_LT(kept, n);
}

// What an element of each kind becomes, written out by hand. A dropped one
// is x * 0, as in torch.nn.functional.dropout (checked with torch 1.13,
// which computes input * mask * scale): -0.0 for a negative x, +0.0 for a
// positive one, NaN for NaN and for either infinity. A kept one is x * 2
// (p = 0.5): NaN and the infinities stay as they are.
float Expected(float x, bool keep) {
  if (keep) return x * 2.0f;
  if (std::isnan(x) || std::isinf(x)) return NAN;
  return x < 0 ? -0.0f : 0.0f;
}

// SameFloat: both NaN, or equal with the same sign (so -0.0 != +0.0).
bool SameFloat(float a, float b) {
  return (std::isnan(a) && std::isnan(b)) || (a == b && std::signbit(a) == std::signbit(b));
}

// Signs and NaNs of dropped elements, forward and backward. The CUDA
// kernel shares this rule (ops/math/dropout_math.h), and the cross-check
// compares the two backends bit for bit.
TEST(Dropout, DroppedElementsAreXTimesZero) {
  const uint64_t seed = 0x5eedull;
  const std::vector<float> kinds = {-1.5f, 2.0f, NAN, INFINITY, -INFINITY};
  const int64_t k = static_cast<int64_t>(kinds.size()), n = 40 * k;
  std::vector<float> xs(n), ws(n);
  for (int64_t i = 0; i < n; ++i) {
    xs[i] = kinds[i % k];
    ws[i] = kinds[i / k % k];  // every pairing of x and w
  }
  Graph g;
  Value x = g.Input("x", DType::kFloat32, {n});
  Value w = g.Input("w", DType::kFloat32, {n});
  Value y = Dropout(x, 0.5);
  ASSERT_OK_AND_ASSIGN(auto grads, Gradients(Sum(Mul(y, w)), {x}));
  Executor exec(g, {.seed = seed});
  ASSERT_OK_AND_ASSIGN(auto plan, exec.Compile({y, grads[0]}));
  ASSERT_OK_AND_ASSIGN(auto out, exec.Run(*plan, {{x, T<float>({n}, xs)}, {w, T<float>({n}, ws)}},
                                          {.training = true, .step = 2}));
  std::vector<int> dropped(k, 0);
  for (int64_t i = 0; i < n; ++i) {
    const Block b =
        ReferencePhilox({static_cast<uint32_t>(i / 4), 0, static_cast<uint32_t>(y.id()), 2},
                        static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
    const bool keep = (b[i % 4] >> 8) / 16777216.0 >= 0.5;
    dropped[i % k] += !keep;
    EXPECT_PRED2(SameFloat, out[0].data<float>()[i], Expected(xs[i], keep))
        << "forward, x = " << xs[i] << ", kept " << keep << ", element " << i;
    // dL/dx = dropout(w) with the forward's mask.
    EXPECT_PRED2(SameFloat, out[1].data<float>()[i], Expected(ws[i], keep))
        << "backward, w = " << ws[i] << ", kept " << keep << ", element " << i;
  }
  for (int64_t j = 0; j < k; ++j) {  // both outcomes seen for every kind of x
    EXPECT_GT(dropped[j], 0) << kinds[j];
    EXPECT_LT(dropped[j], n / k) << kinds[j];
  }
}

TEST(Dropout, ProbabilityOutOfRangeIsABuildError) {
  Graph g;
  Value x = g.Input("x", DType::kFloat32, {3});
  EXPECT_STATUS(Dropout(x, 1.0).status(), absl::StatusCode::kInvalidArgument,
                "dropout 'dropout': dropout must be in [0, 1), got p = 1");
  EXPECT_STATUS(Dropout(x, -0.25).status(), absl::StatusCode::kInvalidArgument, "got p = -0.25");
  EXPECT_STATUS(Dropout(x, std::nan("")).status(), absl::StatusCode::kInvalidArgument,
                "got p = nan");
  EXPECT_STATUS(Dropout(g.Input("i", DType::kInt32, {3}), 0.5).status(),
                absl::StatusCode::kInvalidArgument, "input must be float32 or float64, got int32");
}

// Near 1 the 24-bit keep test and float32's scale would lose mass (about
// half at p = 1 - 1e-7): such p are build errors, for Dropout and for the
// modules that take a dropout probability.
TEST(Dropout, ProbabilityTooCloseToOneIsABuildError) {
  Graph g;
  Value x = g.Input("x", DType::kFloat32, {3});
  EXPECT_STATUS(Dropout(x, 1.0 - 1e-7).status(), absl::StatusCode::kInvalidArgument,
                "dropout must be at most 1 - 2^-10 = 0.9990234375, got p = 0.9999999");
  EXPECT_STATUS(Dropout(x, 0.9991).status(), absl::StatusCode::kInvalidArgument,
                "got p = 0.9991");
  EXPECT_TRUE(Dropout(x, kMaxDropout).ok());
  EXPECT_STATUS(nn::MultiheadAttention::Create(
                    g, "mha", {.embed_dim = 4, .num_heads = 2, .dropout = 0.9999})
                    .status(),
                absl::StatusCode::kInvalidArgument, "dropout must be at most 1 - 2^-10");
  models::ToyConfig config;
  config.dropout = 0.9999;
  EXPECT_STATUS(config.Validate(), absl::StatusCode::kInvalidArgument,
                "model config: dropout must be at most 1 - 2^-10");
}

// What kMaxDropout promises, from the bit layout in dropout.h alone: for
// every p up to it, keep probability times float32 scale is within 1e-4 of
// 1 (p on a grid over [0.99, kMaxDropout], off the 2^-24 lattice).
TEST(Dropout, KeptMassIsWithin1e4OfOneUpToTheLargestP) {
  for (int i = 0; i <= 1000; ++i) {
    const double p = 0.99 + (kMaxDropout - 0.99) * i / 1000.0;
    const double keep = (16777216.0 - std::ceil(p * 16777216.0)) / 16777216.0;
    const float scale = 1.0f / (1.0f - static_cast<float>(p));
    EXPECT_NEAR(keep * scale, 1.0, 1e-4) << "p = " << p;
  }
}

}  // namespace
}  // namespace dagrad::testing
