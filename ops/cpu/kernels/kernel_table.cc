// Table() of the ISA level being compiled: its entries of CpuKernels.

#include "ops/cpu/kernels/cpu_kernels.h"
#include "ops/cpu/kernels/level.h"

#define DAGRAD_STRINGIFY_(x) #x
#define DAGRAD_STRINGIFY(x) DAGRAD_STRINGIFY_(x)

namespace dagrad::kernels::DAGRAD_ISA {

const CpuKernels& Table() {
  static constexpr CpuKernels kTable = {
      .isa = DAGRAD_STRINGIFY(DAGRAD_ISA),
      .small_gemm_f32 = SmallGemmF32,
      .small_gemm_f64 = SmallGemmF64,
      .small_gemm_max_madds = kSmallGemmMaxMadds,
#if defined(DAGRAD_HAVE_BF16_KERNEL)
      .gemm_bf16 = GemmBf16,
#else
      .gemm_bf16 = nullptr,
#endif
      .philox_bits = PhiloxBits,
      .dropout_f32 = DropoutF32,
      .dropout_f64 = DropoutF64,
      .exp_shift_sum_f32 = ExpShiftSumF32,
      .layer_norm_f32 = LayerNormF32,
      .layer_norm_f64 = LayerNormF64,
      .layer_norm_grad_f32 = LayerNormGradF32,
      .layer_norm_grad_f64 = LayerNormGradF64,
      .layer_norm_param_grad_f32 = LayerNormParamGradF32,
      .layer_norm_param_grad_f64 = LayerNormParamGradF64,
      .sum_columns_f32 = SumColumnsF32,
      .softmax_grad_f32 = SoftmaxGradF32,
      .gelu_f32 = GeluF32,
      .gelu_grad_f32 = GeluGradF32,
      .tanh_f32 = TanhF32,
      .sigmoid_f32 = SigmoidF32,
      .attention_softmax_f32 = AttentionSoftmaxF32,
      .attention_softmax_f64 = AttentionSoftmaxF64,
      .attention_grad_f32 = AttentionGradF32,
      .attention_grad_f64 = AttentionGradF64,
  };
  return kTable;
}

}  // namespace dagrad::kernels::DAGRAD_ISA
