// tests/support/gpu_skip.h
//
// SKIP_WITHOUT_GPU() skips a test, saying why, when no CUDA device is
// available (no GPU, no driver, backend not built), and fails it when one
// is there but unusable (e.g. kernels built for another architecture).
//
//   TEST(Cuda, Something) {
//     SKIP_WITHOUT_GPU();
//     ASSERT_OK(CrossCheck(c, [] { return CudaDevice(); }));
//   }

#ifndef DAGRAD_TESTS_SUPPORT_GPU_SKIP_H_
#define DAGRAD_TESTS_SUPPORT_GPU_SKIP_H_

#include "absl/status/status.h"
#include "engine/cuda/cuda_device.h"
#include "gtest/gtest.h"

namespace dagrad::testing {

// GpuStatus says whether a CUDA device can be made (asked once: without a
// driver every attempt costs tens of milliseconds).
inline const absl::Status& GpuStatus() {
  static const absl::Status* const status = new absl::Status(CudaDevice().status());
  return *status;
}

}  // namespace dagrad::testing

#define SKIP_WITHOUT_GPU()                                                              \
  do {                                                                                  \
    if (absl::IsUnavailable(::dagrad::testing::GpuStatus())) {                          \
      GTEST_SKIP() << "no CUDA device, CPU/CUDA cross-check skipped: "                  \
                   << ::dagrad::testing::GpuStatus().message();                         \
    }                                                                                   \
    ASSERT_TRUE(::dagrad::testing::GpuStatus().ok()) << ::dagrad::testing::GpuStatus(); \
  } while (false)

#endif  // DAGRAD_TESTS_SUPPORT_GPU_SKIP_H_
