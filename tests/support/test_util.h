// tests/support/test_util.h
//
// Helpers for dagrad's tests: building tensors, running a graph once, random
// inputs, and matchers for absl::Status.

#ifndef DAGRAD_TESTS_SUPPORT_TEST_UTIL_H_
#define DAGRAD_TESTS_SUPPORT_TEST_UTIL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/executor.h"
#include "engine/graph.h"
#include "engine/tensor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dagrad::testing {

// T builds a tensor, failing the test (and returning an empty tensor) when
// the values do not fit the shape.
template <typename V>
Tensor T(const Shape& shape, const std::vector<V>& values) {
  auto t = Tensor::FromVector<V>(shape, values);
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? *t : Tensor();
}

// Random returns a tensor of uniform values in [lo, hi), of any float dtype
// (drawn in float64 and rounded once).
Tensor Random(DType dtype, const Shape& shape, uint64_t seed, double lo = -1.0,
              double hi = 1.0);

// RandomInts returns int64 values uniform in [lo, hi).
Tensor RandomInts(const Shape& shape, uint64_t seed, int64_t lo, int64_t hi);

// RunOnce compiles `fetches` on a fresh CPU executor and runs them once,
// its arena poisoned (ExecutorOptions::poison_arena): NaN where a kernel
// leaves what it should write unwritten.
absl::StatusOr<std::vector<Tensor>> RunOnce(const Graph& g, std::vector<Value> fetches,
                                            const Feeds& feeds = {},
                                            const RunOptions& options = {});

// ToFloat32 rounds a float64 tensor to float32; other tensors are returned
// as they are.
Tensor ToFloat32(const Tensor& t);

// AsDoubles converts a float tensor's values to double.
std::vector<double> AsDoubles(const Tensor& t);

// NewTempDir makes a fresh directory for one test under GoogleTest's
// TempDir(), named dagrad_<name>_XXXXXX, and returns its path (failing the
// test when it cannot).
std::string NewTempDir(absl::string_view name);

// SameBits is true when `a` and `b` have the same dtype, shape and bytes.
bool SameBits(const Tensor& a, const Tensor& b);

// MaxAbsDifference is max |a - b| over the elements: infinite when the
// sizes differ or one of a pair is NaN; a pair of NaNs or of equal
// infinities counts as equal.
double MaxAbsDifference(const Tensor& a, const Tensor& b);

// MaxOrNaN is std::max, but NaN when either is: a worst case taken over
// elements with it cannot skip a NaN element.
double MaxOrNaN(double a, double b);

// MaxRelativeError is MaxAbsDifference(got, want) / max |want| over want's
// finite elements, or MaxAbsDifference alone when they are all zero.
double MaxRelativeError(const Tensor& got, const Tensor& want);

// ExpectAllClose checks elementwise |got - want| <= atol + rtol * |want|.
void ExpectAllClose(const Tensor& got, const std::vector<double>& want, double rtol,
                    double atol, const std::string& what = "");

}  // namespace dagrad::testing

// EXPECT_STATUS(status_expr, code, substring) checks code and message.
#define EXPECT_STATUS(expr, expected_code, substring)                        \
  do {                                                                       \
    const ::absl::Status dagrad_st_ = (expr);                                \
    EXPECT_EQ(dagrad_st_.code(), (expected_code)) << dagrad_st_;             \
    EXPECT_THAT(std::string(dagrad_st_.message()), ::testing::HasSubstr(substring)); \
  } while (false)

#define ASSERT_OK(expr)                        \
  do {                                         \
    const ::absl::Status dagrad_st_ = (expr);  \
    ASSERT_TRUE(dagrad_st_.ok()) << dagrad_st_; \
  } while (false)

#define ASSERT_OK_AND_ASSIGN(lhs, expr)                                 \
  ASSERT_OK_AND_ASSIGN_IMPL_(DAGRAD_TEST_CONCAT_(statusor_, __LINE__), lhs, expr)
#define DAGRAD_TEST_CONCAT_INNER_(a, b) a##b
#define DAGRAD_TEST_CONCAT_(a, b) DAGRAD_TEST_CONCAT_INNER_(a, b)
#define ASSERT_OK_AND_ASSIGN_IMPL_(statusor, lhs, expr) \
  auto statusor = (expr);                               \
  ASSERT_TRUE(statusor.ok()) << statusor.status();      \
  lhs = std::move(statusor).value()

#endif  // DAGRAD_TESTS_SUPPORT_TEST_UTIL_H_
