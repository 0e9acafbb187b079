// GemmBFloat16 (ops/cpu/cpu_runtime.h): AVX512_BF16's kernel
// (ops/cpu/kernels/gemm_bf16_kernel.cc) on operands packed here by pairs of k,
// or, where the CPU or the kernel level lacks it, bfloat16 operands widened
// to float32 block by block and multiplied by sgemm.

#include <algorithm>
#include <cstring>
#include <memory>

#include "ops/cpu/cpu_runtime.h"
#include "ops/cpu/internal/cpu_isa.h"
#include "ops/cpu/internal/gemm.h"
#include "ops/cpu/parallel.h"

namespace dagrad {
namespace {

// A's panels hold at most this many elements (4 MB as float32): enough rows
// for the product to run at full speed, and a bounded copy for any m.
constexpr int64_t kPanelElements = int64_t{1} << 20;

// A parallel chunk of the native product does at least this many
// multiply-adds (a thread's start costs about as much as 2^18).
constexpr int64_t kMinChunkMadds = int64_t{1} << 18;

// Widen copies the (rows, cols) matrix at `src`, element (i, j) at
// src[i * rs + j * cs], to row-major float32 at `dst`, exactly; over the
// threads unless `one_thread`.
void Widen(const BFloat16* src, int64_t rs, int64_t cs, int64_t rows,
           int64_t cols, float* dst, bool one_thread) {
  auto widen_rows = [=](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      for (int64_t j = 0; j < cols; ++j)
        dst[i * cols + j] = BFloat16ToFloat(src[i * rs + j * cs]);
    }
  };
  if (one_thread) {
    widen_rows(0, rows);
  } else {
    ParallelFor(rows, RowGrain(cols), widen_rows);
  }
}

absl::Status GemmWidened(int64_t m, int64_t n, int64_t k, float alpha,
                         const BFloat16* a, int64_t rsa, int64_t csa,
                         const BFloat16* b, int64_t rsb, int64_t csb,
                         float beta, float* c, int64_t rsc, int64_t csc,
                         bool one_thread) {
  const int64_t panel =
      std::max<int64_t>(1, kPanelElements / std::max<int64_t>(k, 1));
  // Uninitialised: every element is written before it is read.
  const auto wide_b = std::make_unique_for_overwrite<float[]>(k * n);
  const auto wide_a =
      std::make_unique_for_overwrite<float[]>(std::min(m, panel) * k);
  Widen(b, rsb, csb, k, n, wide_b.get(), one_thread);
  for (int64_t row = 0; row < m; row += panel) {
    const int64_t rows = std::min(panel, m - row);
    Widen(a + row * rsa, rsa, csa, rows, k, wide_a.get(), one_thread);
    if (absl::Status st =
            Gemm<float>(rows, n, k, alpha, wide_a.get(), k, 1, wide_b.get(), n,
                        1, beta, c + row * rsc, rsc, csc, one_thread);
        !st.ok()) {
      return st;
    }
  }
  return absl::OkStatus();
}

// PanelBuffer holds `n` uint32 starting on a 64-byte boundary (a vector of
// B's panel never straddles two cache lines).
class PanelBuffer {
 public:
  explicit PanelBuffer(int64_t n)
      : storage_(std::make_unique_for_overwrite<uint32_t[]>(n + 16)) {
    const auto address = reinterpret_cast<uintptr_t>(storage_.get());
    data_ = reinterpret_cast<uint32_t*>((address + 63) & ~uintptr_t{63});
  }
  uint32_t* data() const { return data_; }

