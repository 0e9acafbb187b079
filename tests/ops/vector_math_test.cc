// VectorExp against the C library's exp, over the whole float range;
// RowMax against a plain running maximum.

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "ops/cpu/internal/vector_math.h"
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

// SequentialMax is the reference: a running PropagatingMax from the identity.
template <typename T>
T SequentialMax(const std::vector<T>& x) {
  T m = MaxIdentity<T>();
  bool nan = false;
  for (T v : x) {
    nan |= v != v;
    m = PropagatingMax(m, v);
  }
  return nan ? std::numeric_limits<T>::quiet_NaN() : m;
}

// Every length around the 16 lanes (whole blocks, tails), with the maximum,
// a NaN or -inf at every position class.
template <typename T>
void CheckRowMax() {
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> u(-100.0, 100.0);
  const T inf = std::numeric_limits<T>::infinity();
  for (int64_t n = 0; n <= 70; ++n) {
    std::vector<T> x(n);
    for (T& v : x) v = static_cast<T>(u(rng));
    for (int64_t special = -1; special < n; ++special) {
      for (T value : {static_cast<T>(1000), std::numeric_limits<T>::quiet_NaN(), -inf, inf}) {
        std::vector<T> y = x;
        if (special >= 0) y[special] = value;
        const T want = SequentialMax(y), got = RowMax(y.data(), n);
        if (want != want) {
          ASSERT_TRUE(got != got) << "n = " << n << ", NaN at " << special;
        } else {
          ASSERT_EQ(got, want) << "n = " << n << ", " << value << " at " << special;
        }
      }
    }
  }
  const std::vector<T> all_masked(33, -inf);
  EXPECT_EQ(RowMax(all_masked.data(), 33), -inf);
  EXPECT_EQ(RowMax(all_masked.data(), 0), -inf);
}

TEST(RowMax, FloatEqualsARunningMaximumWithNaNAndInf) { CheckRowMax<float>(); }
TEST(RowMax, DoubleEqualsARunningMaximumWithNaNAndInf) { CheckRowMax<double>(); }

TEST(RowMax, IntegersStartFromLowest) {
  const std::vector<int32_t> x = {-5, 7, -9, 3, 7, 2, 1, 0, -1, -2, -3, -4, -5, -6, -7, -8, 11};
  EXPECT_EQ(RowMax(x.data(), 16), 7);
  EXPECT_EQ(RowMax(x.data(), 17), 11);
  EXPECT_EQ(RowMax(x.data(), 0), std::numeric_limits<int32_t>::lowest());
}

}  // namespace
}  // namespace dagrad::testing
