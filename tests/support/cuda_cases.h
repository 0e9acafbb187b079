// tests/support/cuda_cases.h
//
// The table of backend cross-check cases (tests/support/backend_check.h)
// that tests/cuda_test.cc runs on the CPU and on CUDA: every op, in each
// dtype its CPU kernel takes, through each of its CUDA kernel's paths
// (broadcast or not, rows or columns, every matmul batching), with its
// gradients; dropout masks bit for bit; the data errors the device
// detects, which must read exactly as the CPU's; and (cuda_edge_cases.cc)
// NaN, wrap-around, signed zeros and sizes past the launch grids' limits.

#ifndef DAGRAD_TESTS_SUPPORT_CUDA_CASES_H_
#define DAGRAD_TESTS_SUPPORT_CUDA_CASES_H_

#include <vector>

#include "tests/support/backend_check.h"

namespace dagrad::testing {

// CudaCrossCases returns the cases, built once.
const std::vector<CrossCase>& CudaCrossCases();

}  // namespace dagrad::testing

#endif  // DAGRAD_TESTS_SUPPORT_CUDA_CASES_H_
