// CRC-32C against the standard check value, the iSCSI test vectors of
// RFC 3720 (B.4) and a bit-at-a-time rendering of the definition; and
// extension at every split point.

#include "engine/io/crc32c.h"

#include <string>

#include "gtest/gtest.h"

namespace dagrad::testing {
namespace {

// BitwiseCrc32c is the definition, one bit at a time: reflected polynomial
// 0x82F63B78, initial value and final xor 0xFFFFFFFF.
uint32_t BitwiseCrc32c(const std::string& bytes) {
  uint32_t c = 0xFFFFFFFF;
  for (unsigned char b : bytes) {
    c ^= b;
    for (int bit = 0; bit < 8; ++bit) c = (c >> 1) ^ ((c & 1) ? 0x82F63B78 : 0);
  }
  return ~c;
}

TEST(Crc32c, StandardCheckValue) {
  EXPECT_EQ(Crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(Crc32c(""), 0u);
}

TEST(Crc32c, Rfc3720Vectors) {
  std::string ascending, descending;
  for (int i = 0; i < 32; ++i) {
    ascending += static_cast<char>(i);
    descending += static_cast<char>(31 - i);
  }
  EXPECT_EQ(Crc32c(std::string(32, '\0')), 0x8A9136AAu);
  EXPECT_EQ(Crc32c(std::string(32, '\xFF')), 0x62A8AB43u);
  EXPECT_EQ(Crc32c(ascending), 0x46DD794Eu);
  EXPECT_EQ(Crc32c(descending), 0x113FDB5Cu);
}

TEST(Crc32c, MatchesTheDefinitionAtEveryLengthAndSplit) {
  std::string bytes;
  for (int i = 0; i < 70; ++i) bytes += static_cast<char>((i * 73 + 11) & 0xFF);
  for (size_t n = 0; n <= bytes.size(); ++n) {
    const std::string prefix = bytes.substr(0, n);
    const uint32_t want = BitwiseCrc32c(prefix);
    ASSERT_EQ(Crc32c(prefix), want) << n;
    for (size_t split = 0; split <= n; ++split) {
      ASSERT_EQ(ExtendCrc32c(Crc32c(prefix.substr(0, split)), prefix.substr(split)), want)
          << n << " split at " << split;
    }
  }
}

}  // namespace
}  // namespace dagrad::testing
