// engine/device/aligned_buffer.h
//
// AllocateAligned returns zeroed host memory aligned to 64 bytes (a cache
// line, and what AVX-512 loads like), owned by a shared_ptr. Zero bytes give
// a valid, non-null pointer; a failed allocation gives nullptr.

#ifndef DAGRAD_ENGINE_DEVICE_ALIGNED_BUFFER_H_
#define DAGRAD_ENGINE_DEVICE_ALIGNED_BUFFER_H_

#include <cstddef>
#include <memory>

namespace dagrad {

inline constexpr size_t kAlignment = 64;

std::shared_ptr<void> AllocateAligned(size_t bytes);

// AlignUp rounds `bytes` up to a multiple of kAlignment.
inline size_t AlignUp(size_t bytes) {
  return (bytes + kAlignment - 1) / kAlignment * kAlignment;
}

}  // namespace dagrad

#endif  // DAGRAD_ENGINE_DEVICE_ALIGNED_BUFFER_H_
