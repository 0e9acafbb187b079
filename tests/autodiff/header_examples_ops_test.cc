// The examples of ops/*.h, line for line, run (tests/support/header_examples.h says
// how they are kept in step with the headers).
#include <cmath>
#include <cstdint>
#include <iostream>
#include <thread>
#include <vector>

#include "engine/executor.h"
#include "engine/graph.h"
#include "engine/op.h"
#include "engine/philox.h"
#include "engine/status_macros.h"
#include "ops/autodiff/autodiff.h"
#include "ops/cpu/cpu_runtime.h"
#include "ops/cpu/internal/broadcast.h"
#include "ops/cpu/internal/cpu_isa.h"
#include "ops/cpu/internal/gemm.h"
#include "ops/cpu/internal/small_gemm.h"
#include "ops/cpu/internal/vector_math.h"
#include "ops/cpu/parallel.h"
#include "ops/dropout.h"
#include "ops/elementwise.h"
#include "ops/fill.h"
#include "ops/gather.h"
#include "ops/gelu.h"
#include "ops/layer_norm.h"
#include "ops/loss.h"
#include "ops/math/dropout_math.h"
#include "ops/math/gelu_math.h"
#include "ops/math/minmax.h"
#include "ops/math/sampling_math.h"
#include "ops/matmul.h"
#include "ops/op_util.h"
#include "ops/optim.h"
#include "ops/reduce.h"
#include "ops/registry.h"
#include "ops/sampling.h"
#include "ops/select.h"
#include "ops/shape_ops.h"
#include "ops/softmax.h"
#include "tests/support/header_examples.h"

