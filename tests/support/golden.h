// tests/support/golden.h
//
// Reads PyTorch goldens written by tools/goldens/*.py (see golden_io.py for
// the format) from tests/data/goldens/<file>.json.
//
//   ASSERT_OK_AND_ASSIGN(GoldenCase c, LoadGolden("elementwise", "add_broadcast"));
//   const Tensor& a = c.inputs.at("a");

#ifndef DAGRAD_TESTS_SUPPORT_GOLDEN_H_
#define DAGRAD_TESTS_SUPPORT_GOLDEN_H_

#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "engine/tensor.h"
#include "nlohmann/json.hpp"

namespace dagrad::testing {

struct GoldenCase {
  std::map<std::string, Tensor> inputs;
  std::map<std::string, Tensor> outputs;
  nlohmann::json attrs;
};

// LoadGolden returns case `name` of golden file `file` (without ".json").
absl::StatusOr<GoldenCase> LoadGolden(const std::string& file, const std::string& name);

// GoldenCaseNames lists the cases of a golden file.
absl::StatusOr<std::vector<std::string>> GoldenCaseNames(const std::string& file);

// ExpectParity checks `got` against PyTorch's `want` within 1e-5 relative;
// elements near zero are compared against the tensor's scale (float32
// rounding differs between the two engines). `what` names the tensor.
void ExpectParity(const Tensor& got, const Tensor& want, const std::string& what);

}  // namespace dagrad::testing

#endif  // DAGRAD_TESTS_SUPPORT_GOLDEN_H_
