// libFuzzer target: DOT export of graphs whose names, scopes and collapse
// paths are arbitrary bytes.

#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <cstdlib>

#include "engine/dot/dot.h"
#include "ops/autodiff/autodiff.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "ops/reduce.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dagrad;
  FuzzedDataProvider in(data, size);
  Graph g;
  std::vector<Value> values;
  std::vector<std::unique_ptr<Graph::Scope>> scopes;
  const int steps = in.ConsumeIntegralInRange(1, 24);
  for (int i = 0; i < steps && in.remaining_bytes() > 0; ++i) {
    switch (in.ConsumeIntegralInRange(0, 5)) {
      case 0:
        scopes.push_back(std::make_unique<Graph::Scope>(g, in.ConsumeRandomLengthString(24)));
        break;
      case 1:
        if (!scopes.empty()) scopes.pop_back();
        break;
      case 2:
        values.push_back(g.Input(in.ConsumeRandomLengthString(24), DType::kFloat32, {2, 2}));
        break;
      case 3:
        values.push_back(g.Parameter(in.ConsumeRandomLengthString(24), {2, 2},
                                     Initializer::Ones()));
        break;
      default:
        if (values.size() >= 2) {
          const Value a = values[in.ConsumeIntegralInRange<size_t>(0, values.size() - 1)];
          const Value b = values[in.ConsumeIntegralInRange<size_t>(0, values.size() - 1)];
          values.push_back(in.ConsumeBool() ? MatMul(a, b) : Tanh(a + b));
        }
    }
  }
  while (!scopes.empty()) scopes.pop_back();  // inner scopes close first
  std::vector<Value> roots;
  for (const Value& v : values) {
    if (v.ok()) roots.push_back(v);
  }
  DotOptions options;
  options.title = in.ConsumeRandomLengthString(32);
  while (in.remaining_bytes() > 0 && options.collapse.size() < 4) {
    options.collapse.push_back(in.ConsumeRandomLengthString(24));
  }
  if (!roots.empty()) {
    Value loss = Sum(roots.back());
    if (auto grads = Gradients(loss, g.Parameters()); grads.ok()) {
      for (const Value& v : *grads) {
        if (v.ok()) roots.push_back(v);
      }
    }
    options.losses.push_back(loss);
    roots.push_back(loss);
  }
  absl::StatusOr<std::string> dot = ToDot(g, roots, options);
  if (dot.ok() && dot->rfind("digraph", 0) != 0) std::abort();
  return 0;
}
