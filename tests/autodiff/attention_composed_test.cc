// The fused attention op (ops/attention.h) against the composed subgraph it
// replaces (models/nn/attention.h's AttendHeads: MatMul, MaskedSoftmax,
// Dropout, MatMul, merge), built here by hand with its Dropout on the fused
// node's stream: outputs and every gradient agree to 1e-5 (float32) and
// 1e-12 (float64), under every mask and dropout, so the two also drop the
// same weights. Also: backward passes are bit-identical from run to run
// and thread count to thread count, and a data-parallel slice draws its
// rows' dropout as the whole batch does.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "ops/attention.h"
#include "ops/autodiff/autodiff.h"
#include "ops/cpu/cpu_runtime.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "ops/op_util.h"
#include "ops/reduce.h"
#include "ops/registry.h"
#include "ops/shape_ops.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

// Heads splits x (B, L, H * Dh) into (B, H, L, Dh).
Value Heads(Value x, int64_t H) {
  return Permute(Reshape(x, {x.dim(0), x.dim(1), H, x.dim(2) / H}), {0, 2, 1, 3});
}

// Composed is the subgraph the fused op replaces, its Dropout on `stream`.
Value Composed(Value q, Value k, Value v, const SoftmaxMask& mask, const AttentionOptions& o,
               int64_t stream) {
  Value w = MaskedSoftmax(MatMul(Heads(q, o.heads), Heads(k, o.heads), {.transpose_b = true}),
                          mask, o.scale);
  if (o.dropout > 0) {
    w = BuildOp(*FindOp("dropout"), {w}, Attrs().Float("p", o.dropout).Int("stream", stream));
  }
  Value c = MatMul(w, Heads(v, o.heads));  // (B, H, T, Dh)
  return Reshape(Permute(c, {0, 2, 1, 3}), {q.dim(0), q.dim(1), q.dim(2)});
}

struct Setup {
  std::string name;
  int64_t B, T, S, H, Dh;
  bool keep, lens, bias, causal;
  double dropout;
};
// gtest prints a parameter by its name (else byte by byte, padding too).
void PrintTo(const Setup& s, std::ostream* os) { *os << s.name; }

// FusedAndComposed is a graph computing the fused attention and the
// composed subgraph of one Setup, with the gradients of both.
struct FusedAndComposed {
  Graph g;
  std::vector<Value> fetches;  // fused, composed, fused's grads, composed's
  Feeds feeds;
  size_t wrt = 0;              // gradients per path
};

// Build makes s's graph in dtype d, q and k drawn from [-qk, qk).
void Build(const Setup& s, DType d, double qk, FusedAndComposed& out) {
  Graph& g = out.g;
  const int64_t E = s.H * s.Dh;
  Value q = g.Input("q", d, {s.B, s.T, E});
  Value k = g.Input("k", d, {s.B, s.S, E});
  Value v = g.Input("v", d, {s.B, s.S, E});
  Value keep = g.Input("keep", DType::kBool, {s.B, 1, s.T, s.S});
  Value lens = g.Input("lens", DType::kInt64, {s.B});
  Value bias = g.Input("bias", d, {s.H, s.T, s.S});
  Value r = g.Input("r", d, {s.B, s.T, E});
  const SoftmaxMask mask = {.keep = s.keep ? keep : Value(),
                            .valid_lens = s.lens ? lens : Value(),
                            .bias = s.bias ? bias : Value(),
                            .causal = s.causal,
                            .causal_offset = s.S - s.T};
  const AttentionOptions o = {.heads = s.H, .scale = 1 / std::sqrt(double(s.Dh)),
                              .dropout = s.dropout};
  Value fused = Attention(q, k, v, mask, o);
  Value composed = Composed(q, k, v, mask, o, fused.id());
  out.fetches = {fused, composed};
  std::vector<Value> wrt = {q, k, v};
  if (s.bias) wrt.push_back(bias);
  out.wrt = wrt.size();
  for (Value y : {fused, composed}) {
    auto grads = Gradients(Sum(y * r), wrt);
    ASSERT_OK(grads.status());
    for (const Value& grad : *grads) out.fetches.push_back(grad);
  }
  std::vector<int64_t> lengths(s.B);
  for (int64_t b = 0; b < s.B; ++b) lengths[b] = (s.S * (b + 1)) / s.B - b;
  std::vector<bool> keeps(s.B * s.T * s.S);
  for (size_t i = 0; i < keeps.size(); ++i) keeps[i] = (i * 7 + i / 5) % 4 != 0;
  out.feeds = {{q, Random(d, q.shape(), 1, -qk, qk)},
               {k, Random(d, k.shape(), 2, -qk, qk)},
               {v, Random(d, v.shape(), 3)},
               {keep, T<bool>(keep.shape(), keeps)},
               {lens, T<int64_t>({s.B}, lengths)},
               {bias, Random(d, bias.shape(), 4)},
               {r, Random(d, r.shape(), 5)}};
}

constexpr const char* kGradNames[] = {"dq", "dk", "dv", "dbias"};

void CheckAgainstComposed(const Setup& s, DType d) {
  SCOPED_TRACE(s.name + (d == DType::kFloat32 ? " float32" : " float64"));
  FusedAndComposed c;
  ASSERT_NO_FATAL_FAILURE(Build(s, d, 2, c));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out,
                       RunOnce(c.g, c.fetches, c.feeds, {.training = true, .step = 3}));
  const double tolerance = d == DType::kFloat32 ? 1e-5 : 1e-12;
  EXPECT_LE(MaxRelativeError(out[0], out[1]), tolerance) << "output";
  for (size_t i = 0; i < c.wrt; ++i) {
    EXPECT_LE(MaxRelativeError(out[2 + i], out[2 + c.wrt + i]), tolerance) << kGradNames[i];
  }
}

