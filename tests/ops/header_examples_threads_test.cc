// The examples of the CPU thread headers (ops/cpu/cpu_threads.h,
// ops/cpu/cpu_budget.h), line for line.
#include "engine/status_macros.h"
#include "ops/cpu/cpu_budget.h"
#include "ops/cpu/cpu_threads.h"
#include "tests/support/header_examples.h"

namespace dagrad {
namespace {

HEADER_EXAMPLE(WaitPolicy) {
  const WaitPolicy saved = ActiveWaitPolicy();
  DAGRAD_ASSIGN_OR_RETURN(WaitPolicy policy, ParseWaitPolicy("spin"));
  SetWaitPolicy(policy);   // ActiveWaitPolicy() == WaitPolicy::kSpin
  EXPECT_EQ(ActiveWaitPolicy(), WaitPolicy::kSpin);
  SetWaitPolicy(saved);
  return absl::OkStatus();
}

HEADER_EXAMPLE(BusyGauge) {
  BusyGauge gauge;
  gauge.Sample(0, 0);
  gauge.Sample(kBusySampleNs, kBusySampleNs / 2);   // waited half the time
  // gauge.Busy(kBusySampleNs) == true, until kBusyBackoffNs later
  EXPECT_TRUE(gauge.Busy(kBusySampleNs));
  EXPECT_FALSE(gauge.Busy(kBusySampleNs + kBusyBackoffNs));
  return absl::OkStatus();
}

HEADER_EXAMPLE(ThreadBudget) {
  ThreadBudget budget = BudgetThreads(ReadCpuLimits());
  // budget.threads >= 1; budget.source says which limit decided
  EXPECT_GE(budget.threads, 1);
  return absl::OkStatus();
}

HEADER_EXAMPLE(BudgetThreads) {
  ThreadBudget b = BudgetThreads({.hardware_threads = 8, .affinity_cpus = 8,
                                  .cgroup_cpu_max = "max 100000", .mpi_local_ranks = "2"});
  // b.threads == 4
  EXPECT_EQ(b.threads, 4);
  return absl::OkStatus();
}

}  // namespace
}  // namespace dagrad
