// The 16-bit floats' conversions (engine/bfloat16.h) against a reference
// written here another way: every one of the 2^16 values of each format
// round-trips, and sweeps of float32 bit patterns (every pattern around
// each rounding boundary, and a stride through all 2^32), of doubles and
// of integers round as the reference's nearest-value search says, ties to
// the even encoding. Then the hand-worked edges: NaN kept with its sign,
// +-inf, +-0, subnormals, ties, overflow, double rounding avoided.

#include "engine/bfloat16.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "absl/strings/str_format.h"
#include "engine/dtype.h"
#include "engine/tensor.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

float FromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Format describes a 16-bit float format from its field widths alone, for
// the reference: the value of every encoding, computed in double.
struct Format {
  int exponent_bits, fraction_bits;

  int bias() const { return (1 << (exponent_bits - 1)) - 1; }
  uint16_t infinity() const { return static_cast<uint16_t>(((1 << exponent_bits) - 1) << fraction_bits); }
  // Value of a finite non-negative encoding.
  double ValueOf(uint32_t bits) const {
    const uint32_t e = bits >> fraction_bits, f = bits & ((1u << fraction_bits) - 1);
    if (e == 0) return std::ldexp(static_cast<double>(f), 1 - bias() - fraction_bits);
    return std::ldexp(static_cast<double>(f + (1u << fraction_bits)),
                      static_cast<int>(e) - bias() - fraction_bits);
  }
};

constexpr Format kBF16{8, 7};
constexpr Format kF16{5, 10};

// Reference rounds x (not NaN) to the nearest encoding of `format` by
// searching its sorted finite values; ties go to the even encoding, and
// from max + half its spacing on to inf.
class Reference {
 public:
  explicit Reference(Format format) : format_(format) {
    for (uint32_t bits = 0; bits < format.infinity(); ++bits) values_.push_back(format.ValueOf(bits));
  }

  uint16_t Round(double x) const {
    const uint16_t sign = std::signbit(x) ? 0x8000 : 0;
    const double a = std::abs(x);
    const size_t n = values_.size();
    const double overflow = values_[n - 1] + (values_[n - 1] - values_[n - 2]) / 2;
    if (a >= overflow) return sign | format_.infinity();
    const size_t hi = std::upper_bound(values_.begin(), values_.end(), a) - values_.begin();
    const size_t lo = hi - 1;  // values_[0] = 0 <= a
    if (values_[lo] == a || hi == n) return static_cast<uint16_t>(sign | lo);
    const double down = a - values_[lo], up = values_[hi] - a;
    const size_t pick = down < up ? lo : up < down ? hi : (lo % 2 == 0 ? lo : hi);
    return static_cast<uint16_t>(sign | pick);
  }

 private:
  Format format_;
  std::vector<double> values_;
};

const Reference& BF16Reference() {
  static const Reference* r = new Reference(kBF16);
  return *r;
}

const Reference& F16Reference() {
  static const Reference* r = new Reference(kF16);
  return *r;
}

bool IsNaN16(uint16_t bits, Format f) {
  return (bits & 0x7fff) > f.infinity();
}

// ---- every 16-bit value ---------------------------------------------------------

TEST(BFloat16, EveryValueRoundTripsThroughFloatAndDouble) {
  for (uint32_t bits = 0; bits < 65536; ++bits) {
    const BFloat16 x{static_cast<uint16_t>(bits)};
    const float f = BFloat16ToFloat(x);
    ASSERT_EQ(Bits(f), bits << 16) << absl::StrFormat("0x%04x", bits);  // the top half
    const uint16_t back = FloatToBFloat16(f).bits;
    const uint16_t via_double = DoubleToBFloat16(static_cast<double>(f)).bits;
    if (IsNaN16(bits, kBF16)) {
      // A NaN stays a NaN, its sign and payload kept, made quiet.
      ASSERT_EQ(back, bits | 0x0040) << absl::StrFormat("0x%04x", bits);
      ASSERT_TRUE(IsNaN16(via_double, kBF16) && (via_double & 0x8000) == (bits & 0x8000));
    } else {
      ASSERT_EQ(back, bits) << absl::StrFormat("0x%04x", bits);
      ASSERT_EQ(via_double, bits) << absl::StrFormat("0x%04x", bits);
    }
  }
}

