// tests/autodiff/support/isa_check.h
//
// The isa mode of the op cases (tests/autodiff/support/op_case.h): a case's outputs
// and gradients at every CPU kernel level this machine runs, against the
// baseline level's, compared as the backend cross-check compares
// (CompareTensors: bit for bit where the case is exact or the values are
// integers, else within its rtol).
//
// The level is chosen once per process (ops/cpu/internal/cpu_isa.h), so the case runs in
// this process at its own level and, for each other level, in a child: this
// test binary run again as
//
//   DAGRAD_CPU_ISA=<level> dagrad_autodiff_tests --op_case_server
//
// which reads requests "NAME<tab>FILE" on stdin, writes the outputs of the
// config test NAME to FILE (safetensors; an error in its metadata) and
// answers "ok" on file descriptor 3 (tests/autodiff/support/op_case_main.cc).
// One child per level serves every case of the test process, and
// StopIsaChildren ends them. By hand:
//
//   printf 'add_same_shape_f32\t/tmp/o.safetensors\n' |
//     DAGRAD_CPU_ISA=avx2 dagrad_autodiff_tests --op_case_server 3>&1
//
//   ASSERT_OK(IsaCheck(ToCrossCase(op_case, config, DType::kFloat32)));

#ifndef DAGRAD_TESTS_SUPPORT_ISA_CHECK_H_
#define DAGRAD_TESTS_SUPPORT_ISA_CHECK_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/tensor.h"
#include "tests/autodiff/support/backend_check.h"

namespace dagrad::testing {

// CpuOutputs runs `c` on the CPU with a poisoned arena, c.runs times with
// fresh inputs, and returns every fetch of every run in order, or the
// first error.
absl::StatusOr<std::vector<Tensor>> CpuOutputs(const CrossCase& c);

// WriteCaseOutputs writes CpuOutputs of the op-case config test `name`
// (ConfigTestName) to `path`; NotFound when no config has that name.
absl::Status WriteCaseOutputs(const std::string& name, const std::string& path);

// ServeCaseOutputs is the child's loop: WriteCaseOutputs for each request
// on stdin, the reply ("ok", or the error) on descriptor 3, until stdin
// ends. Returns the process's exit code.
int ServeCaseOutputs();

// StopIsaChildren ends the children IsaCheck started, and returns the first
// error of one that did not exit 0 (a sanitizer's report at its exit, say).
absl::Status StopIsaChildren();

// IsaCheck compares `c` at each level of CpuIsaRunnable() above the
// baseline with the baseline: OK, or the first difference, naming the
// level. Unavailable when this CPU (or build) runs the baseline only.
absl::Status IsaCheck(const CrossCase& c);

}  // namespace dagrad::testing

#endif  // DAGRAD_TESTS_SUPPORT_ISA_CHECK_H_
