// engine/random_tensor.h
//
// Random tensors, as torch.randn, torch.rand and torch.nn.init.trunc_normal_
// make them, and torch.nn.init's in-place re-initialisation of parameters,
// applied to an executor's variables by name.
//
// The draws are Initializer's (engine/initializer.h): Philox4x32-10 keyed on
// the seed and a name, computed in double and rounded once to the dtype, so
// the same seed gives the same tensor on every machine and any float dtype
// (float32, float64, bfloat16, float16).
//
// RandomNormal, RandomUniform and RandomTruncatedNormal make tensors;
// InitParameter, InitParametersBy and InitParameters re-draw parameters.

#ifndef DAGRAD_ENGINE_RANDOM_TENSOR_H_
#define DAGRAD_ENGINE_RANDOM_TENSOR_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/dtype.h"
#include "engine/executor.h"
#include "engine/initializer.h"
#include "engine/shape.h"
#include "engine/tensor.h"

namespace dagrad {

// RandomNormal returns a `dtype` tensor of `shape` drawn from N(mean, std)
// (torch.randn(shape) * std + mean). InvalidArgument naming the argument:
// a dtype that is not a float, a bad shape, a mean that is not finite, a
// std that is negative or not finite.
//
//   DAGRAD_ASSIGN_OR_RETURN(Tensor noise, RandomNormal(DType::kFloat64, {1000}, 0.0, 0.5, 7));
absl::StatusOr<Tensor> RandomNormal(DType dtype, const Shape& shape, double mean, double std,
                                    uint64_t seed);

// RandomUniform returns a `dtype` tensor of `shape` drawn from U[low, high)
// (torch.rand(shape) * (high - low) + low). InvalidArgument naming the
// argument: dtype and shape as RandomNormal's, bounds that are not finite or
// low >= high.
//
//   DAGRAD_ASSIGN_OR_RETURN(Tensor u, RandomUniform(DType::kFloat32, {2, 3}, -1.0, 1.0, 7));
absl::StatusOr<Tensor> RandomUniform(DType dtype, const Shape& shape, double low, double high,
                                     uint64_t seed);

// RandomTruncatedNormal returns a `dtype` tensor of `shape` drawn from
// N(mean, std) restricted to [low, high], absolute bounds as
// torch.nn.init.trunc_normal_'s (Initializer::TruncatedNormal).
// InvalidArgument naming the argument: dtype and shape as RandomNormal's,
// std <= 0, bounds that are not finite, low >= high, or bounds that hold no
// probability mass a double can represent.
//
//   DAGRAD_ASSIGN_OR_RETURN(Tensor w,
//       RandomTruncatedNormal(DType::kFloat32, {64, 64}, 0.0, 0.02, -0.04, 0.04, 7));
absl::StatusOr<Tensor> RandomTruncatedNormal(DType dtype, const Shape& shape, double mean,
                                             double std, double low, double high,
                                             uint64_t seed);

// MatchesName is true when `name` matches the glob `pattern` as a whole:
// '*' matches any run of characters ('.' included), '?' any one character.
//
//   bool match = MatchesName("*c_proj.weight", "h.0.mlp.c_proj.weight");   // true
bool MatchesName(absl::string_view pattern, absl::string_view name);

// InitParameter re-initialises one variable held by `exec` from `init`,
// drawn as the executor would have drawn it had the graph declared it with
// `init` (the initializer's seed, else the executor's, keyed on the path):
// torch.nn.init's functions, for a dagrad executor. InvalidArgument: a Value
// that is not a variable of exec's graph, or an initializer Validate
// rejects for its shape and dtype (naming the path).
//
//   Graph g;
//   Value w = g.Parameter("w", {4, 4}, Initializer::XavierUniform());
//   Executor exec(g);
//   DAGRAD_RETURN_IF_ERROR(InitParameter(exec, w, Initializer::TruncatedNormal(0.0, 0.02)));
absl::Status InitParameter(Executor& exec, Value variable, const Initializer& init);

// ParameterRule names the initializer a parameter gets from its checkpoint
// name (its path with '.' for '/') and Value, or nullopt to leave it.
using ParameterRule =
    std::function<std::optional<Initializer>(const std::string& name, const Value& parameter)>;

// InitParametersBy re-initialises, as InitParameter, each of `parameters`
// that `rule` gives an initializer, and returns how many. All are checked
// before any is written, so an error changes nothing. Errors: an error
// Value among them, and InitParameter's.
//
//   Graph g;
//   Value w = g.Parameter("w", {4, 4}, Initializer::XavierUniform());
//   Executor exec(g);
//   ParameterRule matrices = [](const std::string&, const Value& p) {
//     return p.rank() >= 2 ? std::optional(Initializer::Normal(0.0, 0.02)) : std::nullopt;
//   };
//   DAGRAD_ASSIGN_OR_RETURN(int n, InitParametersBy(exec, g.Parameters(), matrices));   // 1
absl::StatusOr<int> InitParametersBy(Executor& exec, const std::vector<Value>& parameters,
                                     const ParameterRule& rule);

// InitParameters re-initialises, as InitParameter, each of `parameters`
// whose checkpoint name ("h.0.attn.c_proj.weight") matches the glob
// `pattern` (MatchesName), and returns how many it did, as
// InitParametersBy. InvalidArgument: a pattern that matches none of them
// (naming it), and InitParametersBy's errors.
//
//   Graph g;
//   { Graph::Scope fc(g, "fc"); g.Parameter("bias", {4}, Initializer::Ones()); }
//   Executor exec(g);
//   DAGRAD_ASSIGN_OR_RETURN(int biases, InitParameters(exec, g.Parameters(), "*.bias",
//                                                      Initializer::Zeros()));   // 1
absl::StatusOr<int> InitParameters(Executor& exec, const std::vector<Value>& parameters,
                                   absl::string_view pattern, const Initializer& init);

}  // namespace dagrad

#endif  // DAGRAD_ENGINE_RANDOM_TENSOR_H_
