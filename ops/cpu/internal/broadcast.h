// ops/cpu/internal/broadcast.h
//
// Iteration over an output shape with inputs broadcast to it (numpy rules),
// for elementwise kernels with any number of inputs. Rows of the output's
// last axis are the unit of work, split over threads; within a row each
// input advances by its own stride (0 where it is broadcast).
//
//   // setup: Broadcast
//   StridedLoop<2> loop = BroadcastLoop<2>(out_shape, {&a_shape, &b_shape});
//   loop.Run([&](int64_t out, const int64_t* in, const int64_t* step, int64_t n) {
//     for (int64_t i = 0; i < n; ++i) y[out + i] = a[in[0] + i * step[0]] + b[in[1] + i * step[1]];
//   });

#ifndef DAGRAD_OPS_CPU_INTERNAL_BROADCAST_H_
#define DAGRAD_OPS_CPU_INTERNAL_BROADCAST_H_

#include <array>
#include <cstdint>
#include <initializer_list>
#include <utility>

#include "engine/shape.h"
#include "ops/cpu/parallel.h"

namespace dagrad {

// StridedLoop walks an output shape with N inputs, each read through its own
// element strides aligned to the output's axes.
template <int N>
class StridedLoop {
 public:
  StridedLoop(const Shape& out, std::array<Dims, N> strides)
      : out_(out), strides_(std::move(strides)) {}

  // Run calls f(out_offset, in_offsets, in_steps, n) for every row of n
  // elements of the output.
  template <typename F>
  void Run(F&& f) const {
    const int rank = out_.rank();
    const int64_t inner = rank == 0 ? 1 : out_[rank - 1];
    const int64_t total = out_.num_elements();
    if (total == 0) return;
    const int64_t rows = total / inner;
    std::array<int64_t, N> step;
    for (int k = 0; k < N; ++k) step[k] = rank == 0 ? 0 : strides_[k][rank - 1];
    ParallelFor(rows, RowGrain(inner), [&](int64_t begin, int64_t end) {
      // The multi-index of the first row by division, then an odometer.
      Dims idx(std::max(rank - 1, 0), 0);
      std::array<int64_t, N> off{};
      int64_t rem = begin;
      for (int d = rank - 2; d >= 0; --d) {
        idx[d] = rem % out_[d];
        rem /= out_[d];
        for (int k = 0; k < N; ++k) off[k] += idx[d] * strides_[k][d];
      }
      for (int64_t row = begin; row < end; ++row) {
        f(row * inner, off.data(), step.data(), inner);
        for (int d = rank - 2; d >= 0; --d) {
          for (int k = 0; k < N; ++k) off[k] += strides_[k][d];
          if (++idx[d] < out_[d]) break;
          for (int k = 0; k < N; ++k) off[k] -= idx[d] * strides_[k][d];
          idx[d] = 0;
        }
      }
    });
  }

 private:
  Shape out_;
  std::array<Dims, N> strides_;
};

// BroadcastLoop returns the loop reading each input broadcast to `out`.
template <int N>
StridedLoop<N> BroadcastLoop(const Shape& out, std::initializer_list<const Shape*> ins) {
  std::array<Dims, N> strides;
  int i = 0;
  for (const Shape* s : ins) strides[i++] = BroadcastStrides(*s, out);
  return StridedLoop<N>(out, std::move(strides));
}

}  // namespace dagrad

#endif  // DAGRAD_OPS_CPU_INTERNAL_BROADCAST_H_