namespace dagrad {
namespace {

constexpr int64_t B = 2, T = 3, S = 4, E = 8, H = 2, V = 5, F = 6;

// Values every op example starts from, as a model would have them.
struct Values {
  Graph g;
  Value x = g.Input("x", DType::kFloat32, {B, T, E});
  Value tokens = g.Input("tokens", DType::kInt64, {B, T});
  Value scores = g.Input("scores", DType::kFloat32, {B, H, T, S});
  Value lens = g.Input("lens", DType::kInt64, {B});
  Value logits = g.Input("logits", DType::kFloat32, {B, T, V});
};

HEADER_EXAMPLE(OpsBroadcast) {
  const Shape out_shape({2, 3}), a_shape({2, 3}), b_shape({3});
  const float a[] = {1, 2, 3, 4, 5, 6}, b[] = {10, 20, 30};
  float y[6];
  StridedLoop<2> loop = BroadcastLoop<2>(out_shape, {&a_shape, &b_shape});
  loop.Run([&](int64_t out, const int64_t* in, const int64_t* step, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[out + i] = a[in[0] + i * step[0]] + b[in[1] + i * step[1]];
  });
  EXPECT_EQ(y[3], 14);
  return absl::OkStatus();
}

HEADER_EXAMPLE(OpsCpuIsa) {
  const float a[] = {1, 2}, b[] = {3, 4};
  float c[1] = {0};
  alignas(64) float panel[32];   // k rows of 64 bytes
  SmallGemmArgs<float> args{.m = 1, .n = 1, .k = 2, .alpha = 1, .a = a, .rsa = 2, .csa = 1,
                            .b = b, .rsb = 1, .csb = 1, .beta = 0, .c = c, .ldc = 1,
                            .panel = panel};
  DAGRAD_ASSIGN_OR_RETURN(const CpuKernels* k, ActiveKernels());
  k->small_gemm_f32(args);
  EXPECT_EQ(c[0], 11);
  return absl::OkStatus();
}

HEADER_EXAMPLE(OpsBf16Products) {
  Bf16Products p = Bf16ProductsFor(CpuIsa::kBaseline, "DAGRAD_CPU_ISA");  // p.gemm null
  EXPECT_EQ(p.gemm, nullptr);
  EXPECT_EQ(p.description.rfind("widen to float32 + sgemm (kernel level baseline, ", 0), 0);
  return absl::OkStatus();
}

HEADER_EXAMPLE(OpsCpuRuntime) {
  if (absl::Status st = ConfigureCpu(); !st.ok()) return st;
  CpuInfo info = GetCpuInfo();   // info.blis_arch == "skx"
  EXPECT_FALSE(info.blis_arch.empty());
  Values v;
  Executor exec(v.g);
  DAGRAD_ASSIGN_OR_RETURN(auto plan, exec.Compile({Sum(v.x)}));
  Feeds feeds = {{v.x, *Tensor::FromVector<float>({B, T, E}, std::vector<float>(B * T * E, 1))}};
  const int threads = NumThreads();
  absl::StatusOr<std::vector<Tensor>> out;
  DAGRAD_RETURN_IF_ERROR(SetNumThreads(1));
  std::thread([&] { out = exec.Run(*plan, feeds); }).join();   // one thread
  DAGRAD_RETURN_IF_ERROR(SetNumThreads(threads));
  return out.status();
}

HEADER_EXAMPLE(OpsGemmBFloat16) {
  const int64_t m = 2, n = 3, k = 4;
  const std::vector<BFloat16> av(m * k, FloatToBFloat16(0.5f)), bv(k * n, FloatToBFloat16(3.0f));
  const BFloat16* a = av.data();
  const BFloat16* b = bv.data();
  std::vector<float> cv(m * n);
  float* c = cv.data();
  DAGRAD_RETURN_IF_ERROR(GemmBFloat16(m, n, k, 1.0f, a, k, 1, b, n, 1, 0.0f, c, n, 1));
  EXPECT_EQ(cv, std::vector<float>(m * n, 6.0f));
  cv.assign(m * n, 0.0f);
  DAGRAD_RETURN_IF_ERROR(GemmBFloat16On(nullptr, m, n, k, 1.0f, a, k, 1, b, n, 1, 0.0f, c, n, 1));
  EXPECT_EQ(cv, std::vector<float>(m * n, 6.0f));
  return absl::OkStatus();
}

HEADER_EXAMPLE(OpsOpUtil) {
  Graph g;
  Value x16 = g.Input("x16", DType::kBFloat16, {3});
  absl::Status st = CheckReducedFloats(*FindOp("tanh"), {x16}, Attrs());  // InvalidArgument
  EXPECT_TRUE(absl::IsInvalidArgument(st));
  return absl::OkStatus();
}

HEADER_EXAMPLE(OpsDropout) {
  Values v;
  Graph& g = v.g;
  Value x = v.x;
  Value w1 = g.Parameter("w1", {F, E}, Initializer::XavierUniform());
  Value b1 = g.Parameter("b1", {F}, Initializer::Zeros());
  const uint64_t step = 1;
  Feeds feeds = {{x, *Tensor::FromVector<float>({B, T, E}, std::vector<float>(B * T * E, 1))}};
  Executor exec(g);
  Value h = Dropout(Relu(Linear(x, w1, b1)), 0.1);   // (B, T, F) -> (B, T, F)
  DAGRAD_ASSIGN_OR_RETURN(auto plan, exec.Compile({h}));
  DAGRAD_ASSIGN_OR_RETURN(auto train, exec.Run(*plan, feeds, {.training = true, .step = step}));
  DAGRAD_ASSIGN_OR_RETURN(auto eval, exec.Run(*plan, feeds));  // dropout is the identity
  EXPECT_EQ(train[0].shape(), eval[0].shape());
  Value y = Dropout(x, 0.5);   // training: about half of x zeroed, the rest doubled
  Value z = Dropout(x, 0.0);   // always a copy
  EXPECT_EQ(h.shape(), Shape({B, T, F}));
  EXPECT_EQ(y.shape(), z.shape());
  return g.status();
}

HEADER_EXAMPLE(OpsDropoutMath) {
  using T = float;
  const double p = 0.5;
  const RandomStream rs{.seed = 1, .stream = 2, .step = 3};
  const float x[] = {1, 2, 3, 4};
  float y[4];
  for (int i = 0; i < 4; ++i) {
    const uint32_t threshold = DropoutThreshold(p);
    const T scale = T(1) / (T(1) - static_cast<T>(p));
    y[i] = DropoutElement(x[i], rs.Bits(i), threshold, scale);
    EXPECT_TRUE(y[i] == 0 || y[i] == 2 * x[i]);
  }
  return absl::OkStatus();
}

HEADER_EXAMPLE(OpsElementwise) {
  Values v;
  Graph& g = v.g;
  Value x = v.x, c = v.x;
  Value w = g.Parameter("w", {E, E}, Initializer::XavierUniform());
  Value a = g.Parameter("a", {E}, Initializer::Ones());
  Value b = g.Parameter("b", {E}, Initializer::Zeros());
  Value y = Relu(Add(MatMul(x, w), b));     // b broadcasts over rows
  Value z = (a - b) * c / 2.0;              // operators build the same ops
  Value r = 2.0 / (a * a + 1.0);            // a scalar on either side
  EXPECT_EQ(y.shape(), z.shape());
  EXPECT_EQ(r.shape(), a.shape());
  return g.status();
}

HEADER_EXAMPLE(OpsElementwiseMath) {
  struct {
    Attrs attrs() const { return Attrs(); }
  } ctx;
  const int64_t n = 2;
  const float x[] = {0, 1};
  float y[2];
  const TanhFn fn(ctx.attrs());
  for (int64_t i = 0; i < n; ++i) y[i] = fn(x[i]);
  EXPECT_FLOAT_EQ(y[1], std::tanh(1.0f));
  return absl::OkStatus();
}

HEADER_EXAMPLE(OpsGelu) {
  Values v;
  Value x = v.x;
  Value w = v.g.Parameter("w", {E, E}, Initializer::XavierUniform());
  Value h = Gelu(MatMul(x, w));                            // exact
  Value t = Gelu(MatMul(x, w), GeluApproximate::kTanh);    // tanh form
  EXPECT_TRUE(h.ok() && t.ok());
  EXPECT_EQ(t.shape(), Shape({B, T, E}));
  return absl::OkStatus();
}

HEADER_EXAMPLE(OpsGeluMath) {
  struct {
    Attrs attrs() const { return Attrs(); }
  } ctx;
  const int64_t n = 2;
  const double x[] = {0, 1};
  double y[2];
  const GeluFn fn(ctx.attrs());
  for (int64_t i = 0; i < n; ++i) y[i] = fn(x[i]);
  EXPECT_NEAR(y[1], 0.8413447460685429, 1e-12);
  return absl::OkStatus();
}

HEADER_EXAMPLE(OpsSampling) {
  Values v;
  Value logits = Reshape(v.logits, {B * T, V});
  Value probs = Softmax(logits);                  // (B, V)
  Value greedy = ArgMax(logits, -1);              // (B,) int64
  TopKResult top = TopK(logits, 5, -1);           // (B, 5) values and indices
  Value next = Multinomial(probs, /*seed=*/42);   // (B, 1) int64
  EXPECT_EQ(greedy.dtype(), DType::kInt64);
  EXPECT_EQ(top.indices.shape(), Shape({B * T, 5}));
  EXPECT_EQ(next.shape(), Shape({B * T, 1}));
  return absl::OkStatus();
}

HEADER_EXAMPLE(OpsSamplingMath) {
  const Shape shape({2, 3});
  const int axis = 1;
  const float x[] = {1, 5, 2, 7, 0, 7};
  const int64_t o = 1, j = 0;  // the second row
  DAGRAD_ASSIGN_OR_RETURN(const AxisRows r, AxisRowsOf(shape, axis));
  const int64_t i = ArgMaxRow(x + o * r.n * r.inner + j, r.n, r.inner);
  EXPECT_EQ(i, 0);  // 7, 0, 7: the first maximum
  return absl::OkStatus();
}

HEADER_EXAMPLE(OpsFill) {
  Values v;
  Graph& g = v.g;
  Value x = v.x;
  Value mask = g.Input("mask", DType::kBool, {B, S});
  {
    Value pos = Arange(g, 0, T, 1, DType::kInt64);        // (T,): 0, 1, ..., T-1
    Value bias = Fill(g, {B, 1, S}, -1e9);                 // float32
    Value z = ZerosLike(x);                                // x's shape and dtype
    EXPECT_EQ(pos.shape(), Shape({T}));
    EXPECT_EQ(z.shape(), x.shape());
  }
  Value ones = Fill(g, {2, 3}, 1.0);                    // float32 (2, 3)
  Value pad = Fill(g, {4}, 0, DType::kInt64);           // int64 (4,)
  Value big = Fill(g, {2}, INT64_MAX, DType::kInt64);   // exact
  {
    FillValue big = (int64_t{1} << 53) + 1;  // stays 2^53 + 1
    FillValue half = 0.5;
    EXPECT_EQ(big.integer(), 9007199254740993);
    EXPECT_FALSE(half.is_integer());
  }
  Value t = Arange(g, 0, 5);                            // [0, 1, 2, 3, 4]
  Value r = Arange(g, 1, 0, -0.25, DType::kFloat64);    // [1, 0.75, 0.5, 0.25]
  Value z = ZerosLike(x);                               // x (B, T, E) -> (B, T, E)
  Value m = OnesLike(mask);                             // bool: all true
  EXPECT_EQ(r.shape(), Shape({4}));
  EXPECT_EQ(m.dtype(), DType::kBool);
  EXPECT_EQ(big.dtype(), DType::kInt64);
  return g.status();
}

HEADER_EXAMPLE(OpsGather) {
  Values v;
  Graph& g = v.g;
  Value tokens = v.tokens;
  {
    Value table = g.Parameter("table", {V, E}, Initializer::Zeros());
    Value x = v.x;
    Value idx = g.Input("k_idx", DType::kInt64, {2});
    Value e = Embedding(table, tokens);            // (V, E), (B, T) -> (B, T, E)
    Value h = Gather(x, idx, 1);                   // (B, T, E), (K,) -> (B, K, E)
    EXPECT_EQ(e.shape(), Shape({B, T, E}));
    EXPECT_EQ(h.shape(), Shape({B, 2, E}));
  }
  {
    Graph::Scope example(g, "gather");
    Value x = g.Input("x", DType::kFloat32, {4, 5, 6});
    Value idx = g.Input("idx", DType::kInt64, {2, 3});
    Value y = Gather(x, idx, 1);                   // (4, 2, 3, 6)
    EXPECT_EQ(y.shape(), Shape({4, 2, 3, 6}));
  }
  {
    Graph::Scope example(g, "embedding");
    Graph::Scope scope(g, "tok_emb");              // names hold no '/': scopes nest
    Value table = g.Parameter("weight", {V, E}, Initializer::Normal(0, 1));
    Value tokens = g.Input("tokens", DType::kInt64, {B, T});
    Value x = Embedding(table, tokens);            // (B, T, E)
    EXPECT_EQ(x.shape(), Shape({B, T, E}));
  }
  Value idx = g.Input("idx", DType::kInt64, {3});
  Value upd = g.Input("upd", DType::kFloat32, {3, 4});
  Value out = ScatterAdd(idx, upd, 5);           // (5, 4)
  EXPECT_EQ(out.shape(), Shape({5, 4}));
  return g.status();
}

HEADER_EXAMPLE(OpsLayerNorm) {
  Values v;
  Graph& g = v.g;
  {
    Value x = v.x;
    Value gamma = g.Parameter("gamma", {E}, Initializer::Ones());
    Value beta = g.Parameter("beta", {E}, Initializer::Zeros());
    Value h = LayerNorm(x, gamma, beta);          // x (B, T, E), gamma/beta (E,)
    Value n = LayerNorm(x, Value(), Value());     // no affine part
    Value dy = v.x;
    Value dx = LayerNormGrad(x, gamma, dy, 1e-5);  // x, dy (B, T, E)
    EXPECT_EQ(dx.shape(), h.shape());
    EXPECT_EQ(n.shape(), h.shape());
  }
  DAGRAD_RETURN_IF_ERROR(g.status());
  Graph g2;
  {
    Graph& g = g2;
    Value x = g.Input("x", DType::kFloat32, {B, T, E});
    Graph::Scope scope(g, "ln");                  // parameters ln/weight, ln/bias
    Value gamma = g.Parameter("weight", {E}, Initializer::Ones());
    Value beta = g.Parameter("bias", {E}, Initializer::Zeros());
    Value y = LayerNorm(x, gamma, beta, 1e-5);    // (B, T, E)
    EXPECT_EQ(gamma.path(), "ln/weight");
    EXPECT_EQ(y.shape(), Shape({B, T, E}));
  }
  return g2.status();
}

HEADER_EXAMPLE(OpsLoss) {
  Values v;
  Graph& g = v.g;
  Value logits = v.logits, targets = v.tokens, tokens = v.tokens;
  std::vector<Value> params = {g.Parameter("w", {V, V}, Initializer::XavierUniform())};
  logits = MatMul(logits, params[0]);
  {
    Value loss = CrossEntropy(logits, targets);   // (B, T, V), (B, T) -> ()
    DAGRAD_ASSIGN_OR_RETURN(auto grads, Gradients(loss, params));
    EXPECT_EQ(grads[0].shape(), params[0].shape());
  }
  // logits (B, T, V), tokens (B, T) with padding -100
  Value loss = CrossEntropy(logits, tokens);
  Value per_token = CrossEntropy(logits, tokens, {.reduction = CrossEntropyOptions::kNone});
  EXPECT_EQ(loss.shape(), Shape({}));
  EXPECT_EQ(per_token.shape(), Shape({B, T}));
  return g.status();
}

HEADER_EXAMPLE(OpsMatMul) {
  Values v;
  Graph& g = v.g;
  Value a = g.Input("a", DType::kFloat32, {B, T, E});
  Value b = g.Input("b", DType::kFloat32, {E, S});
  Value q = v.scores, k = v.scores, x = v.x;
  Value w = g.Parameter("w", {3, E}, Initializer::XavierUniform());
  Value bias = g.Parameter("bias", {3}, Initializer::Zeros());
  MatMul(a, b);                          // (..., M, K) x (..., K, N) -> (..., M, N)
  MatMul(q, k, {.transpose_b = true});   // (B, H, T, D) x (B, H, S, D) -> (B, H, T, S)
  Linear(x, w, bias);                    // x (..., in), w (out, in), bias (out) -> (..., out)
  EXPECT_EQ(MatMul(q, k, {.transpose_b = true}).shape(), Shape({B, H, T, T}));
  DAGRAD_RETURN_IF_ERROR(g.status());
  Graph g2;
  {
    Graph& g = g2;
    Value w = g.Parameter("w", {3, 4}, Initializer::XavierUniform());
    Value b = g.Parameter("b", {3}, Initializer::Zeros());
    Value y = Linear(g.Input("x", DType::kFloat32, {4}), w, b);   // w (3, 4) -> y (3)
    EXPECT_EQ(y.shape(), Shape({3}));
  }
  DAGRAD_RETURN_IF_ERROR(g2.status());
  Graph g3;
  {
    Graph& g = g3;
    Value a16 = Cast(g.Input("a", DType::kFloat32, {4, 8}), DType::kBFloat16);
    Value w16 = Cast(g.Parameter("w", {8, 3}, Initializer::Ones()), DType::kBFloat16);
    Value y = MatMul(a16, w16);                                          // float32 (4, 3)
    Value y16 = MatMul(a16, w16, {.output = DType::kBFloat16});          // bfloat16 (4, 3)
    EXPECT_EQ(y.dtype(), DType::kFloat32);
    EXPECT_EQ(y16.dtype(), DType::kBFloat16);
  }
  return g3.status();
}

HEADER_EXAMPLE(OpsMinMax) {
  PropagatingMax(1.0f, NAN);  // NaN
  PropagatingMax(NAN, 1.0f);  // NaN
  PropagatingMin(2, 3);       // 2
  EXPECT_TRUE(std::isnan(PropagatingMax(1.0f, NAN)));
  EXPECT_TRUE(std::isnan(PropagatingMax(NAN, 1.0f)));
  EXPECT_EQ(PropagatingMin(2, 3), 2);
  return absl::OkStatus();
}

HEADER_EXAMPLE(OpsOptim) {
  Values v;
  Graph& g = v.g;
  Value w = g.Parameter("w", {E}, Initializer::Ones());
  Value loss = Sum(Mul(v.x, w));
  DAGRAD_ASSIGN_OR_RETURN(auto grads, Gradients(loss, {w}));
  Value dw = grads[0];
  Value m = g.Variable("m", {E}, Initializer::Zeros());
  Value v2 = g.Variable("v", {E}, Initializer::Zeros());
  {
    Value v = v2;
    Executor exec(g);
    Value lr = g.Input("lr", DType::kFloat64, {});
    Value t = g.Input("step", DType::kFloat64, {});   // 1, 2, 3, ...
    Value update = AdamUpdate(w, dw, m, v, lr, t, {.weight_decay = 0.01, .decoupled = true});
    DAGRAD_ASSIGN_OR_RETURN(auto plan, exec.Compile({loss}, {update}));
    EXPECT_NE(plan, nullptr);
  }
  return g.status();
}

HEADER_EXAMPLE(OpsParallel) {
  const int64_t rows = 200;
  std::vector<int> done(rows, 0);
  const int64_t n = 128;
  auto SoftmaxRow = [&](int64_t r) { done[r] += 1; };
  ParallelFor(rows, RowGrain(n), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) SoftmaxRow(r);
  });
  EXPECT_EQ(done, std::vector<int>(rows, 1));
  EXPECT_EQ(RowGrain(n), 128);
  EXPECT_EQ(RowGrain(0), 16384);
  EXPECT_EQ(RowGrain(100000), 1);
  return absl::OkStatus();
}

