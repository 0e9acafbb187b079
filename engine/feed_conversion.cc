#include "engine/feed_conversion.h"

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "engine/status_macros.h"

namespace dagrad {
namespace {

// ExactAs is whether the integer v is a value of F: 2^63, what int64's
// largest values round to, is the one result outside int64's range.
template <typename F>
bool ExactAs(int64_t v) {
  const F f = static_cast<F>(v);
  return f < static_cast<F>(9223372036854775808.0) && static_cast<int64_t>(f) == v;
}

template <typename I, typename F>
absl::StatusOr<Tensor> Converted(const Tensor& t, const Node& input) {
  DAGRAD_ASSIGN_OR_RETURN(Tensor out, Tensor::Zeros(input.dtype, t.shape()));
  const I* in = t.data<I>();
  F* to = out.data<F>();
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    if (!ExactAs<F>(in[i])) {
      return absl::InvalidArgumentError(absl::StrCat(
          "feed of '", input.path(), "': ", DTypeName(t.dtype()), " value ", in[i],
          " at element ", i, " is not exactly a ", DTypeName(input.dtype),
          " (which holds every integer up to 2^", sizeof(F) == 8 ? 53 : 24,
          " in magnitude); feed a ", DTypeName(input.dtype), " tensor"));
    }
    to[i] = static_cast<F>(in[i]);
  }
  return out;
}

absl::StatusOr<Tensor> ToFloat(const Tensor& t, const Node& input) {
  const bool wide = t.dtype() == DType::kInt64;
  if (input.dtype == DType::kFloat64) {
    return wide ? Converted<int64_t, double>(t, input) : Converted<int32_t, double>(t, input);
  }
  return wide ? Converted<int64_t, float>(t, input) : Converted<int32_t, float>(t, input);
}

}  // namespace

absl::StatusOr<std::optional<std::vector<std::pair<Value, Tensor>>>> ExactFloatFeeds(
    const Graph& g, const std::vector<std::pair<Value, Tensor>>& feeds) {
  std::optional<std::vector<std::pair<Value, Tensor>>> converted;
  for (size_t i = 0; i < feeds.size(); ++i) {
    const auto& [value, tensor] = feeds[i];
    if (!value.ok() || value.graph() != &g || !IsInteger(tensor.dtype())) continue;
    const Node& node = g.node(value.id());
    if (node.kind != NodeKind::kInput || !IsFloating(node.dtype) || node.shape != tensor.shape()) {
      continue;
    }
    if (!converted) converted = feeds;
    DAGRAD_ASSIGN_OR_RETURN((*converted)[i].second, ToFloat(tensor, node));
  }
  return converted;
}

}  // namespace dagrad
