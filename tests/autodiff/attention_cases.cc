// The op cases (tests/autodiff/support/op_case.h) of fused attention, ops/
// attention.cc: every mask kind alone and combined, the causal offset of
// KV-cache decoding (S != T), fully masked rows, the bias's gradient,
// dropout, every operand layout, and sizes that are not multiples of the
// kernels' blocks (rows of 64, keys of 252 past 256; the CUDA tiles) with
// head sizes 16, 32, 64, 80 and 128.

#include <vector>

#include "ops/attention.h"
#include "ops/autodiff/autodiff.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"
#include "tests/autodiff/support/op_case.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

// The header's examples (ops/attention.h), with B = 2, T = 3, S = 5.
void HeaderExamples(CaseBuilder& b, DType d) {
  const int64_t B = 2, T = 3, S = 5;
  const Value qkv = b.Input("qkv", d, {B, T, 24});
  const Value q = b.Input("q", d, {B, T, 8});
  const Value k = b.Input("k", d, {B, S, 8});
  const Value v = b.Input("v", d, {B, S, 8});
  const Value lens = b.Fixed("lens", ::dagrad::testing::T<int64_t>({B}, {4, 1}));
  {
    Value ctx = PackedAttention(qkv, {.causal = true}, {.heads = 2, .scale = 0.5});
    // qkv (B, T, 3 * 2 * 4) -> ctx (B, T, 8)
    Value y = Attention(q, k, v, {.valid_lens = lens}, {.heads = 2, .scale = 0.5});
    // q (B, T, 8), k and v (B, S, 8) -> y (B, T, 8)
    b.Out(ctx);
    b.Out(y);
  }
  Value y = Attention(q, k, v, {.causal = true, .causal_offset = S - T},
                      {.heads = 2, .scale = 0.5});   // q (B, T, 8), k, v (B, S, 8)
  b.Out(y);
}

// Every operand layout: q heads first (B, H, T, Dh), k heads side by side,
// v heads first.
void Layouts(CaseBuilder& b, DType d) {
  const Value q = b.Input("q", d, {2, 2, 3, 4});
  const Value k = b.Input("k", d, {2, 4, 8});
  const Value v = b.Input("v", d, {2, 2, 4, 4});
  b.Out(Attention(q, k, v, {}, {.heads = 2, .scale = 0.7}));
}

// Keep masks, broadcast (B, 1, 1, S), per query (T, S), per head (1, H, 1, 1)
// and full; valid lengths (B) and (B, T); causal with offsets.
void AttentionMasks(CaseBuilder& b, DType d) {
  const Value qkv = b.Input("qkv", d, {2, 4, 24}, -2, 2);
  const AttentionOptions o = {.heads = 2, .scale = 0.6};
  b.Out(PackedAttention(qkv, {.keep = b.Input("pad", DType::kBool, {2, 1, 1, 4}, 0, 0.7)}, o));
  b.Out(PackedAttention(qkv, {.keep = b.Input("tq", DType::kBool, {4, 4}, 0, 0.6)}, o));
  b.Out(PackedAttention(qkv, {.keep = b.Input("head", DType::kBool, {1, 2, 1, 1}, 0, 0.5)}, o));
  b.Out(PackedAttention(qkv, {.keep = b.Input("full", DType::kBool, {2, 2, 4, 4}, 0, 0.6)}, o));
  b.Out(PackedAttention(qkv, {.valid_lens = b.Input("lens", DType::kInt64, {2}, 0, 5)}, o));
  b.Out(PackedAttention(qkv, {.valid_lens = b.Input("lens2", DType::kInt32, {2, 4}, 0, 5)}, o));
  b.Out(PackedAttention(qkv, {.causal = true, .causal_offset = 1}, o));
  b.Out(PackedAttention(qkv, {.causal = true, .causal_offset = -2}, o));
}

// Additive biases (differentiable): (T, S), per key (B, H, 1, S), per head
// and key (H, 1, S), full. (A bias constant along a row changes nothing: its
// gradient is 0 up to rounding, which no two levels round alike.)
void Biases(CaseBuilder& b, DType d) {
  const Value q = b.Input("q", d, {2, 3, 8});
  const Value kv = b.Input("kv", d, {2, 5, 8});
  const AttentionOptions o = {.heads = 2, .scale = 0.5};
  b.Out(Attention(q, kv, kv, {.bias = b.Input("ts", d, {3, 5}, -2, 2)}, o));
  b.Out(Attention(q, kv, kv, {.bias = b.Input("keys", d, {2, 2, 1, 5}, -2, 2)}, o));
  b.Out(Attention(q, kv, kv, {.bias = b.Input("head", d, {2, 1, 5}, -2, 2)}, o));
  b.Out(Attention(q, kv, kv, {.bias = b.Input("full", d, {2, 2, 3, 5}, -2, 2)}, o));
}

// All masks at once, with new queries after cached keys (S - T = 3).
Value AllMasks(Graph&, const In& in) {
  return Attention(in[0], in[1], in[2],
                   {.keep = in[3], .valid_lens = in[4], .bias = in[5], .causal = true,
                    .causal_offset = 3},
                   {.heads = 2, .scale = 0.4});
}

// Rows masked entirely by keep (batch 0, query 1), by a zero valid length
// (batch 1) and by causal with offset -1 (query 0): zeros, zero gradients.
Value FullyMasked(Graph&, const In& in) {
  return PackedAttention(in[0], {.keep = in[1], .valid_lens = in[2], .bias = in[3],
                                 .causal = true, .causal_offset = -1},
                         {.heads = 2, .scale = 0.5});
}

