// VectorExp against the C library's exp, over the whole float range.

#include <cmath>
#include <limits>

#include "ops/vector_math.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

TEST(VectorExp, WithinTwoUlpOfLibmEverywhere) {
  int64_t checked = 0;
  for (float x = -87.0f; x < 88.0f; x += 0.00137f) {
    const double want = std::exp(static_cast<double>(x));
    const float got = VectorExp(x);
    const float ulp = std::nextafter(static_cast<float>(want), INFINITY) - static_cast<float>(want);
    ASSERT_LE(std::abs(got - want), 2.0 * ulp + 1e-45) << "x = " << x;
    ++checked;
  }
  EXPECT_GT(checked, 100000);
}

TEST(VectorExp, EdgesAreExact) {
  EXPECT_EQ(VectorExp(-std::numeric_limits<float>::infinity()), 0.0f);
  EXPECT_EQ(VectorExp(-1000.0f), 0.0f);
  EXPECT_EQ(VectorExp(0.0f), 1.0f);
  EXPECT_EQ(VectorExp(1000.0f), std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isinf(VectorExp(std::numeric_limits<float>::infinity())));
  EXPECT_TRUE(std::isnan(VectorExp(std::nanf(""))));
  const double top = std::exp(static_cast<double>(88.7f));
  EXPECT_NEAR(VectorExp(88.7f), top, top * 1e-6);
}

}  // namespace
}  // namespace dagrad::testing
