// permute's copy (ops/shape_ops.cc, and its tiles, ops/cpu/internal/
// tiled_permute.h) against the definition, element by element: every
// permutation of ranks 2 to 4, at sizes around the tile's (1, 31, 33) and
// every element width (bool, bfloat16, float32, int64).

#include <algorithm>
#include <cstring>
#include <numeric>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ops/elementwise.h"
#include "ops/shape_ops.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

// Definition: y[i] = x[j] where y's index i, read per axis, is x's index
// permuted: i_k = j_{perm[k]}.
std::vector<char> Permuted(const Tensor& x, const std::vector<int64_t>& perm) {
  const Shape& in = x.shape();
  const int rank = in.rank();
  const size_t width = SizeOf(x.dtype());
  const Dims in_strides = RowMajorStrides(in);
  Dims out_dims;
  for (int64_t p : perm) out_dims.push_back(in[p]);
  std::vector<char> y(x.nbytes());
  std::vector<int64_t> index(rank, 0);
  for (int64_t o = 0; o < x.num_elements(); ++o) {
    int64_t from = 0;
    for (int k = 0; k < rank; ++k) from += index[k] * in_strides[perm[k]];
    std::memcpy(y.data() + o * width, static_cast<const char*>(x.raw_data()) + from * width, width);
    for (int k = rank - 1; k >= 0 && ++index[k] == out_dims[k]; --k) index[k] = 0;
  }
  return y;
}

TEST(Permute, EveryPermutationAtTileEdgesAndEveryWidth) {
  const std::vector<Shape> shapes = {{33, 31}, {1, 40}, {40, 1},  {2, 33, 35},
                                     {31, 1, 33}, {3, 2, 33, 5}, {2, 65, 3, 34}};
  int checked = 0;
  for (const Shape& shape : shapes) {
    std::vector<int64_t> perm(shape.rank());
    std::iota(perm.begin(), perm.end(), 0);
    do {
      for (DType dtype : {DType::kBool, DType::kBFloat16, DType::kFloat32, DType::kInt64}) {
        Graph g;
        const Tensor values = Random(DType::kFloat32, shape, ++checked, -50, 50);
        const Value x = Cast(g.Constant(values), dtype);
        ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, RunOnce(g, {x, Permute(x, perm)}));
        const std::vector<char> want = Permuted(out[0], perm);
        ASSERT_EQ(out[1].nbytes(), want.size());
        EXPECT_EQ(std::memcmp(out[1].raw_data(), want.data(), want.size()), 0)
            << shape.ToString() << " perm [" << absl::StrJoin(perm, ", ") << "] "
            << DTypeName(dtype);
      }
    } while (std::next_permutation(perm.begin(), perm.end()));
  }
  EXPECT_GT(checked, 100);
}

}  // namespace
}  // namespace dagrad::testing
