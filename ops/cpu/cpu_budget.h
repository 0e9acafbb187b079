// ops/cpu/cpu_budget.h
//
// The default CPU thread count: never more compute threads than the cores
// this process may use (its affinity mask and its cgroups' CPU quota),
// and, under MPI, the node's cores divided among the ranks on the node.
// NumThreads (ops/cpu/cpu_runtime.h) starts from it; `dagrad info` prints its
// source. A count set explicitly (SetNumThreads, DAGRAD_NUM_THREADS,
// --threads) is used as given.
//
//   ThreadBudget budget = BudgetThreads(ReadCpuLimits());
//   // budget.threads >= 1; budget.source says which limit decided

#ifndef DAGRAD_OPS_CPU_CPU_BUDGET_H_
#define DAGRAD_OPS_CPU_CPU_BUDGET_H_

#include <functional>
#include <string>

#include "absl/strings/string_view.h"

namespace dagrad {

// CpuLimits are what bound the default thread count: read from the process
// (ReadCpuLimits) or given by a test.
struct CpuLimits {
  int hardware_threads = 1;    // std::thread::hardware_concurrency
  int affinity_cpus = 0;       // CPUs in sched_getaffinity's mask; 0: unknown
  std::string cgroup_cpu_max;  // in cpu.max's form ("max 100000", "150000 100000"), or ""
  std::string mpi_local_ranks;  // OMPI_COMM_WORLD_LOCAL_SIZE or MPI_LOCALNRANKS, or ""
};

// ThreadBudget is a default count and where it came from, for `dagrad info`.
struct ThreadBudget {
  int threads = 1;
  std::string source;  // e.g. "2 hardware threads, cgroup cpu.max 1.5 CPUs -> 2"
};

// BudgetThreads is the default count for these limits: the CPUs the
// affinity mask allows (else the hardware threads), at most the cgroup's
// quota rounded up, and, when the ranks are not bound to CPUs of their own
// (the mask allows every CPU), divided among the MPI ranks on the node; at
// least 1. Unreadable values are named in the source and ignored.
//
//   ThreadBudget b = BudgetThreads({.hardware_threads = 8, .affinity_cpus = 8,
//                                   .cgroup_cpu_max = "max 100000", .mpi_local_ranks = "2"});
//   // b.threads == 4
ThreadBudget BudgetThreads(const CpuLimits& limits);

// CgroupCpuMax is the tightest CPU quota of the process's cgroup and of
// every cgroup above it, in cpu.max's form ("150000 100000"), or "" when none
// is set: cgroup v2's cpu.max and cgroup v1's cpu.cfs_quota_us and
// cpu.cfs_period_us, under /sys/fs/cgroup (and /sys/fs/cgroup/unified, v2
// beside v1), at the paths `proc_self_cgroup` (/proc/self/cgroup's text)
// names. `read_file` returns a file's text, "" when it is absent. A quota
// that cannot be read is returned only when none can, so that BudgetThreads
// names it.
//
//   std::string q = CgroupCpuMax("0::/user.slice/job\n", [](const std::string& path) {
//     return path == "/sys/fs/cgroup/user.slice/cpu.max" ? std::string("200000 100000") : "";
//   });
//   // q == "200000 100000"
std::string CgroupCpuMax(absl::string_view proc_self_cgroup,
                         const std::function<std::string(const std::string&)>& read_file);

// ReadCpuLimits reads this process's limits.
CpuLimits ReadCpuLimits();

}  // namespace dagrad

#endif  // DAGRAD_OPS_CPU_CPU_BUDGET_H_
