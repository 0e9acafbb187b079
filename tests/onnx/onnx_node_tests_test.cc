// ONNX's own backend test cases (Debian's libonnx-testdata) as a test
// suite. Every case whose ops are all in the import table is imported, run
// on its inputs and compared with its outputs within ONNX's backend
// tolerance (|got - want| <= 1e-7 + 1e-3 |want|). A case is skipped, with
// its reason, when it has an op outside the table or the importer reports
// a feature dagrad lacks (Unimplemented: an element type, an attribute);
// any other outcome is a failure, and one failure fails the directory's
// test. Each directory prints its passed / failed / skipped counts and the
// ops it misses; the README's coverage table is that output.

#ifdef DAGRAD_HAVE_ONNX

#include <onnx/onnx_pb.h>

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/io/file_io.h"
#include "engine/status_macros.h"
#include "ops/onnx/import.h"
#include "ops/onnx/import_graph.h"
#include "ops/onnx/onnx_tensor.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

constexpr char kTestData[] = "/usr/share/libonnx-testdata/data";

std::vector<std::string> SortedEntries(const std::string& dir, const std::string& prefix) {
  std::vector<std::string> names;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return names;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name.rfind(prefix, 0) == 0 && name != "." && name != "..") names.push_back(name);
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

absl::StatusOr<Tensor> ReadTensorFile(const std::string& path) {
  DAGRAD_ASSIGN_OR_RETURN(std::string bytes, ReadFile(path));
  onnx::TensorProto proto;
  if (!proto.ParseFromString(bytes)) return absl::InvalidArgumentError("bad TensorProto " + path);
  return TensorFromOnnx(proto, "");
}

// Close compares as ONNX's backend tests do (numpy.testing.assert_allclose
// with rtol 1e-3, atol 1e-7); integers and bools exactly.
std::string Mismatch(const Tensor& got, const Tensor& want) {
  if (got.dtype() != want.dtype() || got.shape() != want.shape()) {
    return absl::StrCat("got ", got.TypeString(), ", want ", want.TypeString());
  }
  std::vector<double> g = AsDoubles(got), w = AsDoubles(want);
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(w[i]) && std::isnan(g[i])) continue;
    if (g[i] == w[i]) continue;
    if (!(std::fabs(g[i] - w[i]) <= 1e-7 + 1e-3 * std::fabs(w[i]))) {
      return absl::StrCat("element ", i, ": got ", g[i], ", want ", w[i]);
    }
  }
  return "";
}

enum class Outcome { kPassed, kFailed, kSkipped };

struct CaseResult {
  Outcome outcome;
  std::string reason;
};

// DataInputs reads a data set's inputs, by the names of the graph inputs
// that are not initializers (input_<i>.pb is the i-th).
absl::StatusOr<OnnxInputValues> DataInputs(const onnx::GraphProto& graph,
                                           const std::string& dir) {
  OnnxInputValues values;
  int i = 0;
  for (const onnx::ValueInfoProto& info : graph.input()) {
    bool is_initializer = false;
    for (const auto& init : graph.initializer()) is_initializer |= init.name() == info.name();
    if (is_initializer) continue;
    DAGRAD_ASSIGN_OR_RETURN(values[info.name()],
                            ReadTensorFile(absl::StrCat(dir, "/input_", i++, ".pb")));
  }
  return values;
}

// RunDataSet feeds one test_data_set_* and compares every output.
absl::StatusOr<std::string> RunDataSet(const onnx::GraphProto& graph, OnnxModel& m,
                                       Executor& exec, Plan& plan, const std::string& dir) {
  DAGRAD_ASSIGN_OR_RETURN(OnnxInputValues inputs, DataInputs(graph, dir));
  Feeds feeds;
  for (const OnnxValue& in : m.inputs) feeds.push_back({in.value, inputs[in.name]});
  DAGRAD_ASSIGN_OR_RETURN(std::vector<Tensor> got, exec.Run(plan, feeds));
  for (size_t i = 0; i < got.size(); ++i) {
    DAGRAD_ASSIGN_OR_RETURN(Tensor want, ReadTensorFile(absl::StrCat(dir, "/output_", i, ".pb")));
    std::string bad = Mismatch(got[i], want);
    if (!bad.empty()) return absl::StrCat("output ", i, " (", m.outputs[i].name, "): ", bad);
  }
  return std::string();
}

CaseResult Classify(const absl::Status& s) {
  if (absl::IsUnimplemented(s)) return {Outcome::kSkipped, std::string(s.message())};
  return {Outcome::kFailed, s.ToString()};
}

