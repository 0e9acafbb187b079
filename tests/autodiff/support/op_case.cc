#include "tests/autodiff/support/op_case.h"

#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/philox.h"
#include "engine/status_macros.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

std::vector<OpCase>& MutableCases() {
  static auto* cases = new std::vector<OpCase>();
  return *cases;
}

}  // namespace

bool RegisterOpCase(const char* op, OpCase c) {
  c.op = op;
  MutableCases().push_back(std::move(c));
  return true;
}

const std::vector<OpCase>& AllOpCases() { return MutableCases(); }

const OpCase* FindOpCase(const std::string& op) {
  for (const OpCase& c : AllOpCases()) {
    if (c.op == op) return &c;
  }
  return nullptr;
}

CaseBuild Over(std::vector<CaseInput> inputs, InputsBuild build) {
  return [inputs = std::move(inputs), build = std::move(build)](CaseBuilder& b, DType d) {
    In values;
    for (const CaseInput& in : inputs) {
      if (in.value) {
        values.push_back(b.Fixed(in.name, IsReducedFloat(d)   ? *ConvertFloats(*in.value, d)
                                          : d == DType::kFloat32 ? ToFloat32(*in.value)
                                                                 : *in.value));
      } else {
        values.push_back(b.Input(in.name, d, in.shape, in.lo, in.hi));
      }
    }
    b.Out(build(b.graph(), values));
  };
}

Tensor WithNaNs(Tensor t, std::initializer_list<int64_t> positions) {
  for (int64_t i : positions) {
    if (t.dtype() == DType::kFloat32) {
      t.data<float>()[i] = std::numeric_limits<float>::quiet_NaN();
    } else {
      t.data<double>()[i] = std::numeric_limits<double>::quiet_NaN();
    }
  }
  return t;
}

Tensor FloatsOf(DType d, const Shape& shape, const std::vector<double>& values) {
  if (d == DType::kFloat64) return T<double>(shape, values);
  return T<float>(shape, std::vector<float>(values.begin(), values.end()));
}

OpCase UnaryCase(Value (*f)(Value), double lo, double hi) {
  auto at = [f, lo, hi](Shape shape) {
    return
        [f, lo, hi, shape](CaseBuilder& b, DType d) { b.Out(f(b.Input("x", d, shape, lo, hi))); };
  };
  return OpCase{
      .configs = {{.name = "small", .build = at({4, 5})},
                  {.name = "vector_paths", .build = at({37, 129}), .modes = kBackendModes}},
      .bench = at({1024, 1024})};
}

OpCase BinaryCase(Value (*f)(Value, Value)) {
  auto at = [f](Shape a, Shape b, double lo, double hi) {
    return [f, a, b, lo, hi](CaseBuilder& cb, DType d) {
      cb.Out(f(cb.Input("a", d, a, lo, hi), cb.Input("b", d, b, lo, hi)));
    };
  };
  return OpCase{.configs = {{.name = "small", .build = at({2, 3, 4}, {3, 1}, -1, 1)},
                            {.name = "broadcast",
                             .build = at({2, 3, 40}, {3, 1}, -50, 50),
                             .dtypes = kNumeric,
                             .modes = kBackendModes},
                            {.name = "same_shape",
                             .build = at({33, 65}, {33, 65}, -50, 50),
                             .dtypes = kNumeric,
                             .modes = kBackendModes}},
                .bench = at({1024, 1024}, {1024}, -1, 1)};
}

OpCase With(OpCase c, std::vector<OpConfig> more) {
  for (OpConfig& config : more) c.configs.push_back(std::move(config));
  return c;
}

const char* DTypeSuffix(DType d) {
  switch (d) {
    case DType::kFloat32:
      return "f32";
    case DType::kFloat64:
      return "f64";
    case DType::kInt32:
      return "i32";
    case DType::kInt64:
      return "i64";
    case DType::kBool:
      return "bool";
    case DType::kBFloat16:
      return "bf16";
    case DType::kFloat16:
      return "f16";
  }
  return "unknown";
}

std::string ConfigTestName(const OpCase& c, const OpConfig& config, DType d) {
  std::string name = c.op;
  if (!config.name.empty()) absl::StrAppend(&name, "_", config.name);
  if (config.dtypes.size() > 1) absl::StrAppend(&name, "_", DTypeSuffix(d));
  return name;
}

CrossCase ToCrossCase(const OpCase& c, const OpConfig& config, DType d) {
  CaseBuild build = config.build;
  return CrossCase{.name = ConfigTestName(c, config, d),
                   .build = [build, d](CaseBuilder& b) { build(b, d); },
                   .gradients = config.gradients && !config.expect_error,
                   .training = config.training,
                   .fold_constants = config.fold_constants,
                   // A 16-bit run is compared at 16-bit precision throughout:
                   // its float32 gradients pass through bfloat16 roundings
                   // (a product's upstream gradient) that two backends may
                   // round either way.
                   .rtol = config.rtol != 0 || !IsReducedFloat(d) ? config.rtol : DefaultRtol(d),
                   .exact = config.exact,
                   .expect_error = config.expect_error,
                   .runs = config.runs,
                   .cancelling = config.cancelling};
}

absl::Status GradCheckConfig(const OpCase& c, const OpConfig& config) {
  const std::string name = ConfigTestName(c, config, DType::kFloat64);
  const CaseBuild& build = config.build;
  return GradCheck([&build](CaseBuilder& b) { build(b, DType::kFloat64); }, config.gradcheck,
                   config.training, StableHash64(name.data(), name.size()));
}

absl::StatusOr<std::vector<std::string>> OpsGradchecked(const OpConfig& config) {
  Graph g;
  CaseBuilder b(g);
  config.build(b, DType::kFloat64);
  DAGRAD_RETURN_IF_ERROR(g.status());
  std::vector<bool> depends(g.num_nodes(), false);
  for (const auto& [input, value] : b.MakeFeeds(0)) depends[input.id()] = true;
  for (const Value& p : g.Parameters()) depends[p.id()] = true;
  std::vector<std::string> ops;
  for (NodeId id = 0; id < g.num_nodes(); ++id) {
    const Node& n = g.node(id);
    for (NodeId in : n.inputs) {
      if (in != kNoNode && depends[in]) depends[id] = true;
    }
    if (depends[id] && n.kind == NodeKind::kOp) ops.emplace_back(n.op->name);
  }
  return ops;
}

}  // namespace dagrad::testing
