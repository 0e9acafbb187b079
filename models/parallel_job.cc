#include "models/parallel_job.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "engine/status_macros.h"

namespace dagrad::models {
namespace {

std::string Serialize(const std::map<std::string, std::string>& config) {
  std::string s;
  for (const auto& [key, value] : config) absl::StrAppend(&s, key, "=", value, "\n");
  return s;
}

std::map<std::string, std::string> Deserialize(const std::string& s) {
  std::map<std::string, std::string> config;
  for (absl::string_view line : absl::StrSplit(s, '\n', absl::SkipEmpty())) {
    std::pair<std::string, std::string> kv = absl::StrSplit(line, absl::MaxSplits('=', 1));
    config[kv.first] = kv.second;
  }
  return config;
}

// RankZeroText returns rank 0's `text` on every rank.
absl::StatusOr<std::string> RankZeroText(const Job& job, std::string text) {
  int64_t size = static_cast<int64_t>(text.size());
  DAGRAD_RETURN_IF_ERROR(job.comm->Broadcast(&size, sizeof(size), 0));
  text.resize(size);
  DAGRAD_RETURN_IF_ERROR(job.comm->Broadcast(text.data(), size, 0));
  return text;
}

}  // namespace

absl::Status CheckSameConfig(const Job& job, const std::map<std::string, std::string>& config) {
  if (!job.parallel()) return absl::OkStatus();
  DAGRAD_ASSIGN_OR_RETURN(const std::string zero, RankZeroText(job, Serialize(config)));
  std::vector<std::string> differences;
  const std::map<std::string, std::string> root = Deserialize(zero);
  for (const auto& [key, value] : config) {
    auto it = root.find(key);
    const std::string theirs = it == root.end() ? "(none)" : it->second;
    if (theirs != value) {
      differences.push_back(
          absl::StrCat(key, ": rank 0 ", theirs, ", rank ", job.rank, " ", value));
    }
  }
  double mismatched = differences.empty() ? 0 : 1;
  DAGRAD_RETURN_IF_ERROR(
      job.comm->AllReduceSum({.data = &mismatched, .count = 1, .dtype = DType::kFloat64}));
  if (mismatched == 0) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "the ranks were given different configs (", mismatched, " of ", job.size,
      " ranks differ from rank 0)",
      differences.empty() ? "" : absl::StrCat(": ", absl::StrJoin(differences, "; "))));
}

int AgreedStopSignal(const Job& job, int local_signal) {
  if (!job.parallel()) return local_signal;
  // The mean signal of the ranks that saw one (mpirun forwards one signal
  // to all): the same on every rank.
  double signals[2] = {local_signal != 0 ? 1.0 : 0.0, static_cast<double>(local_signal)};
  if (!job.comm->AllReduceSum({.data = signals, .count = 2, .dtype = DType::kFloat64}).ok()) {
    return local_signal;
  }
  return signals[0] > 0 ? static_cast<int>(signals[1] / signals[0]) : 0;
}

std::string StepProfile(const OpProfile& profile, const Job& job) {
  std::string out = "\ntraining step, by op:\n" + profile.ToString();
  if (!job.parallel()) return out;
  double total = 0, waiting = 0;
  for (const auto& [op, entry] : profile.by_op) {
    total += entry.seconds;
    if (op == "all_reduce_wait" || op == "all_reduce") waiting += entry.seconds;
  }
  const double runs = static_cast<double>(std::max<int64_t>(profile.runs, 1));
  return out + absl::StrFormat(
                   "waiting on communication: %.3f ms per step, %.1f%% of the step's %.3f ms\n",
                   1e3 * waiting / runs, total > 0 ? 100 * waiting / total : 0.0,
                   1e3 * total / runs);
}

}  // namespace dagrad::models