 private:
  std::unique_ptr<uint32_t[]> storage_;
  uint32_t* data_;
};

// Operand: `lines` lines of k bfloat16 (the rows of A or the columns of B),
// element kk of line l at src[l * ls + kk * ks].
struct Operand {
  const BFloat16* src;
  int64_t ls, ks, lines, k;
};

// PackPairsAdjacent packs `valid` lines from `first` of an operand whose k
// runs along memory (ks == 1): a pair is the 4 bytes at element 2q, in the
// order vdpbf16ps wants (x86-64 is little-endian), one load per pair.
void PackPairsAdjacent(const Operand& x, int64_t first, int64_t valid,
                       int64_t width, uint32_t* out) {
  const int64_t whole = x.k / 2;
  for (int64_t l = 0; l < valid; ++l) {
    const BFloat16* line = x.src + (first + l) * x.ls;
    for (int64_t q = 0; q < whole; ++q)
      std::memcpy(&out[q * width + l], line + 2 * q, 4);
    if (x.k % 2 == 1) out[whole * width + l] = line[x.k - 1].bits;
  }
}

// PackPairsAcross packs `valid` lines from `first` of an operand strided
// both ways, pair by pair.
void PackPairsAcross(const Operand& x, int64_t first, int64_t valid,
                     int64_t width, uint32_t* out) {
  for (int64_t q = 0; q < (x.k + 1) / 2; ++q) {
    const BFloat16* lo = x.src + first * x.ls + 2 * q * x.ks;
    for (int64_t l = 0; l < valid; ++l) {
      const uint32_t hi = 2 * q + 1 < x.k ? lo[l * x.ls + x.ks].bits : 0;
      out[q * width + l] = lo[l * x.ls].bits | hi << 16;
    }
  }
}

// PackAlongLines packs panels [begin, end) of an operand whose lines run
// along memory (ls == 1: A by columns, B by rows): each pair of k is read
// once across all their lines, in order, two rows interleaved a vector at
// a time.
void PackAlongLines(const Operand& x, int64_t begin, int64_t end, int64_t width,
                    uint32_t* dst) {
  const int64_t pairs = (x.k + 1) / 2;
  for (int64_t q = 0; q < pairs; ++q) {
    const BFloat16* lo = x.src + 2 * q * x.ks;
    const BFloat16* hi = lo + x.ks;
    for (int64_t p = begin; p < end; ++p) {
      uint32_t* out = dst + p * pairs * width + q * width;
      const int64_t first = p * width;
      const int64_t valid = std::min(width, x.lines - first);
      if (2 * q + 1 < x.k) {
        for (int64_t l = first; l < first + valid; ++l) {
          out[l - first] = lo[l].bits | uint32_t{hi[l].bits} << 16;
        }
      } else {
        for (int64_t l = first; l < first + valid; ++l)
          out[l - first] = lo[l].bits;
      }
    }
  }
}

// PackPanels writes operand `x` as GemmBf16Args's panels of `width` lines
// at `dst`: pairs of k, zeros past k and past the last line.
void PackPanels(const Operand& x, int64_t width, uint32_t* dst,
                bool one_thread) {
  const int64_t pairs = (x.k + 1) / 2;
  auto pack = [=](int64_t begin, int64_t end) {
    // The last panel's lines past the operand's stay zeros.
    if (end * width > x.lines)
      std::fill_n(dst + (end - 1) * pairs * width, pairs * width, 0u);
    if (x.ls == 1 && x.ks != 1)
      return PackAlongLines(x, begin, end, width, dst);
    for (int64_t p = begin; p < end; ++p) {
      uint32_t* out = dst + p * pairs * width;
      const int64_t valid = std::min(width, x.lines - p * width);
      if (x.ks == 1) {
        PackPairsAdjacent(x, p * width, valid, width, out);
      } else {
        PackPairsAcross(x, p * width, valid, width, out);
      }
    }
  };
  const int64_t panels = (x.lines + width - 1) / width;
  if (one_thread) {
    pack(0, panels);
  } else {
    ParallelFor(panels, RowGrain(width * x.k), pack);
  }
}

// RunTiles runs `gemm` over all tiles of `args`, split over the threads by
// row panels, or by column panels where there are more of those; each
// element of C is computed whole by one call, so the split never changes a
// bit.
void RunTiles(GemmBf16Fn gemm, const GemmBf16Args& args, bool one_thread) {
  const int64_t row_panels = (args.m + kGemmBf16Rows - 1) / kGemmBf16Rows;
  const int64_t col_panels = (args.n + kGemmBf16Cols - 1) / kGemmBf16Cols;
  const int64_t tile_madds =
      kGemmBf16Rows * kGemmBf16Cols * std::max<int64_t>(1, 2 * args.pairs);
  if (one_thread) {
    gemm(args, 0, row_panels, 0, col_panels);
  } else if (row_panels >= col_panels) {
    const int64_t grain =
        std::max<int64_t>(1, kMinChunkMadds / (tile_madds * col_panels));
    ParallelFor(row_panels, grain, [&](int64_t begin, int64_t end) {
      gemm(args, begin, end, 0, col_panels);
    });
  } else {
    const int64_t grain =
        std::max<int64_t>(1, kMinChunkMadds / (tile_madds * row_panels));
    ParallelFor(col_panels, grain, [&](int64_t begin, int64_t end) {
      gemm(args, 0, row_panels, begin, end);
    });
  }
}

void GemmNative(GemmBf16Fn gemm, int64_t m, int64_t n, int64_t k, float alpha,
                const BFloat16* a, int64_t rsa, int64_t csa, const BFloat16* b,
                int64_t rsb, int64_t csb, float beta, float* c, int64_t rsc,
                int64_t csc, bool one_thread) {
  const int64_t pairs = (k + 1) / 2;
  const int64_t col_panels = (n + kGemmBf16Cols - 1) / kGemmBf16Cols;
  const PanelBuffer packed_b(col_panels * kGemmBf16Cols * pairs);
  PackPanels({b, csb, rsb, n, k}, kGemmBf16Cols, packed_b.data(), one_thread);
  const int64_t chunk =
      std::max<int64_t>(
          1, kPanelElements / std::max<int64_t>(k, 1) / kGemmBf16Rows) *
      kGemmBf16Rows;
  const int64_t chunk_rows =
      std::min(chunk, (m + kGemmBf16Rows - 1) / kGemmBf16Rows * kGemmBf16Rows);
  const PanelBuffer packed_a(chunk_rows * pairs);
  for (int64_t row = 0; row < m; row += chunk) {
    const int64_t rows = std::min(chunk, m - row);
    PackPanels({a + row * rsa, rsa, csa, rows, k}, kGemmBf16Rows,
               packed_a.data(), one_thread);
    const GemmBf16Args args = {.m = rows,
                               .n = n,
                               .pairs = pairs,
                               .alpha = alpha,
                               .a = packed_a.data(),
                               .b = packed_b.data(),
                               .beta = beta,
                               .c = c + row * rsc,
                               .rsc = rsc,
                               .csc = csc};
    RunTiles(gemm, args, one_thread);
  }
}

}  // namespace