TEST(Float16, EveryValueRoundTripsThroughFloatAndDouble) {
  for (uint32_t bits = 0; bits < 65536; ++bits) {
    const Float16 x{static_cast<uint16_t>(bits)};
    const float f = Float16ToFloat(x);
    const uint16_t back = FloatToFloat16(f).bits;
    const uint16_t via_double = DoubleToFloat16(static_cast<double>(f)).bits;
    if (IsNaN16(bits, kF16)) {
      ASSERT_TRUE(std::isnan(f));
      ASSERT_EQ(back, bits | 0x0200) << absl::StrFormat("0x%04x", bits);
      ASSERT_TRUE(IsNaN16(via_double, kF16) && (via_double & 0x8000) == (bits & 0x8000));
      continue;
    }
    // The value itself, from the format's definition.
    const double want = (bits & 0x7fff) == kF16.infinity()
                            ? std::numeric_limits<double>::infinity()
                            : kF16.ValueOf(bits & 0x7fff);
    ASSERT_EQ(static_cast<double>(f), (bits & 0x8000) ? -want : want)
        << absl::StrFormat("0x%04x", bits);
    ASSERT_EQ(back, bits) << absl::StrFormat("0x%04x", bits);
    ASSERT_EQ(via_double, bits) << absl::StrFormat("0x%04x", bits);
  }
}

// ---- sweeps against the reference --------------------------------------------

// CheckFloat compares the conversions of the float32 pattern `u` with the
// reference.
void CheckFloat(uint32_t u) {
  const float f = FromBits(u);
  const uint16_t bf = FloatToBFloat16(f).bits, half = FloatToFloat16(f).bits;
  if (std::isnan(f)) {
    ASSERT_TRUE(IsNaN16(bf, kBF16) && (bf >> 15) == (u >> 31)) << absl::StrFormat("0x%08x", u);
    ASSERT_TRUE(IsNaN16(half, kF16) && (half >> 15) == (u >> 31)) << absl::StrFormat("0x%08x", u);
    return;
  }
  ASSERT_EQ(bf, BF16Reference().Round(f)) << absl::StrFormat("0x%08x = %a", u, f);
  ASSERT_EQ(half, F16Reference().Round(f)) << absl::StrFormat("0x%08x = %a", u, f);
}

TEST(Float16Formats, FloatPatternsAroundEveryBFloat16BoundaryRoundToNearestEven) {
  // The low halves next to exact values, ties and the carries between.
  for (uint32_t high = 0; high < 65536; ++high) {
    for (uint32_t low : {0x0000u, 0x0001u, 0x3fffu, 0x7fffu, 0x8000u, 0x8001u, 0xc000u, 0xffffu}) {
      ASSERT_NO_FATAL_FAILURE(CheckFloat(high << 16 | low));
    }
  }
}

TEST(Float16Formats, FloatPatternsAroundEveryFloat16BoundaryRoundToNearestEven) {
  // Each float16 value and the midpoint to the next, and their float32
  // neighbours; both signs.
  for (uint32_t bits = 0; bits < kF16.infinity(); ++bits) {
    const double v = kF16.ValueOf(bits), next = kF16.ValueOf(bits + 1);
    for (double at : {v, (v + next) / 2}) {
      const uint32_t u = Bits(static_cast<float>(at));
      for (uint32_t d = 0; d <= 2; ++d) {
        for (uint32_t sign : {0u, 0x80000000u}) {
          ASSERT_NO_FATAL_FAILURE(CheckFloat(sign | (u + d)));
          if (u >= d) ASSERT_NO_FATAL_FAILURE(CheckFloat(sign | (u - d)));
        }
      }
    }
  }
}

TEST(Float16Formats, AStrideThroughEveryFloatPatternRoundsToNearestEven) {
  // 65521 is prime: 2^16 steps visit patterns of every exponent and sign.
  for (uint64_t u = 0; u < (uint64_t{1} << 32); u += 65521) {
    ASSERT_NO_FATAL_FAILURE(CheckFloat(static_cast<uint32_t>(u)));
  }
}

