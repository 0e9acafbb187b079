// tests/autodiff/support/reduced_check.h
//
// The reduced mode of the op cases (tests/autodiff/support/op_case.h): a config run
// with its inputs in a 16-bit float (bfloat16 or float16) against the same
// config in float32, on the CPU. The float32 run is fed the 16-bit run's
// inputs widened (exactly), so the two differ only by what the op rounds
// in 16 bits; every output and gradient must agree within `ulps` units in
// the last place of the 16-bit format, taken at the largest magnitude of
// the float32 tensor (2^-7 per ulp for bfloat16, 2^-10 for float16):
//
//   max |reduced - float32| <= ulps * 2^-p * max |float32|
//
// with NaNs and infinities in the same places, and integer or bool
// tensors equal. The gradients are taken as the backend check takes them
// (BuildCase), of a float32 loss: a 16-bit value's gradient is float32
// (GradientDType).
//
//   ASSERT_OK(ReducedCheck(ToCrossCase(c, config, DType::kBFloat16),
//                          ToCrossCase(c, config, DType::kFloat32)));

#ifndef DAGRAD_TESTS_SUPPORT_REDUCED_CHECK_H_
#define DAGRAD_TESTS_SUPPORT_REDUCED_CHECK_H_

#include "absl/status/status.h"
#include "engine/tensor.h"
#include "tests/autodiff/support/backend_check.h"

namespace dagrad::testing {

// The default tolerance, in ulps of the 16-bit format.
inline constexpr double kReducedUlps = 2;

// ReducedCheck runs `reduced` (a case built in bfloat16 or float16) and
// `wide` (the same case in float32) on the CPU, c.runs times with fresh
// inputs, and compares every fetch: OK, or the first disagreement. `ulps`
// 0 means kReducedUlps.
absl::Status ReducedCheck(const CrossCase& reduced, const CrossCase& wide, DType format,
                          double ulps = 0);

// CompareReduced compares one fetch of the 16-bit run with the float32
// run's, as described above.
absl::Status CompareReduced(const Tensor& reduced, const Tensor& wide, DType format,
                            double ulps);

}  // namespace dagrad::testing

#endif  // DAGRAD_TESTS_SUPPORT_REDUCED_CHECK_H_
