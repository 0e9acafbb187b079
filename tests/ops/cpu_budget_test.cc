// The default thread count (ops/cpu/cpu_budget.h) for made-up limits: affinity
// masks, cgroup cpu.max files and MPI ranks on the node.

#include "ops/cpu/cpu_budget.h"

#include <map>
#include <string>

#include "gtest/gtest.h"

namespace dagrad {
namespace {

bool Names(const ThreadBudget& b, const std::string& part) {
  return b.source.find(part) != std::string::npos;
}

TEST(BudgetThreads, NoLimitsIsTheHardwareThreads) {
  const ThreadBudget b = BudgetThreads({.hardware_threads = 8});
  EXPECT_EQ(b.threads, 8);
  EXPECT_EQ(b.source, "8 hardware threads -> 8");
}

TEST(BudgetThreads, AffinityMaskBounds) {
  const ThreadBudget b = BudgetThreads({.hardware_threads = 8, .affinity_cpus = 3});
  EXPECT_EQ(b.threads, 3);
  EXPECT_TRUE(Names(b, "affinity 3")) << b.source;
}

TEST(BudgetThreads, CgroupQuotaRoundsUp) {
  const CpuLimits limits{.hardware_threads = 8, .affinity_cpus = 8, .cgroup_cpu_max = "150000 100000\n"};
  const ThreadBudget b = BudgetThreads(limits);
  EXPECT_EQ(b.threads, 2);  // 1.5 CPUs
  EXPECT_TRUE(Names(b, "cgroup cpu.max '150000 100000' (2)")) << b.source;
  EXPECT_EQ(BudgetThreads({.hardware_threads = 8, .cgroup_cpu_max = "50000 100000"}).threads, 1);
}

TEST(BudgetThreads, CgroupQuotaAboveTheMaskLeavesTheMask) {
  EXPECT_EQ(BudgetThreads({.hardware_threads = 8, .affinity_cpus = 2,
                           .cgroup_cpu_max = "400000 100000"}).threads, 2);
}

TEST(BudgetThreads, CgroupWithoutQuotaChangesNothing) {
  const ThreadBudget b = BudgetThreads({.hardware_threads = 4, .cgroup_cpu_max = "max 100000\n"});
  EXPECT_EQ(b.threads, 4);
  EXPECT_FALSE(Names(b, "cgroup")) << b.source;
}

TEST(BudgetThreads, UnreadableCgroupIsNamedAndIgnored) {
  for (const char* text : {"garbage", "100000", "0 100000", "-5 100000", "100 0", "max"}) {
    const ThreadBudget b = BudgetThreads({.hardware_threads = 4, .cgroup_cpu_max = text});
    EXPECT_EQ(b.threads, 4) << text;
    EXPECT_TRUE(Names(b, "unreadable (ignored)")) << text << ": " << b.source;
  }
}

// Files is a made-up /sys/fs/cgroup: CgroupCpuMax's read_file.
struct Files {
  std::map<std::string, std::string> text;
  std::string operator()(const std::string& path) const {
    auto it = text.find(path);
    return it == text.end() ? "" : it->second;
  }
};

TEST(CgroupCpuMax, V2ReadsTheProcessesCgroupAndEveryOneAbove) {
  const Files files{{{"/sys/fs/cgroup/cpu.max", "max 100000\n"},
                     {"/sys/fs/cgroup/user.slice/cpu.max", "300000 100000\n"},
                     {"/sys/fs/cgroup/user.slice/job/cpu.max", "max 100000\n"}}};
  EXPECT_EQ(CgroupCpuMax("0::/user.slice/job\n", files), "300000 100000");
  EXPECT_EQ(CgroupCpuMax("0::/\n", files), "");
  EXPECT_EQ(CgroupCpuMax("0::/other\n", files), "");
}

TEST(CgroupCpuMax, TheTightestQuotaWins) {
  const Files files{{{"/sys/fs/cgroup/a/cpu.max", "150000 100000"},
                     {"/sys/fs/cgroup/a/b/cpu.max", "100000 50000"}}};
  EXPECT_EQ(CgroupCpuMax("0::/a/b", files), "150000 100000");  // 1.5 CPUs, not 2
}

TEST(CgroupCpuMax, V1ReadsTheCpuControllersQuotaAndPeriod) {
  const Files files{{{"/sys/fs/cgroup/cpu,cpuacct/docker/c1/cpu.cfs_quota_us", "50000\n"},
                     {"/sys/fs/cgroup/cpu,cpuacct/docker/c1/cpu.cfs_period_us", "100000\n"},
                     {"/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "-1\n"},
                     {"/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us", "100000\n"}}};
  const std::string self = "12:memory:/docker/c1\n4:cpu,cpuacct:/docker/c1\n0::/\n";
  EXPECT_EQ(CgroupCpuMax(self, files), "50000 100000");
  EXPECT_EQ(BudgetThreads({.hardware_threads = 8, .cgroup_cpu_max = CgroupCpuMax(self, files)})
                .threads, 1);
  // A container sees its own cgroup as the mount's root: "-1" there is no quota.
  EXPECT_EQ(CgroupCpuMax("4:cpu,cpuacct:/\n", files), "");
}

TEST(CgroupCpuMax, AnUnreadableQuotaIsNamedOnlyWhenNoneIsRead) {
  Files files{{{"/sys/fs/cgroup/a/cpu.max", "garbage"}}};
  EXPECT_EQ(CgroupCpuMax("0::/a", files), "garbage");
  files.text["/sys/fs/cgroup/cpu.max"] = "200000 100000";
  EXPECT_EQ(CgroupCpuMax("0::/a", files), "200000 100000");
  for (const char* self : {"", "nonsense", "0::relative", "x:cpu:", ":::"}) {
    EXPECT_EQ(CgroupCpuMax(self, Files{}), "") << self;
  }
}

TEST(BudgetThreads, MpiRanksShareTheNodesCores) {
  const ThreadBudget b =
      BudgetThreads({.hardware_threads = 8, .affinity_cpus = 8, .mpi_local_ranks = "3"});
  EXPECT_EQ(b.threads, 2);  // 8 / 3, rounded down
  EXPECT_TRUE(Names(b, "/ 3 MPI ranks on the node")) << b.source;
  EXPECT_EQ(BudgetThreads({.hardware_threads = 2, .mpi_local_ranks = "4"}).threads, 1);
}

TEST(BudgetThreads, MpiRanksAfterTheCgroupQuota) {
  EXPECT_EQ(BudgetThreads({.hardware_threads = 16, .affinity_cpus = 16,
                           .cgroup_cpu_max = "800000 100000", .mpi_local_ranks = "2"}).threads, 4);
}

TEST(BudgetThreads, RanksBoundToTheirOwnCpusAreNotDividedAgain) {
  const ThreadBudget b =
      BudgetThreads({.hardware_threads = 8, .affinity_cpus = 4, .mpi_local_ranks = "2"});
  EXPECT_EQ(b.threads, 4);
  EXPECT_TRUE(Names(b, "bound: not divided")) << b.source;
}

TEST(BudgetThreads, UnreadableRankCountIsNamedAndIgnored) {
  for (const char* text : {"two", "0", "-1"}) {
    const ThreadBudget b = BudgetThreads({.hardware_threads = 4, .mpi_local_ranks = text});
    EXPECT_EQ(b.threads, 4) << text;
    EXPECT_TRUE(Names(b, "unreadable (ignored)")) << text << ": " << b.source;
  }
}

TEST(BudgetThreads, ThisProcessGetsAtLeastOneThread) {
  const ThreadBudget b = BudgetThreads(ReadCpuLimits());
  EXPECT_GE(b.threads, 1);
  EXPECT_FALSE(b.source.empty());
}

}  // namespace
}  // namespace dagrad
