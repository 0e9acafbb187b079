// Fused attention's row kernels for one ISA level (ops/attention_cpu.cc
// runs the block products and the masks around them): the online-softmax
// update of a block of scores in the forward pass, and the step from
// scores to dS in the backward pass, each with attention dropout's keep
// decision (ops/dropout.h). Rows are padded to whole registers
// (AttentionBlock::ld is a multiple of 16), so a row goes a register at a
// time, the lanes past its valid count masked: no scalar tail, no call per
// row into another kernel. The exponentials are VectorExp's (ExpShiftedVec:
// each argument is a score less its row's maximum, so <= 0), a
// row's sum runs in double in 16 accumulators (column k in k % 16, added
// in order) combined by a fixed tree, and no multiply-add is fused: every
// level's result is bit-identical to the baseline's.

#include <cmath>
#include <cstring>
#include <limits>

#include "ops/cpu/kernels/cpu_kernels.h"
#include "ops/cpu/kernels/level.h"
#include "ops/cpu/kernels/simd.h"
#include "ops/cpu/kernels/vec_exp.h"
// VectorExp has internal linkage (vector_math.h says why).
#include "ops/cpu/internal/vector_math.h"
#include "ops/math/minmax.h"

namespace dagrad::kernels::DAGRAD_ISA {
namespace {

// Columns go 16 at a time (a step), as kSteps registers of the level.
constexpr int kAccumulators = 16;
constexpr int kSteps = kAccumulators / kVecLanes;
static_assert(kAccumulators % kVecLanes == 0);

typedef uint32_t VecU __attribute__((vector_size(kVecBytes)));
// A register of floats as doubles: two registers' worth, which GCC splits.
typedef double VecD2 __attribute__((vector_size(2 * kVecBytes)));
typedef uint32_t UnalignedU __attribute__((vector_size(kVecBytes), aligned(4), may_alias));

VecF Load(const float* p) { return *reinterpret_cast<const UnalignedF*>(p); }
void Store(float* p, VecF v) { *reinterpret_cast<UnalignedF*>(p) = v; }

// Lanes is 0, 1, ..., kVecLanes - 1: a register's column offsets.
VecI Lanes() {
  VecI v;
  for (int i = 0; i < kVecLanes; ++i) v[i] = i;
  return v;
}

// Keep returns the dropout factor of one word: drop_scale when kept, else 0.
template <typename T>
T Keep(uint32_t word, uint32_t threshold, T drop_scale) {
  return (word >> 8) >= threshold ? drop_scale : T(0);
}

// KeepLanes is Keep of a register of words.
VecF KeepLanes(const uint32_t* bits, const AttentionBlock<float>& a) {
  const VecU w = *reinterpret_cast<const UnalignedU*>(bits) >> 8;
  return w >= a.threshold ? VecF{} + a.drop_scale : VecF{};
}

// Sum16 adds the accumulators in a fixed tree: halves, then quarters, ...
double Sum16(const double* acc) {
  double half[8], quarter[4];
  for (int i = 0; i < 8; ++i) half[i] = acc[i] + acc[i + 8];
  for (int i = 0; i < 4; ++i) quarter[i] = half[i] + half[i + 4];
  return (quarter[0] + quarter[2]) + (quarter[1] + quarter[3]);
}

// ZeroFrom writes zeros to row[k, n).
void ZeroFrom(double* row, int64_t k, int64_t n) {
  for (; k < n; ++k) row[k] = 0;
}
void ZeroSteps(double* row, int64_t k, int64_t n) { ZeroFrom(row, k, n); }
// ZeroSteps writes zeros to whole steps from column k (a multiple of 16)
// until n is covered: a short loop of register stores, not a call.
void ZeroSteps(float* row, int64_t k, int64_t n) {
  for (; k < n; k += kAccumulators) {
    for (int j = 0; j < kSteps; ++j) Store(row + k + j * kVecLanes, VecF{});
  }
}

// Max is the NaN-propagating maximum of two registers, lane by lane.
VecF Max(VecF a, VecF b) { return ((a > b) | (a != a)) ? a : b; }

// MaxOfRow is the NaN-propagating maximum of z[0, valid).
float MaxOfRow(const float* z, int64_t valid) {
  const VecF neg_inf = VecF{} - __builtin_inff();
  const VecI lanes = Lanes();
  VecF m[kSteps];
  for (VecF& r : m) r = neg_inf;
  for (int64_t k = 0; k < valid; k += kAccumulators) {
    for (int j = 0; j < kSteps; ++j) {
      const VecI column = lanes + static_cast<int>(k + j * kVecLanes);
      m[j] = Max(column < static_cast<int>(valid) ? Load(z + k + j * kVecLanes) : neg_inf, m[j]);
    }
  }
  for (int j = 1; j < kSteps; ++j) m[0] = Max(m[j], m[0]);
  // Across the lanes, once a row (GCC's and clang's vector shuffles differ).
  float max = m[0][0];
  for (int i = 1; i < kVecLanes; ++i) max = PropagatingMax(m[0][i], max);
  return max;
}
double MaxOfRow(const double* z, int64_t valid) {
  double m = -std::numeric_limits<double>::infinity();
  for (int64_t k = 0; k < valid; ++k) m = PropagatingMax(m, z[k]);
  return m;
}

// ExpRow writes p = exp(z - m) over the row's valid columns, zeros to ld,
// multiplies each p by its dropout factor when bits are given, and returns
// the sum of the p before dropout.
double ExpRow(const AttentionBlock<float>& a, float* z, const uint32_t* bits, int64_t valid,
              float m) {
  VecD2 acc[kSteps] = {};  // accumulator j * kVecLanes + i is lane i of acc[j]
  const VecI lanes = Lanes();
  int64_t k = 0;
  for (; k < valid; k += kAccumulators) {
    for (int j = 0; j < kSteps; ++j) {
      const int64_t c = k + j * kVecLanes;
      VecF p = ExpShiftedVec(Load(z + c) - m);  // m: the row's maximum
      p = lanes + static_cast<int>(c) < static_cast<int>(valid) ? p : VecF{};
      acc[j] += __builtin_convertvector(p, VecD2);
      Store(z + c, bits == nullptr ? p : p * KeepLanes(bits + c, a));
    }
  }
  ZeroSteps(z, k, a.n);
  double sums[kAccumulators];
  std::memcpy(sums, acc, sizeof(sums));
  return Sum16(sums);
}
double ExpRow(const AttentionBlock<double>& a, double* z, const uint32_t* bits, int64_t valid,
              double m) {
  double acc[kAccumulators] = {};
  for (int64_t k = 0; k < valid; ++k) {
    const double p = std::exp(z[k] - m);
    acc[k % kAccumulators] += p;
    z[k] = bits == nullptr ? p : p * Keep(bits[k], a.threshold, a.drop_scale);
  }
  ZeroFrom(z, valid, a.n);
  return Sum16(acc);
}

template <typename T>
void SoftmaxRows(const AttentionBlock<T>& a, T* m, double* l, T* alpha) {
  for (int64_t r = 0; r < a.rows; ++r) {
    T* z = a.s + r * a.ld;
    const int64_t valid = a.valid[r];
    const T m_new = PropagatingMax(m[r], MaxOfRow(z, valid));
    if (m_new == -std::numeric_limits<T>::infinity()) {  // nothing kept so far
      ZeroSteps(z, 0, a.n);
      alpha[r] = T(1);
      continue;
    }
    // 0 for the first kept block (m = -inf), without an exponential.
    alpha[r] = m[r] == -std::numeric_limits<T>::infinity() ? T(0) : VectorExp(m[r] - m_new);
    const uint32_t* bits = a.bits == nullptr ? nullptr : a.bits + r * a.ld;
    l[r] = l[r] * alpha[r] + ExpRow(a, z, bits, valid, m_new);
    m[r] = m_new;
  }
}

// RowStat says how row r's weights P come from its block: p = s * stat
// (`probs`: the block holds exp(z - m) and stat is 1 / l) or p = exp((s -
// m) - stat) (m the row's max, stat log l).
struct RowStat {
  bool probs;
  float m;
  float stat;
};

VecF Weights(VecF s, RowStat w) {
  return w.probs ? s * w.stat : ExpShiftedVec((s - w.m) - w.stat);  // <= 0: stat = log l >= 0
}

// RowDot returns D = sum over the row of p * keep * dp, in double (column
// k in accumulator k % 16, then the tree): dO·O for a row whose keys are
// all in the block, the sum softmax's backward takes.
double RowDot(const AttentionBlock<float>& a, const float* z, const uint32_t* bits,
              const float* dp, int64_t valid, RowStat w) {
  VecD2 acc[kSteps] = {};
  const VecI lanes = Lanes();
  for (int64_t k = 0; k < valid; k += kAccumulators) {
    for (int j = 0; j < kSteps; ++j) {
      const int64_t c = k + j * kVecLanes;
      const VecF keep = bits == nullptr ? VecF{} + 1.0f : KeepLanes(bits + c, a);
      VecF pk = Weights(Load(z + c), w) * keep;
      pk = lanes + static_cast<int>(c) < static_cast<int>(valid) ? pk : VecF{};
      acc[j] += __builtin_convertvector(pk, VecD2) * __builtin_convertvector(Load(dp + c), VecD2);
    }
  }
  double sums[kAccumulators];
  std::memcpy(sums, acc, sizeof(sums));
  return Sum16(sums);
}

// GradRow is the backward step on row r: s = p * keep (the dropped
// weight), dp = p * (dp * keep - d), d the row's D (RowDot's when null).
void GradRow(const AttentionBlock<float>& a, int64_t r, RowStat w, const float* d, float* dp) {
  float* z = a.s + r * a.ld;
  const uint32_t* bits = a.bits == nullptr ? nullptr : a.bits + r * a.ld;
  const int64_t valid = a.valid[r];
  const float dr = d != nullptr ? *d : static_cast<float>(RowDot(a, z, bits, dp, valid, w));
  const VecI lanes = Lanes();
  int64_t k = 0;
  for (; k < valid; k += kAccumulators) {
    for (int j = 0; j < kSteps; ++j) {
      const int64_t c = k + j * kVecLanes;
      const VecF p = Weights(Load(z + c), w);
      const VecF keep = bits == nullptr ? VecF{} + 1.0f : KeepLanes(bits + c, a);
      const VecI in = lanes + static_cast<int>(c) < static_cast<int>(valid);
      Store(z + c, in ? p * keep : VecF{});
      Store(dp + c, in ? p * (Load(dp + c) * keep - dr) : VecF{});
    }
  }
  ZeroSteps(z, k, a.n);
  ZeroSteps(dp, k, a.n);
}

void GradRow(const AttentionBlock<double>& a, int64_t r, bool probs, double m, double stat,
             const double* d, double* dp) {
  double* z = a.s + r * a.ld;
  const uint32_t* bits = a.bits == nullptr ? nullptr : a.bits + r * a.ld;
  const int64_t valid = a.valid[r];
  auto weight = [&](int64_t k) { return probs ? z[k] * stat : std::exp((z[k] - m) - stat); };
  auto keep = [&](int64_t k) {
    return bits == nullptr ? 1.0 : Keep(bits[k], a.threshold, a.drop_scale);
  };
  double dr = 0;
  if (d != nullptr) {
    dr = *d;
  } else {
    double acc[kAccumulators] = {};
    for (int64_t k = 0; k < valid; ++k) acc[k % kAccumulators] += weight(k) * keep(k) * dp[k];
    dr = Sum16(acc);
  }
  for (int64_t k = 0; k < valid; ++k) {
    const double p = weight(k), kk = keep(k);
    z[k] = p * kk;
    dp[k] = p * (dp[k] * kk - dr);
  }
  ZeroFrom(z, valid, a.n);
  ZeroFrom(dp, valid, a.n);
}

void GradRows(const AttentionBlock<float>& a, const float* m, const float* stat, bool probs,
              const float* d, float* dp) {
  for (int64_t r = 0; r < a.rows; ++r) {
    GradRow(a, r, RowStat{probs, probs ? 0.0f : m[r], stat[r]}, d == nullptr ? nullptr : d + r,
            dp + r * a.ld);
  }
}
void GradRows(const AttentionBlock<double>& a, const double* m, const double* stat, bool probs,
              const double* d, double* dp) {
  for (int64_t r = 0; r < a.rows; ++r) {
    GradRow(a, r, probs, probs ? 0.0 : m[r], stat[r], d == nullptr ? nullptr : d + r,
            dp + r * a.ld);
  }
}

}  // namespace

void AttentionSoftmaxF32(const AttentionBlock<float>& a, float* m, double* l, float* alpha) {
  SoftmaxRows(a, m, l, alpha);
}
void AttentionSoftmaxF64(const AttentionBlock<double>& a, double* m, double* l, double* alpha) {
  SoftmaxRows(a, m, l, alpha);
}
void AttentionGradF32(const AttentionBlock<float>& a, const float* m, const float* stat,
                      bool probs, const float* d, float* dp) {
  GradRows(a, m, stat, probs, d, dp);
}
void AttentionGradF64(const AttentionBlock<double>& a, const double* m, const double* stat,
                      bool probs, const double* d, double* dp) {
  GradRows(a, m, stat, probs, d, dp);
}

}  // namespace dagrad::kernels::DAGRAD_ISA