// Import imports with every input's shape from the data set. Where an op
// needs a value at import that the case passes as an input (Reshape's
// shape, Unsqueeze's axes), it imports again with the integer and scalar
// inputs fixed to their values, as a caller who knows them would.
absl::StatusOr<OnnxModel> Import(const std::string& path, const OnnxInputValues& data) {
  OnnxInputShapes shapes;
  for (const auto& [name, t] : data) shapes[name] = t.shape();
  absl::StatusOr<OnnxModel> m = ImportOnnx(path, shapes);
  if (m.ok() || !absl::IsUnimplemented(m.status()) ||
      m.status().message().find("must be known when importing") == absl::string_view::npos) {
    return m;
  }
  OnnxInputValues fixed;
  for (const auto& [name, t] : data) {
    if (IsInteger(t.dtype()) || t.shape().rank() == 0) fixed[name] = t;
  }
  return ImportOnnx(path, shapes, fixed);
}

CaseResult RunCase(const std::string& case_dir) {
  const std::string path = case_dir + "/model.onnx";
  absl::StatusOr<std::string> bytes = ReadFile(path);
  if (!bytes.ok()) return Classify(bytes.status());
  onnx::ModelProto proto;
  proto.ParseFromString(*bytes);
  if (absl::Status s = CheckOpsSupported(proto.graph()); !s.ok()) return Classify(s);
  for (const onnx::ValueInfoProto& in : proto.graph().input()) {
    if (!in.type().has_tensor_type()) return {Outcome::kSkipped, "a non-tensor input"};
  }
  std::vector<std::string> sets = SortedEntries(case_dir, "test_data_set_");
  if (sets.empty()) return {Outcome::kSkipped, "no test data"};
  absl::StatusOr<OnnxInputValues> data = DataInputs(proto.graph(), case_dir + "/" + sets[0]);
  if (!data.ok()) return Classify(data.status());
  absl::StatusOr<OnnxModel> m = Import(path, *data);
  if (!m.ok()) return Classify(m.status());
  Executor exec(*m->graph);
  if (absl::Status s = m->LoadParameters(exec); !s.ok()) return Classify(s);
  std::vector<Value> fetches;
  for (const OnnxValue& out : m->outputs) fetches.push_back(out.value);
  absl::StatusOr<std::unique_ptr<Plan>> plan = exec.Compile(fetches);
  if (!plan.ok()) return Classify(plan.status());
  for (const std::string& set : sets) {
    absl::StatusOr<std::string> bad =
        RunDataSet(proto.graph(), *m, exec, **plan, case_dir + "/" + set);
    if (!bad.ok()) return Classify(bad.status());
    if (!bad->empty()) return {Outcome::kFailed, absl::StrCat(set, ": ", *bad)};
  }
  return {Outcome::kPassed, ""};
}

// MissingOps counts, per op type outside the table, the cases it keeps out.
void CountMissingOps(const std::string& path, std::map<std::string, int>& missing) {
  absl::StatusOr<std::string> bytes = ReadFile(path);
  onnx::ModelProto proto;
  if (!bytes.ok() || !proto.ParseFromString(*bytes)) return;
  std::map<std::string, int> in_case;
  for (const onnx::NodeProto& node : proto.graph().node()) {
    if (!OnnxOpTypeSupported(node.domain(), node.op_type())) in_case[node.op_type()] = 1;
  }
  for (const auto& [op, one] : in_case) missing[op] += one;
}

class OnnxNodeTests : public ::testing::TestWithParam<std::string> {};

TEST_P(OnnxNodeTests, EverySupportedCasePasses) {
  const std::string root = absl::StrCat(kTestData, "/", GetParam());
  std::vector<std::string> cases = SortedEntries(root, "");
  if (cases.empty()) GTEST_SKIP() << root << " is missing (apt-get install libonnx-testdata)";
  int counts[3] = {0, 0, 0};
  std::map<std::string, int> missing;
  for (const std::string& name : cases) {
    CaseResult r = RunCase(root + "/" + name);
    ++counts[static_cast<int>(r.outcome)];
    if (r.outcome == Outcome::kFailed) ADD_FAILURE() << name << ": " << r.reason;
    if (r.outcome == Outcome::kSkipped && r.reason.find("cannot import") == std::string::npos) {
      std::cout << "  skipped, a feature of a supported op: " << name << ": " << r.reason << "\n";
    }
    CountMissingOps(root + "/" + name + "/model.onnx", missing);
  }
  std::cout << "onnx node tests " << GetParam() << ": " << cases.size() << " cases, "
            << counts[0] << " passed, " << counts[1] << " failed, " << counts[2]
            << " skipped\n  missing ops (cases): "
            << absl::StrJoin(missing, ", ", absl::PairFormatter(" ")) << "\n";
}

INSTANTIATE_TEST_SUITE_P(Libonnx, OnnxNodeTests,
                         ::testing::Values("node", "pytorch-converted", "pytorch-operator",
                                           "simple"),
                         [](const auto& info) {
                           std::string n = info.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

}  // namespace
}  // namespace dagrad::testing

#endif  // DAGRAD_HAVE_ONNX
