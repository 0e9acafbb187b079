#include "ops/cpu/internal/tiled_permute.h"

#include <algorithm>
#include <vector>

namespace dagrad {
namespace {

// The transpose's two axes: `rows` (output axis `row_axis`, which reads the
// input contiguously) and the last output axis, `cols`, which reads it
// `col_step` apart.
struct Transpose2d {
  int row_axis = -1;
  int64_t rows = 0, cols = 0, col_step = 0, row_out = 0;
};

// CopyTile copies the tile of rows [r0, r1) and columns [c0, c1) from the
// input at `in` to the output at `out`.
template <size_t W>
void CopyTile(const char* in, char* out, const Transpose2d& t, int64_t r0, int64_t r1,
              int64_t c0, int64_t c1) {
  for (int64_t r = r0; r < r1; ++r) {
    CopyRun<W>(out + (r * t.row_out + c0) * W, in + (r + c0 * t.col_step) * W, t.col_step, c1 - c0);
  }
}

template <size_t W>
void CopyTiles(const char* x, char* y, const Shape& out, const Dims& in_strides,
               const Dims& out_strides, const Transpose2d& t) {
  const int rank = out.rank(), last = rank - 1;
  std::vector<int64_t> index(rank, 0);  // over the axes but row_axis and last
  int64_t outer = 1;
  for (int k = 0; k < last; ++k) outer *= k == t.row_axis ? 1 : out[k];
  for (int64_t n = 0; n < outer; ++n) {
    int64_t in_base = 0, out_base = 0;
    for (int k = 0; k < last; ++k) {
      if (k == t.row_axis) continue;
      in_base += index[k] * in_strides[k];
      out_base += index[k] * out_strides[k];
    }
    for (int64_t r0 = 0; r0 < t.rows; r0 += kPermuteTile) {
      for (int64_t c0 = 0; c0 < t.cols; c0 += kPermuteTile) {
        CopyTile<W>(x + in_base * W, y + out_base * W, t, r0, std::min(t.rows, r0 + kPermuteTile),
                    c0, std::min(t.cols, c0 + kPermuteTile));
      }
    }
    for (int k = last - 1; k >= 0; --k) {  // the next index, row_axis skipped
      if (k == t.row_axis) continue;
      if (++index[k] < out[k]) break;
      index[k] = 0;
    }
  }
}

}  // namespace

bool TiledPermute(const char* x, char* y, size_t width, const Shape& out, const Dims& in_strides) {
  const int rank = out.rank(), last = rank - 1;
  if (rank < 2 || out[last] < 2 || in_strides[last] == 1) return false;
  Transpose2d t;
  for (int k = 0; k < last; ++k) {
    if (in_strides[k] == 1 && out[k] > 1) t.row_axis = k;
  }
  if (t.row_axis < 0) return false;
  const Dims out_strides = RowMajorStrides(out);
  t.rows = out[t.row_axis];
  t.cols = out[last];
  t.col_step = in_strides[last];
  t.row_out = out_strides[t.row_axis];
  switch (width) {
    case 1: CopyTiles<1>(x, y, out, in_strides, out_strides, t); return true;
    case 2: CopyTiles<2>(x, y, out, in_strides, out_strides, t); return true;
    case 4: CopyTiles<4>(x, y, out, in_strides, out_strides, t); return true;
    case 8: CopyTiles<8>(x, y, out, in_strides, out_strides, t); return true;
    default: return false;
  }
}

}  // namespace dagrad
