// tests/autodiff/support/op_coverage.h
//
// Which modes cover each op: one row per op of AllOps() (ops/registry.h),
// then one per composite case (tests/autodiff/support/op_case.h). OpCaseCoverage
// (tests/autodiff/op_case_test.cc, over the op rows, and
// tests/models/composite_case_test.cc, over the composite cases of the
// models layer's binary) fails on an incomplete row; `dagrad_bench
// --op_coverage` prints the table, through the timing hook this file
// installs (tools/bench/op_timing.h).
//
//   op         cases  configs  gradcheck  cuda  isa   16-bit   timing
//   add        1      4        yes        yes   yes   -        bench
//   relu_grad  1      1        backward   yes   yes   -        config
//   reshape    1      2        yes        view  view  bf16 f16 bench

#ifndef DAGRAD_TESTS_SUPPORT_OP_COVERAGE_H_
#define DAGRAD_TESTS_SUPPORT_OP_COVERAGE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/op.h"

namespace dagrad::testing {

struct OpCoverage {
  std::string op;
  int cases = 0;    // cases named after the op: exactly 1 when complete
  int configs = 0;  // configs of its case
  // "yes"; "view" (an always-a-view op is in the graph, no kernel runs);
  // "not differentiable", "backward-only", "integer output" (gradcheck
  // does not apply); "composite"; "NO".
  std::string gradcheck, cuda, isa;
  // The 16-bit floats the op takes that a reduced config runs it in ("bf16
  // f16"); "-" for an op that takes none; "NO".
  std::string reduced;
  std::string timing;   // "bench", "config" (a config's own size) or "NO"
  std::string problem;  // why the row is incomplete; empty when complete
};

// CoverageRows computes the table (it builds and compiles every config on
// the CPU; errors are those of a config that does not build).
absl::StatusOr<std::vector<OpCoverage>> CoverageRows();

// CompositeCoverageRows computes the composite cases' rows only: those of a
// binary that links the layers' composite cases but not the ops' cases.
absl::StatusOr<std::vector<OpCoverage>> CompositeCoverageRows();

// CoverageOf computes the row of one op (registered or not).
absl::StatusOr<OpCoverage> CoverageOf(const OpDef& op);

// ExpectComplete adds a GoogleTest failure for each incomplete row, and
// then one with the whole table.
void ExpectComplete(const std::vector<OpCoverage>& rows);

// FormatCoverage prints the rows as an aligned table.
std::string FormatCoverage(const std::vector<OpCoverage>& rows);

}  // namespace dagrad::testing

#endif  // DAGRAD_TESTS_SUPPORT_OP_COVERAGE_H_