absl::Status GemmBFloat16On(GemmBf16Fn gemm, int64_t m, int64_t n, int64_t k,
                            float alpha, const BFloat16* a, int64_t rsa,
                            int64_t csa, const BFloat16* b, int64_t rsb,
                            int64_t csb, float beta, float* c, int64_t rsc,
                            int64_t csc, bool one_thread) {
  if (absl::Status st = ConfigureCpu(); !st.ok()) return st;
  if (gemm == nullptr) {
    return GemmWidened(m, n, k, alpha, a, rsa, csa, b, rsb, csb, beta, c, rsc,
                       csc, one_thread);
  }
  if (m > 0 && n > 0) {
    GemmNative(gemm, m, n, k, alpha, a, rsa, csa, b, rsb, csb, beta, c, rsc,
               csc, one_thread);
  }
  return absl::OkStatus();
}

absl::Status GemmBFloat16(int64_t m, int64_t n, int64_t k, float alpha,
                          const BFloat16* a, int64_t rsa, int64_t csa,
                          const BFloat16* b, int64_t rsb, int64_t csb,
                          float beta, float* c, int64_t rsc, int64_t csc,
                          bool one_thread) {
  if (absl::Status st = ConfigureCpu(); !st.ok()) return st;
  const absl::StatusOr<Bf16Products> products = ActiveBf16Products();
  if (!products.ok()) return products.status();
  return GemmBFloat16On(products->gemm, m, n, k, alpha, a, rsa, csa, b, rsb,
                        csb, beta, c, rsc, csc, one_thread);
}

}  // namespace dagrad