TEST(Float16Formats, DoublesRoundOnceToNearestEven) {
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int> exponent(-160, 140);
  std::uniform_real_distribution<double> mantissa(1.0, 2.0);
  for (int i = 0; i < 200000; ++i) {
    const double x = std::ldexp(mantissa(rng), exponent(rng)) * (i % 2 ? -1 : 1);
    ASSERT_EQ(DoubleToBFloat16(x).bits, BF16Reference().Round(x)) << absl::StrFormat("%a", x);
    ASSERT_EQ(DoubleToFloat16(x).bits, F16Reference().Round(x)) << absl::StrFormat("%a", x);
  }
  // Just above a tie of each format, below float32's resolution: rounding
  // to float32 first (RNE) would make it a tie and round it down to even.
  const double above_bf16_tie = 1 + std::ldexp(1, -8) + std::ldexp(1, -30);
  EXPECT_EQ(DoubleToBFloat16(above_bf16_tie).bits, 0x3f81);  // 1.0078125
  EXPECT_EQ(FloatToBFloat16(static_cast<float>(above_bf16_tie)).bits, 0x3f80);  // float first: 1
  const double above_f16_tie = 1 + std::ldexp(1, -11) + std::ldexp(1, -40);
  EXPECT_EQ(DoubleToFloat16(above_f16_tie).bits, 0x3c01);  // 1 + 2^-10
  // Beyond float32's range: infinities, never undefined conversions.
  EXPECT_EQ(DoubleToBFloat16(1e300).bits, 0x7f80);
  EXPECT_EQ(DoubleToBFloat16(-1e39).bits, 0xff80);
  EXPECT_EQ(DoubleToFloat16(-1e300).bits, 0xfc00);
  // Below float32's: zero or the least subnormal, by the sign.
  EXPECT_EQ(DoubleToBFloat16(-1e-300).bits, 0x8000);
}

TEST(Float16Formats, IntegersRoundOnceToNearestEven) {
  std::mt19937_64 rng(11);
  for (int i = 0; i < 100000; ++i) {
    // |x| < 2^53: exact as a double, so the reference takes it.
    const int64_t x = static_cast<int64_t>(rng() >> (11 + i % 50)) * (i % 3 ? 1 : -1);
    ASSERT_EQ(ConvertElement<BFloat16>(x).bits, BF16Reference().Round(static_cast<double>(x))) << x;
    ASSERT_EQ(ConvertElement<Float16>(x).bits, F16Reference().Round(static_cast<double>(x))) << x;
  }
  // Hand-worked: 257 and 259 are ties of bfloat16 (spacing 2 in [256, 512)).
  EXPECT_EQ(ConvertElement<BFloat16>(int64_t{257}).bits, 0x4380);  // 256
  EXPECT_EQ(ConvertElement<BFloat16>(int32_t{259}).bits, 0x4382);  // 260
  EXPECT_EQ(ConvertElement<Float16>(int64_t{2049}).bits, 0x6800);  // 2048
  EXPECT_EQ(ConvertElement<Float16>(int32_t{70000}).bits, 0x7c00);  // inf
  // 2^60 + 2^52 + 1 lies just above a tie (spacing 2^53 there); a double
  // holds it as the tie itself, which rounds down.
  const int64_t above_tie = (int64_t{1} << 60) + (int64_t{1} << 52) + 1;
  EXPECT_EQ(ConvertElement<BFloat16>(above_tie).bits, 0x5d81);  // 2^60 + 2^53
  EXPECT_EQ(ConvertElement<BFloat16>(std::numeric_limits<int64_t>::min()).bits, 0xdf00);  // -2^63
  EXPECT_EQ(ConvertElement<BFloat16>(std::numeric_limits<int64_t>::max()).bits, 0x5f00);  // 2^63
  EXPECT_EQ(ConvertElement<BFloat16>(true).bits, 0x3f80);
}

// ---- the edges, hand-worked ---------------------------------------------------------

TEST(BFloat16, NaNStaysNaNWithItsSignAndNeverBecomesInf) {
  // A signalling NaN with only low payload bits would truncate to inf; all
  // ones would carry into the sign.
  EXPECT_EQ(FloatToBFloat16(FromBits(0x7f800001)).bits, 0x7fc0);
  EXPECT_EQ(FloatToBFloat16(FromBits(0xff800001)).bits, 0xffc0);
  EXPECT_EQ(FloatToBFloat16(FromBits(0x7fffffff)).bits, 0x7fff);
  EXPECT_EQ(FloatToBFloat16(-std::numeric_limits<float>::quiet_NaN()).bits, 0xffc0);
  EXPECT_EQ(FloatToFloat16(FromBits(0x7f800001)).bits, 0x7e00);
  EXPECT_EQ(FloatToFloat16(FromBits(0xffffffff)).bits, 0xffff);
  EXPECT_EQ(DoubleToBFloat16(-std::numeric_limits<double>::quiet_NaN()).bits, 0xffc0);
  EXPECT_TRUE(std::isnan(BFloat16ToFloat({0xff81})) && std::signbit(BFloat16ToFloat({0xff81})));
}