HEADER_EXAMPLE(OpsReduce) {
  Values v;
  Value x = v.x, scores = v.scores;
  Sum(x, {-1}, /*keepdims=*/true);   // (B, T, E) -> (B, T, 1)
  Mean(x);                            // (B, T, E) -> ()
  Max(scores, {-1});                  // (B, T, S) -> (B, T)
  EXPECT_EQ(Sum(x, {-1}, true).shape(), Shape({B, T, 1}));
  return v.g.status();
}

HEADER_EXAMPLE(OpsRegistry) {
  for (const OpDef* op : AllOps()) std::cout << op->name << "\n";
  EXPECT_NE(FindOp("matmul"), nullptr);
  return absl::OkStatus();
}

HEADER_EXAMPLE(OpsSelect) {
  Values v;
  Graph& g = v.g;
  {
    Value scores = v.scores;
    Value keep = g.Input("keep", DType::kBool, {B, 1, 1, S});
    Value s = Where(keep, scores, ScalarLike(scores, -1e9));  // mask scores
    EXPECT_EQ(s.shape(), scores.shape());
  }
  DAGRAD_RETURN_IF_ERROR(g.status());
  Graph g2;
  {
    Graph& g = g2;
    Value mask = g.Input("mask", DType::kBool, {B, 1, S});
    Value x = g.Input("x", DType::kFloat32, {B, T, S});
    Value y = Where(mask, x, ScalarLike(x, 0.0));   // (B, T, S)
    EXPECT_EQ(y.shape(), Shape({B, T, S}));
  }
  return g2.status();
}