// Sizes past one block of rows (64) and of keys (256): T = 70, S = 300, with
// dropout (row by row Philox words) and masks; odd T and S per head size.
void Blocks(CaseBuilder& b, DType d) {
  const Value q = b.Input("q", d, {2, 70, 16});
  const Value kv = b.Input("kv", d, {2, 300, 16});
  const Value lens = b.Fixed("lens", T<int64_t>({2}, {300, 131}));
  b.Out(Attention(q, kv, kv, {.valid_lens = lens, .causal = true, .causal_offset = 230},
                  {.heads = 2, .scale = 0.3, .dropout = 0.2}));
  b.Out(Attention(q, kv, kv, {.bias = b.Input("bias", d, {70, 300}, -1, 1)},
                  {.heads = 1, .scale = 0.2}));
}

// Head sizes of the CUDA kernel's paths, T and S not multiples of a tile.
void HeadSizes(CaseBuilder& b, DType d) {
  for (int64_t Dh : {16, 32, 64, 80, 128}) {
    const std::string n = std::to_string(Dh);
    const Value q = b.Input("q" + n, d, {2, 2, 33, Dh});
    const Value k = b.Input("k" + n, d, {2, 2, 47, Dh});
    const Value v = b.Input("v" + n, d, {2, 2, 47, Dh});
    b.Out(Attention(q, k, v, {.causal = true, .causal_offset = 14},
                    {.heads = 2, .scale = 1.0 / Dh, .dropout = 0.1}));
  }
}

// attention_grad as autodiff builds it: dq, dk, dv and dbias of
// sum(Attention(...) * w).
void Backward(CaseBuilder& b, DType d) {
  const Value q = b.Input("q", d, {2, 37, 16});
  const Value k = b.Input("k", d, {2, 2, 41, 8});
  const Value v = b.Input("v", d, {2, 41, 16});
  const Value bias = b.Input("bias", d, {2, 1, 37, 41});
  const Value w = b.Input("w", d, {2, 37, 16});
  const Value y = Attention(q, k, v, {.bias = bias, .causal = true, .causal_offset = 4},
                            {.heads = 2, .scale = 0.35, .dropout = 0.3});
  auto grads = Gradients(Sum(Mul(y, w)), {q, k, v, bias});
  if (!grads.ok()) return b.Out(y.graph()->Error(grads.status()));
  for (const Value& g : *grads) b.Out(g);
}

}  // namespace

DAGRAD_OP_CASE(
    attention,
    .configs =
        {{.name = "header_examples", .build = HeaderExamples},
         {.name = "layouts", .build = Layouts},
         {.name = "masks", .build = AttentionMasks},
         {.name = "biases", .build = Biases},
         {.name = "all_masks",
          .build = Over({{"q", {2, 2, 8}},
                         {"k", {2, 5, 8}},
                         {"v", {2, 2, 5, 4}},
                         {"keep",
                          {2, 1, 1, 5},
                          T<bool>({2, 1, 1, 5},
                                  {true, true, false, true, true, true, false, true, true, true})},
                         {"lens", {2, 2}, T<int64_t>({2, 2}, {5, 4, 3, 5})},
                         {"bias", {2, 1, 2, 5}}},
                        AllMasks)},
         {.name = "fully_masked_rows",
          .build = Over({{"qkv", {3, 3, 24}},
                         {"keep", {3, 1, 3, 1}, T<bool>({3, 1, 3, 1},
                                  {true, false, true, true, true, true, true, true, true})},
                         {"lens", {3}, T<int64_t>({3}, {3, 0, 2})},
                         {"bias", {3}}},
                        FullyMasked)},
         {.name = "dropout",
          .build = Over({{"qkv", {2, 4, 24}}},
                        [](Graph&, const In& in) {
                          return PackedAttention(in[0], {.causal = true},
                                                 {.heads = 2, .scale = 0.5, .dropout = 0.4});
                        }),
          .training = true},
         {.name = "empty_keys",
          .build = Over({{"q", {2, 3, 8}}, {"k", {2, 0, 8}}, {"v", {2, 0, 8}}},
                        [](Graph&, const In& in) {
                          return Attention(in[0], in[1], in[2], {}, {.heads = 2});
                        })},
         {.name = "blocks", .build = Blocks, .modes = kBackendModes, .training = true},
         {.name = "head_sizes", .build = HeadSizes, .modes = kBackendModes, .training = true},
         // Valid lengths past the keys fail alike on every backend.
         {.name = "valid_lens_error",
          .build =
              [](CaseBuilder& b, DType d) {
                b.Out(PackedAttention(b.Input("qkv", d, {2, 3, 12}),
                                      {.valid_lens = b.Fixed("lens", T<int64_t>({2}, {1, 4}))},
                                      {.heads = 2}));
              },
          .dtypes = {DType::kFloat32},
          .modes = kBackendModes,
          .expect_error = true}},
    .bench = [](CaseBuilder& b, DType d) {
      b.Out(PackedAttention(b.Input("qkv", d, {16, 256, 3 * 256}), {.causal = true},
                            {.heads = 8, .scale = 0.125, .dropout = 0.1}));
    });

// attention_grad, attention's backward, has no rule of its own: the
// attention case's gradchecks cover its values; here its backends.
DAGRAD_OP_CASE(attention_grad,
               .configs = {{.name = "autodiff",
                            .build = Backward,
                            .modes = kBackendModes,
                            .gradients = false,
                            .training = true}},
               .bench = [](CaseBuilder& b, DType d) {
                 const Value qkv = b.Input("qkv", d, {16, 256, 3 * 256});
                 const Value y =
                     PackedAttention(qkv, {.causal = true}, {.heads = 8, .scale = 0.125});
                 auto grads = Gradients(Sum(y), {qkv});
                 b.Out(grads.ok() ? (*grads)[0] : y.graph()->Error(grads.status()));
               },
               .flags = kBackwardOnly);

}  // namespace dagrad::testing
