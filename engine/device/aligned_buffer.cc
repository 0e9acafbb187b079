#include "engine/device/aligned_buffer.h"

#include <cstdlib>
#include <cstring>

namespace dagrad {

std::shared_ptr<void> AllocateAligned(size_t bytes) {
  const size_t size = AlignUp(bytes == 0 ? 1 : bytes);
  void* p = std::aligned_alloc(kAlignment, size);
  if (p == nullptr) return nullptr;
  std::memset(p, 0, size);
  return std::shared_ptr<void>(p, [](void* q) { std::free(q); });
}

}  // namespace dagrad
