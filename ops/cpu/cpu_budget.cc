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

// Quota is cpu.max's text read: QUOTA / PERIOD CPUs ("150000 100000": 1.5),
// none for "max PERIOD", unreadable for text that is neither.
struct Quota {
  bool none = false, unreadable = false;
  int64_t quota = 0, period = 1;
  int RoundedUp() const {
    return static_cast<int>(std::min<int64_t>(quota / period + (quota % period != 0), 1 << 20));
  }
  bool Below(const Quota& other) const {  // fewer CPUs, compared exactly
    return static_cast<__int128>(quota) * other.period < static_cast<__int128>(other.quota) * period;
  }
};

Quota ReadQuota(absl::string_view text) {
  std::vector<absl::string_view> f =
      absl::StrSplit(absl::StripAsciiWhitespace(text), ' ', absl::SkipEmpty());
  Quota q;
  if (f.size() == 2 && f[0] == "max" && absl::SimpleAtoi(f[1], &q.period) && q.period > 0) {
    q.none = true;
  } else if (f.size() != 2 || !absl::SimpleAtoi(f[0], &q.quota) ||
             !absl::SimpleAtoi(f[1], &q.period) || q.quota <= 0 || q.period <= 0) {
    q.unreadable = true;
  }
  return q;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return "";
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// CgroupDirectories is `path` ("/a/b") and every directory above it, up to
// and including the root, under each of `bases`.
std::vector<std::string> CgroupDirectories(const std::vector<std::string>& bases,
                                           absl::string_view path) {
  std::vector<std::string> dirs;
  std::string dir(absl::StripSuffix(path, "/"));
  while (true) {
    for (const std::string& base : bases) dirs.push_back(base + dir);
    if (dir.empty()) return dirs;
    const size_t slash = dir.rfind('/');
    dir.resize(slash == std::string::npos ? 0 : slash);
  }
}

// QuotaOf is the quota a cgroup directory sets in cpu.max's form: its v2
// cpu.max, or its v1 quota and period ("-1" is no quota); "" when none.
std::string QuotaOf(const std::string& dir, bool v2,
                    const std::function<std::string(const std::string&)>& read_file) {
  if (v2) return std::string(absl::StripAsciiWhitespace(read_file(dir + "/cpu.max")));
  const std::string quota(absl::StripAsciiWhitespace(read_file(dir + "/cpu.cfs_quota_us")));
  const std::string period(absl::StripAsciiWhitespace(read_file(dir + "/cpu.cfs_period_us")));
  if (quota.empty() || quota == "-1") return "";
  return absl::StrCat(quota, " ", period);
}

}  // namespace

std::string CgroupCpuMax(absl::string_view proc_self_cgroup,
                         const std::function<std::string(const std::string&)>& read_file) {
  std::string tightest, unreadable;
  for (absl::string_view line : absl::StrSplit(proc_self_cgroup, '\n', absl::SkipEmpty())) {
    // "ID:CONTROLLERS:PATH": "0::/job" under v2, "4:cpu,cpuacct:/job" under v1.
    const std::vector<absl::string_view> f = absl::StrSplit(line, absl::MaxSplits(':', 2));
    if (f.size() != 3) continue;
    const std::vector<absl::string_view> controllers = absl::StrSplit(f[1], ',');
    const bool v2 = f[0] == "0" && f[1].empty();
    if (!v2 && std::find(controllers.begin(), controllers.end(), "cpu") == controllers.end()) {
      continue;
    }
    const std::vector<std::string> bases =
        v2 ? std::vector<std::string>{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"}
           : std::vector<std::string>{absl::StrCat("/sys/fs/cgroup/", f[1]), "/sys/fs/cgroup/cpu"};
    for (const std::string& dir : CgroupDirectories(bases, f[2])) {
      const std::string text = QuotaOf(dir, v2, read_file);
      const Quota quota = ReadQuota(text);
      if (text.empty() || quota.none) continue;
      if (quota.unreadable) {
        if (unreadable.empty()) unreadable = text;
      } else if (tightest.empty() || quota.Below(ReadQuota(tightest))) {
        tightest = text;
      }
    }
  }
  return tightest.empty() ? unreadable : tightest;
}

ThreadBudget BudgetThreads(const CpuLimits& limits) {
  const int hardware = std::max(limits.hardware_threads, 1);
  const bool bound = limits.affinity_cpus > 0 && limits.affinity_cpus < hardware;
  int n = limits.affinity_cpus > 0 ? limits.affinity_cpus : hardware;
  std::string source = absl::StrCat(hardware, " hardware threads");
  if (limits.affinity_cpus > 0) absl::StrAppend(&source, ", affinity ", limits.affinity_cpus);
  if (!limits.cgroup_cpu_max.empty()) {
    const Quota quota = ReadQuota(limits.cgroup_cpu_max);
    const std::string text(absl::StripAsciiWhitespace(limits.cgroup_cpu_max));
    if (quota.unreadable) {
      absl::StrAppend(&source, ", cgroup cpu.max '", text, "' unreadable (ignored)");
    } else if (!quota.none) {
      n = std::min(n, quota.RoundedUp());
      absl::StrAppend(&source, ", cgroup cpu.max '", text, "' (", quota.RoundedUp(), ")");
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
  limits.cgroup_cpu_max = CgroupCpuMax(ReadFile("/proc/self/cgroup"), ReadFile);
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"}) {
    if (const char* env = std::getenv(name); env != nullptr && limits.mpi_local_ranks.empty()) {
      limits.mpi_local_ranks = env;
    }
  }
  return limits;
}

}  // namespace dagrad
