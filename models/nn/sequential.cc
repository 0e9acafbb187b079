#include "models/nn/sequential.h"

namespace dagrad::nn {

absl::StatusOr<Sequential> Sequential::Create(Graph& g, absl::string_view prefix) {
  if (absl::Status st = ValidatePrefix("Sequential", prefix); !st.ok()) return st;
  Graph::Scope scope(g, prefix);
  Sequential m;
  m.graph_ = &g;
  m.scope_ = g.scope();
  return m;
}

Value Sequential::operator()(Value x) const {
  if (graph_ == nullptr) return NotCreated(x, "Sequential");
  for (const auto& step : steps_) x = step(x);
  return x;
}

}  // namespace dagrad::nn
