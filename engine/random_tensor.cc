#include "engine/random_tensor.h"

#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "engine/status_macros.h"

namespace dagrad {
namespace {

// The stream name of a factory's draws: a tensor made with seed s is the
// parameter named this would be with Initializer(...).WithSeed(s).
constexpr char kStream[] = "random_tensor";

absl::Status Invalid(absl::string_view function, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(function, ": ", what));
}

absl::StatusOr<Tensor> Draw(absl::string_view function, DType dtype, const Shape& shape,
                            const Initializer& init, uint64_t seed) {
  if (!IsAnyFloat(dtype)) {
    return Invalid(function, absl::StrCat("dtype must be a float, got ", DTypeName(dtype)));
  }
  absl::StatusOr<Tensor> out = Tensor::Zeros(dtype, shape);
  if (!out.ok()) return Invalid(function, absl::StrCat("shape: ", out.status().message()));
  if (absl::Status st = init.Validate(shape, dtype); !st.ok()) {
    return Invalid(function, st.message());
  }
  DAGRAD_RETURN_IF_ERROR(init.Fill(seed, kStream, *out));
  return out;
}

bool Finite(double x) { return std::isfinite(x); }

}  // namespace

absl::StatusOr<Tensor> RandomNormal(DType dtype, const Shape& shape, double mean, double std,
                                    uint64_t seed) {
  constexpr char kName[] = "RandomNormal";
  if (!Finite(mean)) return Invalid(kName, absl::StrCat("mean must be finite, got ", mean));
  if (!(std >= 0) || !Finite(std)) {
    return Invalid(kName, absl::StrCat("std must be finite and >= 0, got ", std));
  }
  return Draw(kName, dtype, shape, Initializer::Normal(mean, std), seed);
}

absl::StatusOr<Tensor> RandomUniform(DType dtype, const Shape& shape, double low, double high,
                                     uint64_t seed) {
  constexpr char kName[] = "RandomUniform";
  if (!Finite(low) || !Finite(high) || !(low < high)) {
    return Invalid(kName, absl::StrCat("needs finite bounds low < high, got low ", low,
                                       ", high ", high));
  }
  return Draw(kName, dtype, shape, Initializer::Uniform(low, high), seed);
}

absl::StatusOr<Tensor> RandomTruncatedNormal(DType dtype, const Shape& shape, double mean,
                                             double std, double low, double high,
                                             uint64_t seed) {
  constexpr char kName[] = "RandomTruncatedNormal";
  if (!Finite(mean)) return Invalid(kName, absl::StrCat("mean must be finite, got ", mean));
  if (!(std > 0) || !Finite(std)) {
    return Invalid(kName, absl::StrCat("std must be finite and > 0, got ", std));
  }
  if (!Finite(low) || !Finite(high) || !(low < high)) {
    return Invalid(kName, absl::StrCat("needs finite bounds low < high, got low ", low,
                                       ", high ", high));
  }
  return Draw(kName, dtype, shape, Initializer::TruncatedNormal(mean, std, low, high), seed);
}

bool MatchesName(absl::string_view pattern, absl::string_view name) {
  // Iterative glob: on a mismatch, let the last '*' swallow one more char.
  size_t p = 0, n = 0, star = absl::string_view::npos, resume = 0;
  while (n < name.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == name[n])) {
      ++p;
      ++n;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      resume = n;
    } else if (star != absl::string_view::npos) {
      p = star + 1;
      n = ++resume;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

namespace {

// Drawn checks what InitParameter needs and returns the new value.
absl::StatusOr<Tensor> Drawn(const Executor& exec, const Value& variable,
                             const Initializer& init) {
  if (!variable.ok() || variable.graph() != &exec.graph() || !variable.node().is_variable()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "InitParameter: '", variable.path(), "' is not a variable of this executor's graph"));
  }
  const Node& node = variable.node();
  if (absl::Status st = init.Validate(node.shape, node.dtype); !st.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("InitParameter '", node.path(), "': ", st.message()));
  }
  DAGRAD_ASSIGN_OR_RETURN(Tensor value, Tensor::Zeros(node.dtype, node.shape));
  DAGRAD_RETURN_IF_ERROR(init.Fill(exec.options().seed, node.path(), value));
  return value;
}

}  // namespace

absl::Status InitParameter(Executor& exec, Value variable, const Initializer& init) {
  DAGRAD_ASSIGN_OR_RETURN(Tensor value, Drawn(exec, variable, init));
  return exec.Assign(variable, value);
}

absl::StatusOr<int> InitParametersBy(Executor& exec, const std::vector<Value>& parameters,
                                     const ParameterRule& rule) {
  std::vector<std::pair<Value, Tensor>> drawn;
  for (const Value& p : parameters) {
    if (!p.ok()) return p.status();
    const std::optional<Initializer> init = rule(absl::StrReplaceAll(p.path(), {{"/", "."}}), p);
    if (!init) continue;
    DAGRAD_ASSIGN_OR_RETURN(Tensor value, Drawn(exec, p, *init));
    drawn.emplace_back(p, std::move(value));
  }
  for (auto& [p, value] : drawn) DAGRAD_RETURN_IF_ERROR(exec.Assign(p, value));
  return static_cast<int>(drawn.size());
}

absl::StatusOr<int> InitParameters(Executor& exec, const std::vector<Value>& parameters,
                                   absl::string_view pattern, const Initializer& init) {
  DAGRAD_ASSIGN_OR_RETURN(
      int count, InitParametersBy(exec, parameters,
                                  [&](const std::string& name,
                                      const Value&) -> std::optional<Initializer> {
                                    if (MatchesName(pattern, name)) return init;
                                    return std::nullopt;
                                  }));
  if (count == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "InitParameters: pattern '", pattern, "' matches none of the ", parameters.size(),
        " parameters given (names as in checkpoints: h.0.attn.c_proj.weight)"));
  }
  return count;
}

}  // namespace dagrad
