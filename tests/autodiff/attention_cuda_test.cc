// Fused attention's CUDA kernels (ops/cuda/attention*.cu) beyond the op
// case's CPU/CUDA cross-check of every config (attention_cases.cc: every
// mask kind, dropout, causal offsets, S != T, odd sizes, head sizes 16 to
// 128, in float32 and float64): the tensor-core (TF32) path against the
// CPU within TF32's rounding, bit-identical backward passes from run to
// run, and a head size too large for shared memory refused with a status.
// Each needs a GPU and skips, saying why, without one.

#include <cstring>
#include <string>
#include <vector>

#include "engine/cuda/cuda_device.h"
#include "ops/attention.h"
#include "ops/autodiff/autodiff.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"
#include "tests/autodiff/support/backend_check.h"
#include "tests/support/gpu_skip.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

// Every mask kind with dropout, queries after cached keys, sizes off the
// tiles, over each head size the kernels take.
void MasksAndHeadSizes(CaseBuilder& b) {
  for (int64_t Dh : {16, 32, 64, 80, 128}) {
    const std::string n = std::to_string(Dh);
    const Value q = b.Float("q" + n, {2, 37, 2 * Dh});
    const Value kv = b.Float("kv" + n, {2, 45, 2 * Dh});
    const Value keep = b.Input("keep" + n, DType::kBool, {2, 1, 1, 45}, 0, 0.8);
    const Value lens = b.Input("lens" + n, DType::kInt64, {2, 37}, 0, 46);
    const Value bias = b.Float("bias" + n, {37, 45});
    b.Out(Attention(q, kv, kv,
                    {.keep = keep, .valid_lens = lens, .bias = bias, .causal = true,
                     .causal_offset = 8},
                    {.heads = 2, .scale = 1.0 / Dh, .dropout = 0.2}));
  }
}

TEST(CudaAttention, Tf32MatchesCpuWithinTf32Rounding) {
  SKIP_WITHOUT_GPU();
  // TF32 keeps 10 bits of each product's inputs: about 1e-3 relative.
  const CrossCase c{.name = "attention_tf32", .build = MasksAndHeadSizes, .training = true,
                    .rtol = 2e-2};
  ASSERT_OK(CrossCheck(c, [] { return CudaDevice(0, {.allow_tf32 = true}); }));
}

TEST(CudaAttention, BackwardIsBitIdenticalFromRunToRun) {
  SKIP_WITHOUT_GPU();
  Graph g;
  Value qkv = g.Input("qkv", DType::kFloat32, {4, 100, 3 * 128});
  Value y = PackedAttention(qkv, {.causal = true}, {.heads = 4, .scale = 0.2, .dropout = 0.1});
  auto grads = Gradients(Sum(y * y), {qkv});
  ASSERT_OK(grads.status());
  Executor exec(g, *CudaDevice(), {.record_runs = false});
  ASSERT_OK_AND_ASSIGN(auto plan, exec.Compile(*grads));
  const Feeds feeds = {{qkv, Random(DType::kFloat32, qkv.shape(), 3)}};
  ASSERT_OK_AND_ASSIGN(auto first, exec.Run(*plan, feeds, {.training = true, .step = 4}));
  ASSERT_OK_AND_ASSIGN(auto second, exec.Run(*plan, feeds, {.training = true, .step = 4}));
  EXPECT_EQ(0, std::memcmp(first[0].raw_data(), second[0].raw_data(),
                           first[0].num_elements() * sizeof(float)));
}

// float64 tiles of head size 512 do not fit a block's shared memory: a
// status naming the head size, not a failed launch.
TEST(CudaAttention, HeadTooLargeForSharedMemoryIsAStatus) {
  SKIP_WITHOUT_GPU();
  Graph g;
  Value qkv = g.Input("qkv", DType::kFloat64, {1, 4, 3 * 512});
  Value y = PackedAttention(qkv);
  Executor exec(g, *CudaDevice());
  ASSERT_OK_AND_ASSIGN(auto plan, exec.Compile({y}));
  EXPECT_STATUS(exec.Run(*plan, {{qkv, Random(DType::kFloat64, qkv.shape(), 1)}}).status(),
                absl::StatusCode::kUnimplemented, "with head size 512 needs");
}

}  // namespace
}  // namespace dagrad::testing