class FusedAgainstComposed : public ::testing::TestWithParam<Setup> {};

TEST_P(FusedAgainstComposed, Float32) { CheckAgainstComposed(GetParam(), DType::kFloat32); }
TEST_P(FusedAgainstComposed, Float64) { CheckAgainstComposed(GetParam(), DType::kFloat64); }

INSTANTIATE_TEST_SUITE_P(
    Attention, FusedAgainstComposed,
    ::testing::Values(Setup{"plain", 2, 5, 5, 2, 4, false, false, false, false, 0.0},
                      Setup{"causal_cache", 2, 3, 7, 2, 8, false, false, false, true, 0.0},
                      Setup{"all_masks", 3, 6, 9, 2, 4, true, true, true, true, 0.0},
                      Setup{"dropout", 2, 7, 7, 3, 4, false, true, false, true, 0.3},
                      Setup{"dropout_all_masks", 2, 5, 8, 2, 16, true, true, true, true, 0.5},
                      Setup{"blocks", 1, 70, 301, 1, 32, false, true, false, true, 0.2},
                      Setup{"no_keys", 2, 3, 0, 2, 4, true, false, true, false, 0.0}),
    [](const ::testing::TestParamInfo<Setup>& info) { return info.param.name; });

// Logits up to about 1e3 over two key blocks (S > 256): float32's fused dV
// is as close to float64's as the composed subgraph's. It was 500 times
// further when the backward rounded each row's logsumexp m + log l to
// float32, |m| ulps off, and so scaled the row's weights by up to 1 ± |m|
// 2^-24. dQ and dK take D = rowsum(dO ∘ O) from the rounded output, as
// flash attention does, not from P ∘ dP: where a row's weights are nearly
// one-hot and its true dQ nearly 0, they are off by float32's rounding of
// dO·V (about 1e-6 here), which the composed softmax's backward cancels.
TEST(Attention, LargeLogitsOverKeyBlocksKeepFloat32Precision) {
  const dagrad::testing::Setup s = {"large_logits", 1, 4, 257, 1, 8,
                                    false, false, false, false, 0.0};
  std::vector<Tensor> runs[2];
  for (DType d : {DType::kFloat64, DType::kFloat32}) {
    FusedAndComposed c;
    ASSERT_NO_FATAL_FAILURE(Build(s, d, 30, c));
    ASSERT_OK_AND_ASSIGN(runs[d == DType::kFloat32], RunOnce(c.g, c.fetches, c.feeds));
  }
  const std::vector<Tensor>& want = runs[0];
  const std::vector<Tensor>& got = runs[1];
  for (size_t i = 0; i < 3; ++i) {
    const double fused = MaxAbsDifference(got[2 + i], want[2 + i]);
    const double composed = MaxAbsDifference(got[2 + 3 + i], want[2 + i]);  // 3 grads a path
    EXPECT_LE(fused, 2 * composed + (i == 2 ? 1e-7 : 1e-6))
        << kGradNames[i] << ": composed " << composed;
  }
}

// The backward pass sums its blocks in a fixed order: the same bits from
// run to run, and with one thread or two.
TEST(Attention, BackwardIsDeterministic) {
  Graph g;
  Value qkv = g.Input("qkv", DType::kFloat32, {4, 130, 3 * 64});
  Value y = PackedAttention(qkv, {.causal = true}, {.heads = 4, .scale = 0.25, .dropout = 0.1});
  auto grads = Gradients(Sum(y * y), {qkv});
  ASSERT_OK(grads.status());
  const Feeds feeds = {{qkv, Random(DType::kFloat32, qkv.shape(), 9)}};
  const int threads = NumThreads();
  std::vector<std::vector<Tensor>> runs;
  for (int n : {threads, threads, 1}) {
    ASSERT_OK(SetNumThreads(n));
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out,
                         RunOnce(g, *grads, feeds, {.training = true, .step = 1}));
    runs.push_back(out);
  }
  ASSERT_OK(SetNumThreads(threads));
  for (size_t r = 1; r < runs.size(); ++r) {
    EXPECT_EQ(0, std::memcmp(runs[0][0].raw_data(), runs[r][0].raw_data(),
                             runs[0][0].num_elements() * sizeof(float)))
        << "run " << r;
  }
}

// A data-parallel process running rows [2, 4) of a batch of 4 drops the
// weights the whole batch's run drops there.
TEST(Attention, DataParallelSliceDrawsTheWholeBatchsMask) {
  auto run = [](int64_t rows, const Tensor& x, RunOptions options) {
    Graph g;
    Value qkv = g.Input("qkv", DType::kFloat32, {rows, 6, 24});
    Value y = PackedAttention(qkv, {}, {.heads = 2, .dropout = 0.5});
    return RunOnce(g, {y}, {{qkv, x}}, options);
  };
  const Tensor all = Random(DType::kFloat32, {4, 6, 24}, 11);
  ASSERT_OK_AND_ASSIGN(Tensor slice, Tensor::Zeros(DType::kFloat32, {2, 6, 24}));
  std::copy(all.data<float>() + 2 * 6 * 24, all.data<float>() + 4 * 6 * 24,
            slice.data<float>());
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> whole, run(4, all, {.training = true, .step = 2}));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> part,
                       run(2, slice, {.training = true, .step = 2, .batch_begin = 2,
                                      .batch_rows = 2}));
  EXPECT_EQ(0, std::memcmp(whole[0].data<float>() + 2 * 6 * 8, part[0].data<float>(),
                           2 * 6 * 8 * sizeof(float)));
}

}  // namespace
}  // namespace dagrad::testing
