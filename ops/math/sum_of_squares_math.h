// ops/math/sum_of_squares_math.h
//
// The order in which sum_of_squares (ops/sum_of_squares.h) adds, defined
// once for the CPU kernel (ops/sum_of_squares.cc) and the CUDA kernel
// (ops/cuda/sum_of_squares.cu), so that both give the same bits:
//
//   - every input is cut into chunks of kSquaresChunk elements (the last
//     one shorter); chunks are numbered input by input, in input order;
//   - a chunk's sum: kSquaresLanes lanes start at 0, and element i of the
//     chunk, in order, is added to lane i % kSquaresLanes as SquareOf(x[i]);
//     then FoldLanes(lanes, width, l) for every l < width, for width =
//     kSquaresLanes / 2, ..., 2, 1 in turn, leaves the sum in lane 0;
//   - the total: the chunks' sums, numbered as above, added the same way
//     (sum c to lane c % kSquaresLanes, then the same folds).
//
// A CUDA block of kSquaresLanes threads is one chunk's lanes; on the CPU a
// loop over the chunk's rows of kSquaresLanes elements updates every lane
// once per row, which keeps each lane's order. tests/autodiff/sum_of_squares_test.cc
// writes the order out as a plain loop and checks the CPU kernel against
// it bit for bit; the op case checks the CUDA kernel against the CPU's.

#ifndef DAGRAD_OPS_MATH_SUM_OF_SQUARES_MATH_H_
#define DAGRAD_OPS_MATH_SUM_OF_SQUARES_MATH_H_

#include <cstdint>

#include "engine/device/host_device.h"

namespace dagrad {

inline constexpr int64_t kSquaresChunk = int64_t{1} << 16;
inline constexpr int kSquaresLanes = 256;

// SquaresChunks returns how many chunks an input of n elements has.
DAGRAD_HOST_DEVICE inline int64_t SquaresChunks(int64_t n) {
  return (n + kSquaresChunk - 1) / kSquaresChunk;
}

// SquareOf returns x^2 in double (x converted first, so that a float32
// square is exact).
template <typename T>
DAGRAD_HOST_DEVICE inline double SquareOf(T x) {
  const double v = static_cast<double>(x);
  return v * v;
}

// FoldLanes is one step of the tree, for lane l < width: the lanes
// [width, 2 width) are added onto [0, width). Run for width =
// kSquaresLanes / 2, ..., 2, 1 (every lane of one width before the next),
// it leaves the sum in lanes[0].
DAGRAD_HOST_DEVICE inline void FoldLanes(double* lanes, int width, int l) {
  lanes[l] += lanes[l + width];
}

}  // namespace dagrad

#endif  // DAGRAD_OPS_MATH_SUM_OF_SQUARES_MATH_H_
