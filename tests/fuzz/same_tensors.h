// tests/fuzz/same_tensors.h
//
// SameTensors: whether two safetensors files hold the same metadata and the
// same tensors (names, dtypes, shapes and bytes), in any order; for the
// fuzzers that parse a file twice (safetensors_fuzzer, checkpoint_fuzzer).
//
//   if (!SameTensors(*file, *back)) std::abort();

#ifndef DAGRAD_TESTS_FUZZ_SAME_TENSORS_H_
#define DAGRAD_TESTS_FUZZ_SAME_TENSORS_H_

#include <cstring>

#include "engine/io/safetensors.h"

inline bool SameTensors(const dagrad::SafetensorsFile& a, const dagrad::SafetensorsFile& b) {
  if (a.tensors.size() != b.tensors.size() || a.metadata != b.metadata) return false;
  for (const auto& [name, x] : a.tensors) {
    const dagrad::Tensor* y = b.Find(name);
    if (y == nullptr || x.dtype() != y->dtype() || x.shape() != y->shape() ||
        std::memcmp(x.raw_data(), y->raw_data(), x.nbytes()) != 0) {
      return false;
    }
  }
  return true;
}

#endif  // DAGRAD_TESTS_FUZZ_SAME_TENSORS_H_
