// tools/bench/op_timing.h
//
// The hook through which the op cases (tests/autodiff/support/op_case.h) reach
// dagrad_bench's timing mode. The tools layer may not include tests/, so
// the cases, when linked into a program (the build links them into
// dagrad_bench when it builds the tests), install an OpTimingSource at
// static-initialisation time; `dagrad_bench --op=NAME` asks it for NAME's
// graph at benchmark size, and `--op_coverage` for the coverage table.
//
//   const OpTimingSource* source = GetOpTimingSource();   // null: no cases linked
//   absl::StatusOr<OpTimingGraph> t = source->build("softmax");

#ifndef DAGRAD_TOOLS_BENCH_OP_TIMING_H_
#define DAGRAD_TOOLS_BENCH_OP_TIMING_H_

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/executor.h"
#include "engine/graph.h"

namespace dagrad {

// One op's graph at benchmark size, with its feeds.
struct OpTimingGraph {
  std::unique_ptr<Graph> graph;
  Feeds feeds;
  std::vector<Value> forward;   // the outputs
  std::vector<Value> backward;  // outputs and gradients; empty: nothing differentiable
  bool training = false;        // run in training mode (dropout)
  std::string size;             // "bench" or "config <name>": what size is timed
};

// The coverage table of the op cases (tests/autodiff/support/op_coverage.h).
struct OpCoverageReport {
  std::string table;
  bool complete = false;  // every op has exactly one case, run in every mode
};

struct OpTimingSource {
  std::function<std::vector<std::string>()> names;  // every case, in order
  std::function<absl::StatusOr<OpTimingGraph>(absl::string_view name)> build;
  std::function<absl::StatusOr<OpCoverageReport>()> coverage;
};

inline std::unique_ptr<OpTimingSource>& OpTimingSlot() {
  static auto* slot = new std::unique_ptr<OpTimingSource>();
  return *slot;
}

// SetOpTimingSource installs `source` (the last call wins); returns true,
// for use in a static initialiser.
inline bool SetOpTimingSource(OpTimingSource source) {
  OpTimingSlot() = std::make_unique<OpTimingSource>(std::move(source));
  return true;
}

// GetOpTimingSource returns the installed source, or null.
inline const OpTimingSource* GetOpTimingSource() { return OpTimingSlot().get(); }

}  // namespace dagrad

#endif  // DAGRAD_TOOLS_BENCH_OP_TIMING_H_
