// engine/io/crc32c.h
//
// CRC-32C (Castagnoli), the checksum of iSCSI, ext4 and LevelDB: it guards
// checkpoint data against corruption (see engine/io/checkpoint.h). Portable
// table-driven code, eight bytes a round; no CPU-specific instructions.
//
//   uint32_t crc = Crc32c("123456789");            // 0xE3069283
//   crc = ExtendCrc32c(Crc32c("1234"), "56789");    // the same value

#ifndef DAGRAD_ENGINE_IO_CRC32C_H_
#define DAGRAD_ENGINE_IO_CRC32C_H_

#include <cstdint>

#include "absl/strings/string_view.h"

namespace dagrad {

// ExtendCrc32c returns the CRC-32C of the bytes that gave `crc` followed by
// `data`: ExtendCrc32c(Crc32c(a), b) == Crc32c(a + b).
uint32_t ExtendCrc32c(uint32_t crc, absl::string_view data);

// Crc32c returns the CRC-32C of `data` (0 for no bytes).
inline uint32_t Crc32c(absl::string_view data) { return ExtendCrc32c(0, data); }

}  // namespace dagrad

#endif  // DAGRAD_ENGINE_IO_CRC32C_H_
