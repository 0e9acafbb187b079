// write_at (ops/write_at.h): the slice written by hand-worked values, the
// plan's other ops reading the value before the write, what is refused, and
// the word size and message its CUDA kernel takes from the header.

#include "ops/write_at.h"

#include "engine/executor.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

TEST(WriteAt, WritesTheSliceAtTheFedStartAfterTheOtherReaders) {
  Graph g;
  const Value cache = g.Variable("cache", {2, 4, 1}, Initializer::Zeros());
  const Value at = g.Input("at", DType::kInt64, {1});
  const Value fresh = g.Input("fresh", DType::kFloat32, {2, 1, 1});
  const Value write = WriteAt(cache, fresh, at, 1);
  const Value sum = Sum(cache);
  Executor exec(g);
  ASSERT_OK_AND_ASSIGN(auto plan, exec.Compile({sum}, {write}));
  // Two runs: [1, 2] at 2, then [3, 4] at 0; each run's sum is the cache's
  // before its write.
  ASSERT_OK_AND_ASSIGN(auto out, exec.Run(*plan, {{at, T<int64_t>({1}, {2})},
                                                  {fresh, T<float>({2, 1, 1}, {1, 2})}}));
  ExpectAllClose(out[0], {0.0}, 0, 0, "before the first write");
  ASSERT_OK_AND_ASSIGN(out, exec.Run(*plan, {{at, T<int64_t>({1}, {0})},
                                             {fresh, T<float>({2, 1, 1}, {3, 4})}}));
  ExpectAllClose(out[0], {3.0}, 0, 0, "after the first");
  ASSERT_OK_AND_ASSIGN(Tensor now, exec.Read(cache));
  ExpectAllClose(now, {3, 0, 1, 0, 4, 0, 2, 0}, 0, 0, "cache");
}

TEST(WriteAt, RefusesAStartOutsideTheTargetBeforeWriting) {
  Graph g;
  const Value cache = g.Variable("cache", {4}, Initializer::Ones());
  const Value at = g.Input("at", DType::kInt64, {});
  const Value write = WriteAt(cache, g.Constant(T<float>({2}, {5, 6})), at, 0);
  Executor exec(g);
  ASSERT_OK_AND_ASSIGN(auto plan, exec.Compile({}, {write}));
  for (int64_t bad : {-1, 3}) {
    EXPECT_STATUS(exec.Run(*plan, {{at, Tensor::Scalar<int64_t>(bad)}}).status(),
                  absl::StatusCode::kInvalidArgument, "is outside [0, 2]");
  }
  ASSERT_OK_AND_ASSIGN(Tensor now, exec.Read(cache));
  ExpectAllClose(now, {1, 1, 1, 1}, 0, 0, "unchanged");
}

TEST(WriteAt, RefusesWhatDoesNotFit) {
  Graph g;
  const Value cache = g.Variable("cache", {2, 4}, Initializer::Zeros());
  const Value at = g.Input("at", DType::kInt64, {1});
  EXPECT_STATUS(WriteAt(cache, g.Input("a", DType::kFloat32, {2, 5}), at, 1).status(),
                absl::StatusCode::kInvalidArgument, "does not fit target (2, 4) along axis 1");
  EXPECT_STATUS(WriteAt(cache, g.Input("b", DType::kFloat32, {3, 1}), at, 1).status(),
                absl::StatusCode::kInvalidArgument, "(dim 0)");
  EXPECT_STATUS(WriteAt(cache, g.Input("c", DType::kFloat64, {2, 1}), at, 1).status(),
                absl::StatusCode::kInvalidArgument, "the value must have the target's dtype");
  EXPECT_STATUS(WriteAt(cache, g.Input("d", DType::kFloat32, {2, 1}),
                        g.Input("e", DType::kInt32, {1}), 1).status(),
                absl::StatusCode::kInvalidArgument, "start must be int64");
  EXPECT_STATUS(WriteAt(cache, g.Input("f", DType::kFloat32, {2, 1}), at, 2).status(),
                absl::StatusCode::kInvalidArgument, "axis 2 is outside the target's rank 2");
  EXPECT_STATUS(WriteAt(cache, g.Input("g", DType::kFloat32, {2, 1}), at, -3).status(),
                absl::StatusCode::kInvalidArgument, "axis -3 is outside the target's rank 2");
  EXPECT_FALSE(WriteAt(g.Input("h", DType::kFloat32, {2, 4}),
                       g.Input("i", DType::kFloat32, {2, 1}), at, 1).ok());  // not a variable
}

TEST(WriteAt, WordBytesDivideTheRowAndBothAddresses) {
  alignas(8) char bytes[32];
  const WriteAtRows row8{.rows = 4, .inner_bytes = 8, .written = 1};
  EXPECT_EQ(WriteAtWordBytes(row8, bytes, bytes + 8), 4);
  // A 16-bit value viewed one element in: 4-byte words would be misaligned.
  EXPECT_EQ(WriteAtWordBytes(row8, bytes, bytes + 2), 2);
  EXPECT_EQ(WriteAtWordBytes(row8, bytes + 2, bytes), 2);
  EXPECT_EQ(WriteAtWordBytes(row8, bytes, bytes + 1), 1);  // a bool or int8 view
  EXPECT_EQ(WriteAtWordBytes({.rows = 4, .inner_bytes = 6, .written = 1}, bytes, bytes), 2);
  EXPECT_EQ(WriteAtWordBytes({.rows = 4, .inner_bytes = 3, .written = 1}, bytes, bytes), 1);
}

TEST(WriteAt, StartMessageNamesTheRoom) {
  EXPECT_EQ(WriteAtStartMessage(5, Shape({2, 4, 3}), Shape({2, 2, 3}), 1),
            "start 5 is outside [0, 2]: writing 2 along axis 1 of (2, 4, 3)");
}

}  // namespace
}  // namespace dagrad::testing