HEADER_EXAMPLE(OpsShape) {
  Values v;
  Graph& g = v.g;
  constexpr int64_t T = 4;
  Value x = g.Input("x4", DType::kFloat32, {B, T, H, E / H});
  Value a = g.Input("a", DType::kFloat32, {B, T, E}), b = g.Input("b", DType::kFloat32, {B, T, E});
  Reshape(x, {B, T, H, -1});       // one -1 is inferred; a view, no copy
  Permute(x, {0, 2, 1, 3});        // (B, T, H, D) -> (B, H, T, D)
  Transpose(x, -1, -2);            // swap two axes
  BroadcastTo(b, Shape({B, T, E}));
  Concat({a, b}, -1);  Slice(x, 1, 0, 4);
  EXPECT_EQ(Concat({a, b}, -1).shape(), Shape({B, T, 2 * E}));
  return g.status();
}

HEADER_EXAMPLE(OpsSmallGemm) {
  const int64_t m = 2, n = 2, k = 2, rsa = 2, csa = 1, rsb = 2, csb = 1;
  const float a[] = {1, 2, 3, 4}, b[] = {1, 0, 0, 1};
  float c[4] = {};
  DAGRAD_ASSIGN_OR_RETURN(const CpuKernels* kernels, ActiveKernels());
  if (IsSmallGemm(*kernels, m, n, k))
    SmallGemm<float>(*kernels, m, n, k, 1, a, rsa, csa, b, rsb, csb, 0, c, n);
  EXPECT_EQ(c[3], 4);
  return absl::OkStatus();
}