TEST(BFloat16, InfinitiesZerosSubnormalsTiesAndOverflow) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(FloatToBFloat16(inf).bits, 0x7f80);
  EXPECT_EQ(FloatToBFloat16(-inf).bits, 0xff80);
  EXPECT_EQ(FloatToBFloat16(0.0f).bits, 0x0000);
  EXPECT_EQ(FloatToBFloat16(-0.0f).bits, 0x8000);
  // Subnormals are kept: 2^-133 is the least, 2^-134 a tie to even (0).
  EXPECT_EQ(FloatToBFloat16(std::ldexp(1.0f, -133)).bits, 0x0001);
  EXPECT_EQ(FloatToBFloat16(std::ldexp(1.0f, -134)).bits, 0x0000);
  EXPECT_EQ(FloatToBFloat16(std::ldexp(3.0f, -134)).bits, 0x0002);
  EXPECT_EQ(BFloat16ToFloat({0x0001}), std::ldexp(1.0f, -133));
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: to even, 1; 1 + 3 x 2^-8
  // is halfway between 1 + 2^-7 and 1 + 2^-6: to even, up.
  EXPECT_EQ(FloatToBFloat16(1.00390625f).bits, 0x3f80);
  EXPECT_EQ(FloatToBFloat16(1.01171875f).bits, 0x3f82);
  EXPECT_EQ(FloatToBFloat16(1.00390637f).bits, 0x3f81);  // just above the tie
  EXPECT_EQ(FloatToBFloat16(1.00781238f).bits, 0x3f81);  // just below 1 + 2^-7
  // The largest finite value, 0x7f7f = 3.3895314e38; from its spacing's
  // half above on, inf; float32's largest rounds there.
  EXPECT_EQ(FloatToBFloat16(3.3895314e38f).bits, 0x7f7f);
  EXPECT_EQ(FloatToBFloat16(3.3961776e38f).bits, 0x7f80);
  EXPECT_EQ(FloatToBFloat16(3.3961773e38f).bits, 0x7f7f);
  EXPECT_EQ(FloatToBFloat16(std::numeric_limits<float>::max()).bits, 0x7f80);
}

TEST(Float16, InfinitiesZerosSubnormalsTiesAndOverflow) {
  EXPECT_EQ(FloatToFloat16(65504.0f).bits, 0x7bff);
  EXPECT_EQ(FloatToFloat16(65519.996f).bits, 0x7bff);
  EXPECT_EQ(FloatToFloat16(65520.0f).bits, 0x7c00);  // a tie: to even, inf
  EXPECT_EQ(FloatToFloat16(-1e10f).bits, 0xfc00);
  EXPECT_EQ(FloatToFloat16(-0.0f).bits, 0x8000);
  EXPECT_EQ(FloatToFloat16(std::ldexp(1.0f, -24)).bits, 0x0001);
  EXPECT_EQ(FloatToFloat16(std::ldexp(1.0f, -25)).bits, 0x0000);  // a tie: to even
  EXPECT_EQ(FloatToFloat16(std::ldexp(1.5f, -25)).bits, 0x0001);
  EXPECT_EQ(FloatToFloat16(std::ldexp(3.0f, -25)).bits, 0x0002);  // a tie: to even
  EXPECT_EQ(FloatToFloat16(std::ldexp(1.0f, -14)).bits, 0x0400);  // the least normal
  EXPECT_EQ(FloatToFloat16(std::ldexp(1023.5f, -24)).bits, 0x0400);  // rounds up into it
  EXPECT_EQ(Float16ToFloat({0x03ff}), std::ldexp(1023.0f, -24));
  EXPECT_EQ(Float16ToFloat({0x8001}), -std::ldexp(1.0f, -24));
  EXPECT_EQ(FloatToFloat16(1.0f / 3).bits, 0x3555);
}

