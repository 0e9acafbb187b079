// ops/math/minmax.h: NaN wins wherever it sits, in either operand and in any
// position of a running reduction, as torch.maximum and torch.amax.

#include "ops/math/minmax.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "gtest/gtest.h"

namespace dagrad {
namespace {

TEST(MaxMin, NaNInEitherOperandGivesNaN) {
  const float nan = NAN;
  EXPECT_TRUE(std::isnan(PropagatingMax(nan, 1.0f)));
  EXPECT_TRUE(std::isnan(PropagatingMax(1.0f, nan)));
  EXPECT_TRUE(std::isnan(PropagatingMin(nan, -1.0f)));
  EXPECT_TRUE(std::isnan(PropagatingMin(-1.0, std::nan(""))));
  EXPECT_TRUE(std::isnan(PropagatingMax(-INFINITY, nan)));
}

TEST(MaxMin, NumbersAsStdMaxAndMin) {
  EXPECT_EQ(PropagatingMax(2.5f, -1.0f), 2.5f);
  EXPECT_EQ(PropagatingMax(-1.0f, INFINITY), INFINITY);
  EXPECT_EQ(PropagatingMin(2.5f, -1.0f), -1.0f);
  EXPECT_EQ(PropagatingMax<int32_t>(-7, 3), 3);
  EXPECT_EQ(PropagatingMin<int64_t>(std::numeric_limits<int64_t>::lowest(), 0),
            std::numeric_limits<int64_t>::lowest());
}

// A running max from -inf is NaN when any element is NaN: first, middle or
// last (std::max would drop it anywhere but first).
TEST(MaxMin, RunningReductionIsNaNWhereverTheNaNIs) {
  for (size_t at = 0; at < 3; ++at) {
    std::vector<float> x = {1.0f, 2.0f, 0.5f};
    x[at] = NAN;
    float m = -INFINITY, n = INFINITY;
    for (float v : x) {
      m = PropagatingMax(m, v);
      n = PropagatingMin(n, v);
    }
    EXPECT_TRUE(std::isnan(m)) << "NaN at " << at;
    EXPECT_TRUE(std::isnan(n)) << "NaN at " << at;
  }
}

}  // namespace
}  // namespace dagrad