HEADER_EXAMPLE(OpsExpShiftSum) {
  DAGRAD_ASSIGN_OR_RETURN(const CpuKernels* kernels, ActiveKernels());
  const float row[] = {1, 2, 3};
  float e[3];
  const double sum = ExpShiftSum<float>(*kernels, row, e, 3, 3.0f);  // e[2] == 1
  EXPECT_EQ(e[2], 1.0f);
  EXPECT_NEAR(sum, 1 + std::exp(-1.0) + std::exp(-2.0), 1e-6);
  return absl::OkStatus();
}

HEADER_EXAMPLE(OpsSoftmax) {
  Values v;
  Graph& g = v.g;
  Value scores = v.scores, lens = v.lens, logits = v.logits;
  Value pad_keep = g.Input("pad_keep", DType::kBool, {B, S});
  {
    Value w = MaskedSoftmax(scores, {.valid_lens = lens, .causal = true},
                            1.0 / std::sqrt(64.0));   // (B, H, T, S) -> same
    Value p = Softmax(logits);                        // (..., C) -> (..., C)
    EXPECT_EQ(w.shape(), scores.shape());
    EXPECT_EQ(p.shape(), logits.shape());
  }
  // scores (B, H, T, S); lens (B): keys of sample b beyond lens[b] are padding.
  Value w = MaskedSoftmax(scores, {.valid_lens = lens}, 0.125);
  Value w2 = MaskedSoftmax(scores, {.keep = Reshape(pad_keep, {B, 1, 1, S})});
  Value w3 = MaskedSoftmax(scores, {.causal = true, .causal_offset = S - T});
  Value p = Softmax(logits);   // (B, C): each row sums to 1
  Value logp = LogSoftmax(logits);   // (B, C)
  Value weights = w, dweights = w2;
  Value dscores = SoftmaxGrad(weights, dweights);   // (B, H, T, S)
  EXPECT_EQ(dscores.shape(), w3.shape());
  EXPECT_EQ(logp.shape(), p.shape());
  return g.status();
}

HEADER_EXAMPLE(OpsVectorMath) {
  const int64_t n = 3;
  const float x[] = {0, 1, 2};
  float y[3];
  float m = RowMax(x, n);   // -inf for n == 0 or a row of -inf; NaN if any is
  for (int64_t k = 0; k < n; ++k) y[k] = VectorExp(x[k] - m);
  double s = SumLanes(n, [&](int64_t i) { return static_cast<double>(x[i]); });
  EXPECT_EQ(m, 2);
  EXPECT_EQ(y[2], 1);
  EXPECT_EQ(s, 3);
  return absl::OkStatus();
}

}  // namespace
}  // namespace dagrad
