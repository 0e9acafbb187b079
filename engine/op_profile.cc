// OpProfile (engine/executor.h): adding a run's times, and the table.

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "engine/executor.h"

namespace dagrad {

void OpProfile::AddRun(const OpProfile& run) {
  for (const auto& [name, e] : run.by_op) {
    by_op[name].seconds += e.seconds;
    by_op[name].calls += e.calls;
  }
  by_step.resize(run.by_step.size());
  for (size_t i = 0; i < run.by_step.size(); ++i) {
    by_step[i].seconds += run.by_step[i].seconds;
    by_step[i].last_start = run.by_step[i].last_start;
    by_step[i].last_seconds = run.by_step[i].last_seconds;
  }
  ++runs;
}

std::string OpProfile::ToString() const {
  std::vector<std::pair<std::string, Entry>> rows(by_op.begin(), by_op.end());
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    return a.second.seconds != b.second.seconds ? a.second.seconds > b.second.seconds
                                                : a.first < b.first;
  });
  double total = 0;
  for (const auto& [name, e] : rows) total += e.seconds;
  const double per = runs > 0 ? 1.0 / runs : 1.0;
  std::string out = absl::StrFormat("%-20s %10s %7s %8s\n", "op", "ms/run", "share", "calls");
  for (const auto& [name, e] : rows) {
    absl::StrAppendFormat(&out, "%-20s %10.3f %6.1f%% %8.1f\n", name, e.seconds * per * 1e3,
                          total > 0 ? 100 * e.seconds / total : 0.0, e.calls * per);
  }
  absl::StrAppendFormat(&out, "%-20s %10.3f\n", "total", total * per * 1e3);
  return out;
}

}  // namespace dagrad
