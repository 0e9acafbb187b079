// Fused attention (ops/attention.h), beyond its op case (attention_cases.cc):
// hand-worked values, the builder's and the kernel's errors, and the fused
// op against the composed subgraph it replaces (MatMul, MaskedSoftmax,
// Dropout on the same stream, MatMul, merge) for outputs and every
// gradient, deterministic backward passes, and data-parallel dropout.

#include <cmath>
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

// One query, two keys, Dh = 1: scores (0, ln 3) give weights (1/4, 3/4),
// so the output is 4/4 + 3 * 8/4 = 7.
TEST(Attention, HandWorkedOutput) {
  Graph g;
  Value q = g.Input("q", DType::kFloat64, {1, 1, 1});
  Value k = g.Input("k", DType::kFloat64, {1, 2, 1});
  Value v = g.Input("v", DType::kFloat64, {1, 2, 1});
  Value lens = g.Input("lens", DType::kInt64, {1});
  const Feeds feeds = {{q, T<double>({1, 1, 1}, {1})},
                       {k, T<double>({1, 2, 1}, {0, std::log(3.0)})},
                       {v, T<double>({1, 2, 1}, {4, 8})},
                       {lens, T<int64_t>({1}, {1})}};
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out,
                       RunOnce(g, {Attention(q, k, v), Attention(q, k, v, {.valid_lens = lens}),
                                   Attention(q, k, v, {.causal = true, .causal_offset = -1})},
                               feeds));
  ExpectAllClose(out[0], {7.0}, 1e-14, 0, "both keys");
  ExpectAllClose(out[1], {4.0}, 1e-14, 0, "the first key only");
  ExpectAllClose(out[2], {0.0}, 0, 0, "no key: zeros");
}

// d out / d v = the weights (1/4, 3/4); d out / d k1 = q * w1 * (v1 - out).
TEST(Attention, HandWorkedGradients) {
  Graph g;
  Value q = g.Input("q", DType::kFloat64, {1, 1, 1});
  Value k = g.Input("k", DType::kFloat64, {1, 2, 1});
  Value v = g.Input("v", DType::kFloat64, {1, 2, 1});
  auto grads = Gradients(Sum(Attention(q, k, v)), {q, k, v});
  ASSERT_OK(grads.status());
  const Feeds feeds = {{q, T<double>({1, 1, 1}, {1})},
                       {k, T<double>({1, 2, 1}, {0, std::log(3.0)})},
                       {v, T<double>({1, 2, 1}, {4, 8})}};
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, RunOnce(g, *grads, feeds));
  // d/dq = sum_s w_s k_s (v_s - out) = 3/4 ln3 (8 - 7).
  ExpectAllClose(out[0], {0.75 * std::log(3.0)}, 1e-14, 0, "dq");
  ExpectAllClose(out[1], {0.25 * (4 - 7), 0.75 * (8 - 7)}, 1e-14, 0, "dk");
  ExpectAllClose(out[2], {0.25, 0.75}, 1e-14, 0, "dv");
}

TEST(Attention, BuilderErrors) {
  Graph g;
  Value q = g.Input("q", DType::kFloat32, {2, 3, 8});
  Value kv = g.Input("kv", DType::kFloat32, {2, 5, 8});
  Value half = g.Input("half", DType::kFloat64, {2, 5, 8});
  Value flat = g.Input("flat", DType::kFloat32, {2, 8});
  Value qkv = g.Input("qkv", DType::kFloat32, {2, 3, 20});
  Value heads4 = g.Input("heads4", DType::kFloat32, {2, 4, 5, 2});
  Value short_v = g.Input("short_v", DType::kFloat32, {2, 4, 8});
  Value lens = g.Input("lens", DType::kInt64, {3});
  const auto bad = absl::StatusCode::kInvalidArgument;
  EXPECT_STATUS(Attention(flat, kv, kv, {}, {.heads = 2}).status(), bad,
                "q must be (B, L, H * Dh) or (B, H, L, Dh) with H = heads = 2, got (2, 8)");
  EXPECT_STATUS(Attention(q, kv, kv, {}, {.heads = 3}).status(), bad, "H = heads = 3");
  EXPECT_STATUS(Attention(q, heads4, kv, {}, {.heads = 2}).status(), bad, "k must be");
  EXPECT_STATUS(Attention(q, kv, short_v, {}, {.heads = 2}).status(), bad,
                "k and v one length");
  EXPECT_STATUS(Attention(q, half, kv, {}, {.heads = 2}).status(), bad, "float64");
  EXPECT_STATUS(PackedAttention(qkv, {}, {.heads = 2}).status(), bad,
                "packed qkv must be (B, T, 3 * H * Dh) with H = heads = 2, got (2, 3, 20)");
  EXPECT_STATUS(Attention(q, kv, kv, {}, {.heads = 0}).status(), bad, "heads must be >= 1");
  EXPECT_STATUS(Attention(q, kv, kv, {}, {.heads = 2, .dropout = 1.5}).status(), bad,
                "dropout must be in [0, 1)");
  EXPECT_STATUS(Attention(q, kv, kv, {}, {.heads = 2, .scale = NAN}).status(), bad,
                "scale must be finite");
  EXPECT_STATUS(Attention(q, kv, kv, {.valid_lens = lens}, {.heads = 2}).status(), bad,
                "valid_lens (3,) must be (B) = (2,) for scores (2, 2, 3, 5)");
  EXPECT_STATUS(Attention(q, kv, kv, {.keep = lens}, {.heads = 2}).status(), bad,
                "keep mask must be bool");
  EXPECT_STATUS(Attention(q, kv, kv, {.bias = half}, {.heads = 2}).status(), bad,
                "bias must be float32 like scores");
}

TEST(Attention, ValidLengthOutsideTheKeysIsARunTimeError) {
  Graph g;
  Value qkv = g.Input("qkv", DType::kFloat32, {2, 3, 12});
  Value lens = g.Input("lens", DType::kInt32, {2, 3});
  Value y = PackedAttention(qkv, {.valid_lens = lens}, {.heads = 2});
  const Feeds feeds = {{qkv, Random(DType::kFloat32, {2, 3, 12}, 1)},
                       {lens, T<int32_t>({2, 3}, {1, 2, 3, 3, 4, 0})}};
  EXPECT_STATUS(RunOnce(g, {y}, feeds).status(), absl::StatusCode::kInvalidArgument,
                "valid_lens[1, 1] = 4 is outside [0, 3]");
}

TEST(Attention, SecondDerivativesAreUnimplemented) {
  Graph g;
  Value qkv = g.Input("qkv", DType::kFloat64, {1, 2, 6});
  auto first = Gradients(Sum(PackedAttention(qkv)), {qkv});
  ASSERT_OK(first.status());
  EXPECT_STATUS(Gradients(Sum((*first)[0]), {qkv}).status(), absl::StatusCode::kUnimplemented,
                "op 'attention_grad' has no gradient rule");
}

}  // namespace
}  // namespace dagrad::testing
