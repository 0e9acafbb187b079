#include "models/nn/attention.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "models/nn/positional_encoding.h"
#include "ops/attention.h"
#include "ops/dropout.h"
#include "ops/elementwise.h"
#include "ops/fill.h"
#include "ops/matmul.h"
#include "ops/reduce.h"
#include "ops/shape_ops.h"
#include "ops/softmax.h"

namespace dagrad::nn {

absl::StatusOr<AttentionPath> ParseAttentionPath(absl::string_view name) {
  if (name == "fused") return AttentionPath::kFused;
  if (name == "composed") return AttentionPath::kComposed;
  return absl::InvalidArgumentError(
      absl::StrCat("attention must be fused or composed, got '", name, "'"));
}

absl::string_view AttentionPathName(AttentionPath path) {
  return path == AttentionPath::kFused ? "fused" : "composed";
}

namespace {

// CheckOptions returns the first option Create rejects.
absl::Status CheckOptions(absl::string_view name, const MultiheadAttentionOptions& c) {
  const int64_t E = c.embed_dim, H = c.num_heads;
  auto fail = [&](const std::string& why) {
    return absl::InvalidArgumentError(
        absl::StrCat("multi_head_attention '", name, "': ", why));
  };
  if (absl::Status st = ValidatePrefix("MultiheadAttention", name); !st.ok()) return st;
  if (E < 1 || H < 1) {
    return fail(absl::StrCat("embed_dim and num_heads must be >= 1, got ", E, " and ", H));
  }
  if (E % H != 0) {
    return fail(absl::StrCat("embed_dim ", E, " is not divisible by num_heads ", H));
  }
  if (c.kdim < 0 || c.vdim < 0) return fail("kdim and vdim must be >= 0");
  if (absl::Status st = ValidateDropout(c.dropout); !st.ok()) {
    return fail(std::string(st.message()));
  }
  if (c.rotary && (E / H) % 2 != 0) {
    return fail(absl::StrCat("rotary embedding needs an even head size, got ", E / H));
  }
  if (c.rotary && !(c.rotary_base > 0 && std::isfinite(c.rotary_base))) {
    return fail(absl::StrCat("rotary_base must be finite and > 0, got ", c.rotary_base));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<MultiheadAttention> MultiheadAttention::Create(
    Graph& g, absl::string_view name, const MultiheadAttentionOptions& options) {
  if (absl::Status st = CheckOptions(name, options); !st.ok()) return st;
  MultiheadAttentionOptions c = options;
  const int64_t E = c.embed_dim;
  if (c.kdim == 0) c.kdim = E;
  if (c.vdim == 0) c.vdim = E;

  MultiheadAttention m;
  m.graph_ = &g;
  m.options_ = c;
  Graph::Scope scope(g, name);
  m.scope_ = g.scope();
  const Initializer xavier = c.in_proj_weight_init.value_or(Initializer::XavierUniform());
  if (c.kdim == E && c.vdim == E) {
    m.in_proj_weight_ = g.Parameter("in_proj_weight", {3 * E, E}, xavier, c.dtype);
  } else {
    m.q_proj_weight_ = g.Parameter("q_proj_weight", {E, E}, xavier, c.dtype);
    m.k_proj_weight_ = g.Parameter("k_proj_weight", {E, c.kdim}, xavier, c.dtype);
    m.v_proj_weight_ = g.Parameter("v_proj_weight", {E, c.vdim}, xavier, c.dtype);
  }
  if (c.bias) {
    m.in_proj_bias_ = g.Parameter("in_proj_bias", {3 * E},
                                  c.in_proj_bias_init.value_or(Initializer::Zeros()), c.dtype);
  }
  if (c.add_bias_kv) {
    // torch.nn.init.xavier_normal_ on (1, 1, E): fan_in = fan_out = E, so
    // std = sqrt(2 / (fan_in + fan_out)) = 1/sqrt(E).
    const Initializer xavier_normal = c.bias_kv_init.value_or(Initializer::XavierNormal());
    m.bias_k_ = g.Parameter("bias_k", {1, 1, E}, xavier_normal, c.dtype);
    m.bias_v_ = g.Parameter("bias_v", {1, 1, E}, xavier_normal, c.dtype);
  }
  {
    Graph::Scope out(g, "out_proj");
    const double bound = 1.0 / std::sqrt(static_cast<double>(E));
    m.out_weight_ = g.Parameter(
        "weight", {E, E}, c.out_proj_weight_init.value_or(Initializer::Uniform(-bound, bound)),
        c.dtype);
    if (c.bias) {
      m.out_bias_ = g.Parameter("bias", {E}, c.out_proj_bias_init.value_or(Initializer::Zeros()),
                                c.dtype);
    }
  }
  for (const Value& p : m.parameters()) {
    if (!p.ok()) return p.status();
  }
  return m;
}

std::vector<Value> MultiheadAttention::parameters() const {
  std::vector<Value> out;
  for (const Value& p : {in_proj_weight_, q_proj_weight_, k_proj_weight_, v_proj_weight_,
                         in_proj_bias_, bias_k_, bias_v_, out_weight_, out_bias_}) {
    if (!p.is_null()) out.push_back(p);
  }
  return out;
}

Value MultiheadAttention::SplitHeads(Value x) const {
  return Permute(Reshape(x, {x.dim(0), x.dim(1), options_.num_heads, head_dim()}), {0, 2, 1, 3});
}

// Appends to keys or values x (B, H, S, Dh) the configured extra positions:
// `param` (bias_k or bias_v, (1, 1, E), split into heads like a projected
// key) for add_bias_kv, then zeros for add_zero_attn.
Value MultiheadAttention::AppendKeys(Value x, Value param) const {
  const int64_t B = x.dim(0), H = options_.num_heads, Dh = head_dim();
  std::vector<Value> parts = {x};
  if (options_.add_bias_kv) {
    Value heads = Permute(Reshape(param, {1, 1, H, Dh}), {0, 2, 1, 3});  // (1, H, 1, Dh)
    parts.push_back(BroadcastTo(heads, Shape({B, H, 1, Dh})));
  }
  if (options_.add_zero_attn) parts.push_back(Fill(*x.graph(), {B, H, 1, Dh}, 0.0, x.dtype()));
  return parts.size() == 1 ? x : Concat(parts, 2);
}

namespace {

// PadKeys appends `extra` key positions holding `fill` to the last axis of
// mask m (a keep or a bias), whose last axis is S or broadcasts (1, or a
// scalar): the padding PyTorch gives its masks for appended keys.
Value PadKeys(Value m, int64_t S, int64_t extra, double fill, const char* what) {
  if (m.is_null() || !m.ok()) return m;
  Dims dims = m.shape().dims();
  if (dims.empty()) dims.push_back(1);
  if (dims.back() != S && dims.back() != 1) {
    return m.graph()->Error(absl::InvalidArgumentError(absl::StrCat(
        "multi_head_attention: mask ", what, " ", m.shape().ToString(),
        " must have S = ", S, " or 1 keys on its last axis")));
  }
  const bool broadcasts = dims.back() != S || m.rank() == 0;
  dims.back() = S;
  Value full = broadcasts ? BroadcastTo(m, Shape(dims)) : m;
  dims.back() = extra;
  return Concat({full, Fill(*m.graph(), Shape(dims), fill, m.dtype())}, -1);
}

// KeepFromLengths turns valid_lens (B) or (B, T) into keep (B, 1, 1|T, S):
// key s is kept iff s < length.
Value KeepFromLengths(Value lens, int64_t B, int64_t T, int64_t S) {
  if (!lens.ok()) return lens;
  const bool is_int = lens.dtype() == DType::kInt32 || lens.dtype() == DType::kInt64;
  const bool per_query = lens.rank() == 2 && lens.dim(0) == B && lens.dim(1) == T;
  if (!is_int || !((lens.rank() == 1 && lens.dim(0) == B) || per_query)) {
    return lens.graph()->Error(absl::InvalidArgumentError(absl::StrCat(
        "multi_head_attention: valid_lens must be int32/int64 (", B, ") or (", B, ", ", T,
        "), got ", DTypeName(lens.dtype()), " ", lens.shape().ToString())));
  }
  Value positions = Reshape(Arange(*lens.graph(), 0, S, 1, lens.dtype()), {1, 1, 1, S});
  return Less(positions, Reshape(lens, {B, 1, per_query ? T : 1, 1}));
}

// CausalKeep is the causal mask as keep (T, S): s <= t + (S - T).
Value CausalKeep(Graph& g, int64_t T, int64_t S) {
  Value keys = Reshape(Arange(g, 0, S, 1, DType::kInt64), {1, S});
  Value limits = Reshape(Arange(g, S - T + 1, S + 1, 1, DType::kInt64), {T, 1});
  return Less(keys, limits);
}

Value And(Value a, Value b) { return a.is_null() ? b : b.is_null() ? a : LogicalAnd(a, b); }

// ExtendMask gives `mask` over the S given keys `extra` more, always
// visible keys: valid_lens and causal become keep-masks, and keep (true)
// and bias (0) are padded.
SoftmaxMask ExtendMask(Graph& g, const AttentionMask& mask, int64_t B, int64_t T, int64_t S,
                       int64_t extra) {
  Value keep = mask.keep;
  if (!mask.valid_lens.is_null()) keep = And(keep, KeepFromLengths(mask.valid_lens, B, T, S));
  if (mask.causal) keep = And(keep, CausalKeep(g, T, S));
  return {.keep = PadKeys(keep, S, extra, 1.0, "keep"),
          .bias = PadKeys(mask.bias, S, extra, 0.0, "bias")};
}

}  // namespace

// CheckInputs returns an error Value for inputs of the wrong rank, width or
// batch size, else a null Value.
Value MultiheadAttention::CheckInputs(Value query, Value key, Value value) const {
  const int64_t E = options_.embed_dim;
  const int b = options_.batch_first ? 0 : 1, l = 1 - b;  // batch and sequence axes
  if (query.rank() != 3 || key.rank() != 3 || value.rank() != 3 ||
      query.dim(2) != E || key.dim(2) != options_.kdim || value.dim(2) != options_.vdim ||
      key.dim(b) != query.dim(b) || value.dim(b) != query.dim(b) ||
      key.dim(l) != value.dim(l)) {
    const char* q_dims = options_.batch_first ? "(B, T, " : "(T, B, ";
    const char* kv_dims = options_.batch_first ? "(B, S, " : "(S, B, ";
    return graph_->Error(absl::InvalidArgumentError(absl::StrCat(
        "multi_head_attention: expected query ", q_dims, E, "), key ", kv_dims, options_.kdim,
        "), value ", kv_dims, options_.vdim, "), got ", query.shape().ToString(), ", ",
        key.shape().ToString(), ", ", value.shape().ToString())));
  }
  return Value();
}

// Project applies the in-projection to (B, L, *) inputs.
MultiheadAttention::Projections MultiheadAttention::Project(Value query, Value key,
                                                            Value value) const {
  const int64_t E = options_.embed_dim;
  // The in-projection: rows [0, E) project queries, [E, 2E) keys, [2E, 3E)
  // values — each input with its own rows, never the query's.
  auto rows = [&](Value packed, int64_t part) {
    return packed.is_null() ? Value() : Slice(packed, 0, part * E, (part + 1) * E);
  };
  if (!in_proj_weight_.is_null() && query == key && key == value) {
    // Self-attention: one product with the packed weight gives q, k and v
    // side by side.
    return {.qkv = dagrad::Linear(query, in_proj_weight_, in_proj_bias_)};
  }
  Value wq = in_proj_weight_.is_null() ? q_proj_weight_ : rows(in_proj_weight_, 0);
  Value wk = in_proj_weight_.is_null() ? k_proj_weight_ : rows(in_proj_weight_, 1);
  Value wv = in_proj_weight_.is_null() ? v_proj_weight_ : rows(in_proj_weight_, 2);
  return {.q = dagrad::Linear(query, wq, rows(in_proj_bias_, 0)),
          .k = dagrad::Linear(key, wk, rows(in_proj_bias_, 1)),
          .v = dagrad::Linear(value, wv, rows(in_proj_bias_, 2))};
}

HeadsQkv MultiheadAttention::Heads(const Projections& p, Value positions) const {
  // Packed: one permute, (3, B, H, T, Dh), whose three blocks are q, k, v
  // (their gradients are concatenated back, not summed).
  HeadsQkv h = p.qkv.is_null()
                   ? HeadsQkv{SplitHeads(p.q), SplitHeads(p.k), SplitHeads(p.v)}
                   : SplitPackedHeads(p.qkv, options_.num_heads);
  if (!h.q.ok() || !h.k.ok() || !h.v.ok()) return h;
  if (options_.rotary && !positions.is_null()) {
    h.q = models::ApplyRotary(h.q, positions, options_.rotary_base);
    h.k = models::ApplyRotary(h.k, positions, options_.rotary_base);
  } else if (options_.rotary) {
    // Queries are the last T positions of the keys' sequence (header).
    const int64_t T = h.q.dim(2), S = h.k.dim(2);
    h.q = models::ApplyRotary(h.q, options_.rotary_base, S - T);
    h.k = models::ApplyRotary(h.k, options_.rotary_base);
  }
  h.k = AppendKeys(h.k, bias_k_);
  h.v = AppendKeys(h.v, bias_v_);
  return h;
}

HeadsAttention MultiheadAttention::Attend(const Projections& p, const SoftmaxMask& mask,
                                          double scale, AttentionWeights weights) const {
  if (options_.attention == AttentionPath::kComposed || weights != AttentionWeights::kNone) {
    const HeadsQkv h = Heads(p);
    return AttendHeads(h.q, h.k, h.v, mask, scale, options_.dropout);
  }
  const AttentionOptions fused = {
      .heads = options_.num_heads, .scale = scale, .dropout = options_.dropout};
  if (options_.rotary || options_.add_bias_kv || options_.add_zero_attn) {
    const HeadsQkv h = Heads(p);  // heads first, (B, H, L, Dh): the op reads them so
    return {Attention(h.q, h.k, h.v, mask, fused), Value()};
  }
  // q, k, v where the projection put them: no head split at all.
  return {p.qkv.is_null() ? Attention(p.q, p.k, p.v, mask, fused)
                          : PackedAttention(p.qkv, mask, fused),
          Value()};
}

AttentionOutput MultiheadAttention::operator()(Value query, Value key, Value value,
                                               const AttentionMask& mask,
                                               AttentionWeights weights,
                                               std::optional<double> scale) const {
  if (graph_ == nullptr) return {NotCreated(query, "MultiheadAttention"), Value()};
  Graph& g = *graph_;
  Graph::ScopePathGuard in_scope(g, scope_);
  for (const Value& v : {query, key, value}) {
    if (!v.ok()) return {v, Value()};
  }
  if (Value error = CheckInputs(query, key, value); !error.is_null()) return {error, Value()};
  if (!options_.batch_first) {  // to (B, L, E), keeping self-attention's inputs one Value
    const bool same_key = key == query, same_value = value == key;
    query = Transpose(query, 0, 1);
    key = same_key ? query : Transpose(key, 0, 1);
    value = same_value ? key : Transpose(value, 0, 1);
  }
  const int64_t B = query.dim(0);
  const int64_t T = query.dim(1), S = key.dim(1);
  SoftmaxMask softmax_mask = {.keep = mask.keep, .valid_lens = mask.valid_lens,
                              .bias = mask.bias, .causal = mask.causal,
                              .causal_offset = S - T};
  const int64_t extra = int64_t{options_.add_bias_kv} + int64_t{options_.add_zero_attn};
  if (extra > 0) softmax_mask = ExtendMask(g, mask, B, T, S, extra);
  HeadsAttention attended =
      Attend(Project(query, key, value), softmax_mask,
             scale.value_or(1.0 / std::sqrt(static_cast<double>(head_dim()))), weights);
  Value output = dagrad::Linear(attended.merged, out_weight_, out_bias_);
  AttentionOutput out{options_.batch_first ? output : Transpose(output, 0, 1), Value()};
  if (weights == AttentionWeights::kPerHead) out.weights = attended.weights;
  if (weights == AttentionWeights::kAveraged) out.weights = Mean(attended.weights, {1});
  return out;
}

AttentionOutput MultiheadAttention::operator()(Value x, KvCache& cache) const {
  if (graph_ == nullptr) return {NotCreated(x, "MultiheadAttention"), Value()};
  Graph& g = *graph_;
  Graph::ScopePathGuard in_scope(g, scope_);
  if (!x.ok()) return {x, Value()};
  if (Value error = CheckInputs(x, x, x); !error.is_null()) return {error, Value()};
  if (!options_.batch_first || options_.add_bias_kv || options_.add_zero_attn) {
    return {g.Error(absl::InvalidArgumentError(
                "multi_head_attention: a KV cache needs batch_first and no "
                "add_bias_kv or add_zero_attn")),
            Value()};
  }
  if (options_.rotary && cache.positions.is_null()) {
    return {g.Error(absl::InvalidArgumentError(
                "multi_head_attention: a rotary layer's KV cache needs the new tokens' "
                "positions (KvCache::positions)")),
            Value()};
  }
  const Projections p = Project(x, x, x);
  HeadsQkv h = Heads(p, options_.rotary ? cache.positions : Value());
  const SoftmaxMask mask = AppendPast(cache, h);
  const double scale = 1.0 / std::sqrt(static_cast<double>(head_dim()));
  Value merged =
      options_.attention == AttentionPath::kComposed
          ? AttendHeads(h.q, h.k, h.v, mask, scale, options_.dropout).merged
          : Attention(h.q, h.k, h.v, mask,
                      {.heads = options_.num_heads, .scale = scale, .dropout = options_.dropout});
  return {dagrad::Linear(merged, out_weight_, out_bias_), Value()};
}

SoftmaxMask AppendPast(KvCache& cache, HeadsQkv& heads) {
  cache.keys = heads.k;
  cache.values = heads.v;
  if (!heads.k.ok()) return {};
  Graph& g = *heads.k.graph();
  const Value past[] = {cache.past_keys, cache.past_values, cache.keep};
  for (const Value& v : past) {
    if (v.is_null()) {
      heads.q = heads.k = heads.v = g.Error(absl::InvalidArgumentError(
          "attention: a KV cache needs past_keys, past_values and keep"));
      return {};
    }
    if (!v.ok()) return {};
  }
  const int64_t T = heads.q.dim(2), P = cache.past_keys.dim(2);
  const bool keep_ok = cache.keep.dtype() == DType::kBool && cache.keep.shape() == Shape({P});
  if (!keep_ok || cache.past_values.shape() != cache.past_keys.shape()) {
    heads.q = heads.k = heads.v = g.Error(absl::InvalidArgumentError(absl::StrCat(
        "attention: a KV cache's past_values must have past_keys' shape ",
        cache.past_keys.shape().ToString(), " and keep be bool (", P, "), got ",
        cache.past_values.shape().ToString(), " and ", DTypeName(cache.keep.dtype()), " ",
        cache.keep.shape().ToString())));
    return {};
  }
  heads.k = Concat({cache.past_keys, heads.k}, 2);  // Concat names other mismatches
  heads.v = Concat({cache.past_values, heads.v}, 2);
  // Each new query sees the kept slots and the new keys causally (an
  // offset P in the joined axis would also admit unkept slots).
  Value kept = BroadcastTo(Reshape(cache.keep, {1, P}), Shape({T, P}));
  Value new_keys = Less(Reshape(Arange(g, 0, T, 1, DType::kInt64), {1, T}),
                        Reshape(Arange(g, 1, T + 1, 1, DType::kInt64), {T, 1}));
  return {.keep = Concat({kept, new_keys}, 1)};
}

HeadsQkv SplitPackedHeads(Value qkv, int64_t heads) {
  if (!qkv.ok()) return {qkv, qkv, qkv};
  if (qkv.rank() != 3 || heads < 1 || qkv.dim(2) % (3 * heads) != 0) {
    Value error = qkv.graph()->Error(absl::InvalidArgumentError(absl::StrCat(
        "split_packed_heads: qkv must be (B, T, 3 * heads * Dh) for ", heads, " heads, got ",
        qkv.shape().ToString())));
    return {error, error, error};
  }
  const int64_t B = qkv.dim(0), T = qkv.dim(1), H = heads, Dh = qkv.dim(2) / (3 * heads);
  Value split = Permute(Reshape(qkv, {B, T, 3, H, Dh}), {2, 0, 3, 1, 4});  // (3, B, H, T, Dh)
  auto part = [&](int64_t i) { return Reshape(Slice(split, 0, i, i + 1), {B, H, T, Dh}); };
  return {part(0), part(1), part(2)};
}

HeadsAttention AttendHeads(Value q, Value k, Value v, const SoftmaxMask& mask, double scale,
                           double dropout) {
  Value scores = MatMul(q, k, {.transpose_b = true});  // (B, H, T, S)
  Value weights = MaskedSoftmax(scores, mask, scale);
  Value dropped = dropout > 0 ? dagrad::Dropout(weights, dropout) : weights;
  Value context = MatMul(dropped, v);  // (B, H, T, Dh)
  if (!context.ok()) return {context, weights};
  const int64_t B = context.dim(0), H = context.dim(1), T = context.dim(2), Dh = context.dim(3);
  return {Reshape(Permute(context, {0, 2, 1, 3}), {B, T, H * Dh}), weights};
}

Value KeepFromKeyPaddingMask(Value key_padding_mask) {
  if (!key_padding_mask.ok()) return key_padding_mask;
  if (key_padding_mask.rank() != 2 || key_padding_mask.dtype() != DType::kBool) {
    return key_padding_mask.graph()->Error(absl::InvalidArgumentError(absl::StrCat(
        "key_padding_mask must be bool (B, S), got ", DTypeName(key_padding_mask.dtype()), " ",
        key_padding_mask.shape().ToString())));
  }
  return LogicalNot(Reshape(key_padding_mask,
                            {key_padding_mask.dim(0), 1, 1, key_padding_mask.dim(1)}));
}

namespace {

// CheckNumHeads: the head count an attn_mask of (B*num_heads, T, S) is
// split by must be positive.
absl::Status CheckNumHeads(int64_t num_heads) {
  if (num_heads >= 1) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("num_heads must be >= 1 to split an attn_mask by, got ", num_heads));
}

}  // namespace

Value KeepFromAttnMask(Value attn_mask, int64_t num_heads) {
  if (!attn_mask.ok()) return attn_mask;
  if (absl::Status st = CheckNumHeads(num_heads); !st.ok()) return attn_mask.graph()->Error(st);
  const int rank = attn_mask.rank();
  if (attn_mask.dtype() != DType::kBool || (rank != 2 && rank != 3) ||
      (rank == 3 && attn_mask.dim(0) % num_heads != 0)) {
    return attn_mask.graph()->Error(absl::InvalidArgumentError(absl::StrCat(
        "attn_mask must be bool (T, S) or (B*", num_heads, ", T, S), got ",
        DTypeName(attn_mask.dtype()), " ", attn_mask.shape().ToString())));
  }
  if (rank == 2) return LogicalNot(attn_mask);
  return LogicalNot(Reshape(attn_mask, {attn_mask.dim(0) / num_heads, num_heads,
                                        attn_mask.dim(1), attn_mask.dim(2)}));
}

namespace {

bool IsFloat(DType d) { return d == DType::kFloat32 || d == DType::kFloat64; }

}  // namespace

Value BiasFromAttnMask(Value attn_mask, int64_t num_heads) {
  if (!attn_mask.ok()) return attn_mask;
  if (absl::Status st = CheckNumHeads(num_heads); !st.ok()) return attn_mask.graph()->Error(st);
  const int rank = attn_mask.rank();
  if (!IsFloat(attn_mask.dtype()) || (rank != 2 && rank != 3) ||
      (rank == 3 && attn_mask.dim(0) % num_heads != 0)) {
    return attn_mask.graph()->Error(absl::InvalidArgumentError(absl::StrCat(
        "attn_mask must be float32/float64 (T, S) or (B*", num_heads, ", T, S), got ",
        DTypeName(attn_mask.dtype()), " ", attn_mask.shape().ToString())));
  }
  if (rank == 2) return attn_mask;
  return Reshape(attn_mask,
                 {attn_mask.dim(0) / num_heads, num_heads, attn_mask.dim(1), attn_mask.dim(2)});
}

Value BiasFromKeyPaddingMask(Value key_padding_mask) {
  if (!key_padding_mask.ok()) return key_padding_mask;
  if (key_padding_mask.rank() != 2 || !IsFloat(key_padding_mask.dtype())) {
    return key_padding_mask.graph()->Error(absl::InvalidArgumentError(absl::StrCat(
        "key_padding_mask must be float32/float64 (B, S), got ",
        DTypeName(key_padding_mask.dtype()), " ", key_padding_mask.shape().ToString())));
  }
  return Reshape(key_padding_mask, {key_padding_mask.dim(0), 1, 1, key_padding_mask.dim(1)});
}

}  // namespace dagrad::nn
