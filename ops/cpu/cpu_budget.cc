#include "ops/cpu/cpu_budget.h"

#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace dagrad {
namespace {

// QuotaCpus is cpu.max's quota in CPUs rounded up ("150000 100000": 2),
// 0 for "max" (no quota), or -1 when the text is not "QUOTA PERIOD".
int QuotaCpus(absl::string_view text) {
  std::vector<absl::string_view> f =
      absl::StrSplit(absl::StripAsciiWhitespace(text), ' ', absl::SkipEmpty());
  int64_t quota = 0, period = 0;
  if (f.size() == 2 && f[0] == "max" && absl::SimpleAtoi(f[1], &period) && period > 0) return 0;
  if (f.size() != 2 || !absl::SimpleAtoi(f[0], &quota) || !absl::SimpleAtoi(f[1], &period) ||
      quota <= 0 || period <= 0) {
    return -1;
  }
  return static_cast<int>(std::min<int64_t>((quota + period - 1) / period, 1 << 20));
}

std::string ReadFile(const char* path) {
  std::ifstream in(path);
  if (!in) return "";
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

ThreadBudget BudgetThreads(const CpuLimits& limits) {
  const int hardware = std::max(limits.hardware_threads, 1);
  const bool bound = limits.affinity_cpus > 0 && limits.affinity_cpus < hardware;
  int n = limits.affinity_cpus > 0 ? limits.affinity_cpus : hardware;
  std::string source = absl::StrCat(hardware, " hardware threads");
  if (limits.affinity_cpus > 0) absl::StrAppend(&source, ", affinity ", limits.affinity_cpus);
  if (!limits.cgroup_cpu_max.empty()) {
    const int quota = QuotaCpus(limits.cgroup_cpu_max);
    const std::string text(absl::StripAsciiWhitespace(limits.cgroup_cpu_max));
    if (quota < 0) {
      absl::StrAppend(&source, ", cgroup cpu.max '", text, "' unreadable (ignored)");
    } else if (quota > 0) {
      n = std::min(n, quota);
      absl::StrAppend(&source, ", cgroup cpu.max '", text, "' (", quota, ")");
    }
  }
  if (!limits.mpi_local_ranks.empty()) {
    int ranks = 0;
    if (!absl::SimpleAtoi(limits.mpi_local_ranks, &ranks) || ranks < 1) {
      absl::StrAppend(&source, ", MPI ranks on the node '", limits.mpi_local_ranks,
                      "' unreadable (ignored)");
    } else if (bound) {
      absl::StrAppend(&source, ", ", ranks, " MPI ranks on the node (bound: not divided)");
    } else {
      n = std::max(1, n / ranks);
      absl::StrAppend(&source, ", / ", ranks, " MPI ranks on the node");
    }
  }
  return {n, absl::StrCat(source, " -> ", n)};
}

CpuLimits ReadCpuLimits() {
  CpuLimits limits;
  limits.hardware_threads = std::max(1u, std::thread::hardware_concurrency());
  cpu_set_t mask;
  if (sched_getaffinity(0, sizeof(mask), &mask) == 0) limits.affinity_cpus = CPU_COUNT(&mask);
  limits.cgroup_cpu_max = ReadFile("/sys/fs/cgroup/cpu.max");
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"}) {
    if (const char* env = std::getenv(name); env != nullptr && limits.mpi_local_ranks.empty()) {
      limits.mpi_local_ranks = env;
    }
  }
  return limits;
}

}  // namespace dagrad
