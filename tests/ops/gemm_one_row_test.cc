// Gemm (ops/cpu/internal/gemm.h) of one row, which runs as a gemv: hand
// sums of small integers (exact in float and double), with B stored by rows
// and by columns (a transposed weight), alpha and beta, past SmallGemm's
// sizes (n, k > 256).

#include <cstdint>
#include <vector>

#include "ops/cpu/internal/gemm.h"
#include "tests/support/test_util.h"

namespace dagrad {
namespace {

template <typename T>
void CheckOneRow(bool b_by_columns) {
  constexpr int64_t k = 300, n = 260;
  std::vector<T> a(k), b(k * n), c(n, T(4));
  for (int64_t p = 0; p < k; ++p) a[p] = static_cast<T>(p % 5 - 2);
  auto bv = [](int64_t p, int64_t j) { return static_cast<T>((p + 2 * j) % 7 - 3); };
  for (int64_t p = 0; p < k; ++p)
    for (int64_t j = 0; j < n; ++j) b[b_by_columns ? j * k + p : p * n + j] = bv(p, j);
  const int64_t rsb = b_by_columns ? 1 : n, csb = b_by_columns ? k : 1;
  ASSERT_TRUE(Gemm<T>(1, n, k, T(2), a.data(), k, 1, b.data(), rsb, csb, T(0.5), c.data(), n, 1)
                  .ok());
  for (int64_t j = 0; j < n; ++j) {
    double want = 0.5 * 4;
    for (int64_t p = 0; p < k; ++p) want += 2.0 * static_cast<double>(a[p] * bv(p, j));
    ASSERT_EQ(static_cast<double>(c[j]), want) << "column " << j;
  }
}

TEST(GemmOneRow, RowStoredB) {
  CheckOneRow<float>(false);
  CheckOneRow<double>(false);
}

TEST(GemmOneRow, ColumnStoredB) {
  CheckOneRow<float>(true);
  CheckOneRow<double>(true);
}

}  // namespace
}  // namespace dagrad
