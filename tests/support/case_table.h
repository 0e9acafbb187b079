// tests/support/case_table.h
//
// Cases, the builder of the cross-check table that CudaCrossCases()
// (tests/support/cuda_cases.h) returns, shared by the files that fill it:
// cuda_cases.cc (every op through each of its kernel's paths) and
// cuda_edge_cases.cc (NaN, wrap-around, signed zeros and sizes past the
// grid limits).
//
//   Cases cs;
//   cs.Floats("exp", [](CaseBuilder& b, DType d) { b.Out(Exp(b.Input("x", d, {7}))); });
//   std::vector<CrossCase> table = cs.Take();   // exp_f32, exp_f64

#ifndef DAGRAD_TESTS_SUPPORT_CASE_TABLE_H_
#define DAGRAD_TESTS_SUPPORT_CASE_TABLE_H_

#include <functional>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/tensor.h"
#include "tests/support/backend_check.h"

namespace dagrad::testing {

using Build = std::function<void(CaseBuilder&)>;
using TypedBuild = std::function<void(CaseBuilder&, DType)>;

// Suffix returns the dtype's short name in case names: f32, f64, i32, i64,
// bool.
inline const char* Suffix(DType d) {
  switch (d) {
    case DType::kFloat32: return "f32";
    case DType::kFloat64: return "f64";
    case DType::kInt32: return "i32";
    case DType::kInt64: return "i64";
    case DType::kBool: return "bool";
  }
  return "?";
}

class Cases {
 public:
  // Add registers one case.
  CrossCase& Add(std::string name, Build build) {
    cases_.push_back(CrossCase{.name = std::move(name), .build = std::move(build)});
    return cases_.back();
  }
  // Each registers `build` once per dtype, named <name>_<dtype>.
  void Each(const std::string& name, std::initializer_list<DType> dtypes, TypedBuild build,
            CrossCase options = {}) {
    for (DType d : dtypes) {
      CrossCase c = options;
      c.name = absl::StrCat(name, "_", Suffix(d));
      c.build = [build, d](CaseBuilder& b) { build(b, d); };
      cases_.push_back(std::move(c));
    }
  }
  void Floats(const std::string& name, TypedBuild build, CrossCase options = {}) {
    Each(name, {DType::kFloat32, DType::kFloat64}, std::move(build), std::move(options));
  }
  // Error registers a case whose runs must fail identically on both.
  void Error(std::string name, Build build) {
    CrossCase& c = Add(std::move(name), std::move(build));
    c.expect_error = true;
    c.gradients = false;
  }
  std::vector<CrossCase> Take() { return std::move(cases_); }

 private:
  std::vector<CrossCase> cases_;
};

inline constexpr std::initializer_list<DType> kNumeric = {DType::kFloat32, DType::kFloat64,
                                                          DType::kInt32, DType::kInt64};
inline constexpr std::initializer_list<DType> kFloating = {DType::kFloat32, DType::kFloat64};

// EdgeCases adds the cases of cuda_edge_cases.cc.
void EdgeCases(Cases& cs);
// GeluAndSamplingCases adds the cases of cuda_nn_cases.cc.
void GeluAndSamplingCases(Cases& cs);

}  // namespace dagrad::testing

#endif  // DAGRAD_TESTS_SUPPORT_CASE_TABLE_H_