TEST(Float16Formats, ConvertElementWidensFirstAndRoundsOnce) {
  EXPECT_EQ(ConvertElement<double>(Float16{0x3c00}), 1.0);
  EXPECT_EQ(ConvertElement<Float16>(BFloat16{0x4049}).bits, 0x4248);  // 3.140625, exact
  EXPECT_EQ(ConvertElement<BFloat16>(Float16{0x3555}).bits, 0x3eab);  // 0.33325195 -> 0.33398438
  EXPECT_TRUE(ConvertElement<bool>(BFloat16{0x7fc0}));                // NaN is true
  EXPECT_FALSE(ConvertElement<bool>(BFloat16{0x8000}));               // -0 is false
  EXPECT_EQ(ConvertElement<int32_t>(BFloat16{0xc2f7}), -123);        // -123.5 truncates
  EXPECT_EQ(ConvertElement<float>(int64_t{3}), 3.0f);
}

// ---- dtypes and tensors ------------------------------------------------------------

TEST(Float16Formats, DTypes) {
  EXPECT_EQ(SizeOf(DType::kBFloat16), 2u);
  EXPECT_EQ(SizeOf(DType::kFloat16), 2u);
  EXPECT_EQ(DTypeName(DType::kBFloat16), "bfloat16");
  EXPECT_EQ(DTypeName(DType::kFloat16), "float16");
  EXPECT_EQ(DTypeFromName("bfloat16"), DType::kBFloat16);
  EXPECT_EQ(DTypeFromName("float16"), DType::kFloat16);
  EXPECT_FALSE(IsFloating(DType::kBFloat16));
  EXPECT_TRUE(IsReducedFloat(DType::kFloat16) && IsAnyFloat(DType::kFloat16));
  EXPECT_FALSE(IsReducedFloat(DType::kFloat32));
  EXPECT_EQ(GradientDType(DType::kBFloat16), DType::kFloat32);
  EXPECT_EQ(GradientDType(DType::kFloat64), DType::kFloat64);
  ASSERT_OK(CheckValueFits(3.38e38, DType::kBFloat16, "value"));
  ASSERT_OK(CheckValueFits(-std::numeric_limits<double>::infinity(), DType::kFloat16, "value"));
  EXPECT_STATUS(CheckValueFits(3.4e38, DType::kBFloat16, "value"),
                absl::StatusCode::kInvalidArgument, "value 3.4e+38 is beyond bfloat16's range");
  EXPECT_STATUS(CheckValueFits(-65505, DType::kFloat16, "fill"),
                absl::StatusCode::kInvalidArgument, "fill -65505 is beyond float16's range");
}

TEST(Float16Formats, ConvertFloatsFloatAtAndFirstNonFinite) {
  const Tensor x = T<float>({4}, {1.0f / 3, -2.0f, 65520.0f, 1e-8f});
  ASSERT_OK_AND_ASSIGN(Tensor bf, ConvertFloats(x, DType::kBFloat16));
  ASSERT_OK_AND_ASSIGN(Tensor half, ConvertFloats(x, DType::kFloat16));
  EXPECT_EQ(bf.data<BFloat16>()[0].bits, 0x3eab);
  EXPECT_EQ(half.data<Float16>()[0].bits, 0x3555);
  EXPECT_EQ(FloatAt(bf.raw_data(), bf.dtype(), 1), -2.0);
  EXPECT_EQ(FloatAt(half.raw_data(), half.dtype(), 3), 0.0);  // below half the least subnormal
  EXPECT_EQ(FirstNonFinite(bf.raw_data(), bf.dtype(), 4), -1);
  EXPECT_EQ(FirstNonFinite(half.raw_data(), half.dtype(), 4), 2);  // 65520: inf
  ASSERT_OK_AND_ASSIGN(Tensor wide, ConvertFloats(bf, DType::kFloat64));
  EXPECT_EQ(wide.data<double>()[0], 0.333984375);
  EXPECT_STATUS(ConvertFloats(T<int32_t>({1}, {1}), DType::kBFloat16).status(),
                absl::StatusCode::kInvalidArgument,
                "ConvertFloats: int32 (1,) to bfloat16: both must be float dtypes");
}

}  // namespace
}  // namespace dagrad::testing
