// ops/cpu/internal/tiled_permute.h
//
// TiledPermute: the copy of a permute whose last output axis reads the
// input with a stride (a transpose of the last axis, (T, D) -> (D, T)), in
// tiles. Element by element, each write would read a new cache line of the
// input, 64 bytes for 4 of them; tile by tile (kPermuteTile square), the
// tile's input lines stay in cache while its rows are written, and each
// line is read once.
//
//   // (2048, 512) float32 -> (512, 2048): output axis 0 reads input axis 1
//   // (stride 1), output axis 1 reads input axis 0 (stride 512)
//   std::vector<float> rows(2048 * 512), columns(512 * 2048);
//   TiledPermute(reinterpret_cast<const char*>(rows.data()),
//                reinterpret_cast<char*>(columns.data()), 4, Shape({512, 2048}), {1, 512});

#ifndef DAGRAD_OPS_CPU_INTERNAL_TILED_PERMUTE_H_
#define DAGRAD_OPS_CPU_INTERNAL_TILED_PERMUTE_H_

#include <cstddef>
#include <cstring>

#include "engine/shape.h"

namespace dagrad {

inline constexpr int64_t kPermuteTile = 16;

// CopyRun writes n elements of Width bytes to y from x, `step` elements
// apart there: a fill of one value for a broadcast axis (step 0). The
// element's width is a constant, so each copy is a move, not a call. A
// tile's row here; a strided run of permute and broadcast_to
// (ops/shape_ops.cc).
//
//   float column[3] = {1, 2, 3}, row[3];
//   CopyRun<4>(reinterpret_cast<char*>(row), reinterpret_cast<const char*>(column), 1, 3);
template <size_t Width>
void CopyRun(char* y, const char* x, int64_t step, int64_t n) {
  if (step == 0) {
    for (int64_t i = 0; i < n; ++i) std::memcpy(y + i * Width, x, Width);
    return;
  }
  for (int64_t i = 0; i < n; ++i) std::memcpy(y + i * Width, x + i * step * Width, Width);
}

// TiledPermute writes y (of shape `out`, row-major) from x, where output
// axis k reads x with stride `in_strides`[k] (elements of `width` bytes:
// 1, 2, 4 or 8), and returns true; false, writing nothing, when the copy is
// not such a transpose (the last axis reads with stride 1, or no axis of
// more than one element does) or the width is another.
bool TiledPermute(const char* x, char* y, size_t width, const Shape& out, const Dims& in_strides);

}  // namespace dagrad

#endif  // DAGRAD_OPS_CPU_INTERNAL_TILED_PERMUTE_H_
