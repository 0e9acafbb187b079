// The wait policy (ops/cpu/cpu_threads.h): its parsing, the policy in force as
// `dagrad info` reports it, and the busy-cores decision fed with made-up
// clocks (no timing).

#include "ops/cpu/cpu_threads.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "ops/cpu/cpu_runtime.h"

namespace dagrad {
namespace {

TEST(WaitPolicy, ParsesItsNames) {
  EXPECT_EQ(*ParseWaitPolicy("auto"), WaitPolicy::kAuto);
  EXPECT_EQ(*ParseWaitPolicy(" SPIN "), WaitPolicy::kSpin);
  EXPECT_EQ(*ParseWaitPolicy("Share"), WaitPolicy::kShare);
  EXPECT_EQ(WaitPolicyName(WaitPolicy::kAuto), "auto");
  EXPECT_EQ(WaitPolicyName(WaitPolicy::kSpin), "spin");
  EXPECT_EQ(WaitPolicyName(WaitPolicy::kShare), "share");
}

TEST(WaitPolicy, RefusesOtherTextNamingItAndTheChoices) {
  for (const char* text : {"", "passive", "autos", "1"}) {
    absl::StatusOr<WaitPolicy> p = ParseWaitPolicy(text);
    ASSERT_FALSE(p.ok()) << text;
    EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(p.status().message().find(absl::StrCat("'", text, "'")), std::string::npos);
    EXPECT_NE(p.status().message().find("'auto', 'spin' or 'share'"), std::string::npos);
  }
}

class WaitPolicySet : public ::testing::Test {
 protected:
  void TearDown() override {
    SetWaitPolicy(saved_policy_);
    EXPECT_TRUE(SetNumThreads(saved_threads_).ok());
  }
  WaitPolicy saved_policy_ = ActiveWaitPolicy();
  int saved_threads_ = NumThreads();
};

TEST_F(WaitPolicySet, PolicyInForceIsReported) {
  for (WaitPolicy p : {WaitPolicy::kSpin, WaitPolicy::kAuto, WaitPolicy::kShare}) {
    SetWaitPolicy(p);
    EXPECT_EQ(ActiveWaitPolicy(), p);
    EXPECT_EQ(GetCpuInfo().wait_policy, WaitPolicyName(p));
  }
}

TEST_F(WaitPolicySet, SpinNeverSharesShareAlwaysDoes) {
  ASSERT_TRUE(SetNumThreads(3).ok());
  SetWaitPolicy(WaitPolicy::kSpin);
  EXPECT_FALSE(ShareWork());
  SetWaitPolicy(WaitPolicy::kShare);
  EXPECT_TRUE(ShareWork());
}

TEST_F(WaitPolicySet, OneThreadNeverShares) {
  ASSERT_TRUE(SetNumThreads(1).ok());
  for (WaitPolicy p : {WaitPolicy::kSpin, WaitPolicy::kAuto, WaitPolicy::kShare}) {
    SetWaitPolicy(p);
    EXPECT_FALSE(ShareWork()) << WaitPolicyName(p);
  }
}

TEST(BusyGauge, FirstSampleOnlyStartsTheWindow) {
  BusyGauge gauge;
  gauge.Sample(1'000'000'000, 900'000'000);  // a thread that waited long before
  EXPECT_FALSE(gauge.Busy(1'000'000'000));
}

TEST(BusyGauge, WaitAboveTheFractionMakesItBusyForTheBackoff) {
  BusyGauge gauge;
  gauge.Sample(0, 0);
  gauge.Sample(100, 20);  // waited 20% of the window
  EXPECT_TRUE(gauge.Busy(100));
  EXPECT_TRUE(gauge.Busy(100 + kBusyBackoffNs - 1));
  EXPECT_FALSE(gauge.Busy(100 + kBusyBackoffNs));
}

TEST(BusyGauge, WaitBelowTheFractionIsQuiet) {
  BusyGauge gauge;
  gauge.Sample(0, 0);
  gauge.Sample(100, 10);  // 10%
  EXPECT_FALSE(gauge.Busy(100));
}

TEST(BusyGauge, BusyAgainBeforeAQuietWindowDoublesTheStayUpToTheLimit) {
  BusyGauge gauge;
  gauge.Sample(0, 0);
  int64_t now = 0, backoff = kBusyBackoffNs;
  for (int i = 0; i < 8; ++i) {
    now += backoff + 1;
    gauge.Sample(now, now);  // waited the whole window, which began in the stay
    if (i > 0) backoff = std::min(2 * backoff, kBusyMaxBackoffNs);
    EXPECT_TRUE(gauge.Busy(now + backoff - 1)) << i;
    EXPECT_FALSE(gauge.Busy(now + backoff)) << i;
  }
  EXPECT_EQ(backoff, kBusyMaxBackoffNs);
  // A quiet window wholly after the stay: the next stay is the first's.
  const int64_t waited = now;
  now += backoff;
  gauge.Sample(now, waited);
  gauge.Sample(now + 100, waited);
  gauge.Sample(now + 200, waited + 100);
  EXPECT_TRUE(gauge.Busy(now + 200 + kBusyBackoffNs - 1));
  EXPECT_FALSE(gauge.Busy(now + 200 + kBusyBackoffNs));
}

}  // namespace
}  // namespace dagrad
