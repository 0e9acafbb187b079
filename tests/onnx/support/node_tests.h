// tests/onnx/support/node_tests.h
//
// ONNX's own backend test cases (Debian's libonnx-testdata) as dagrad runs
// them, for the node-test suites (tests/onnx/onnx_node_tests*_test.cc).
// ImportCase imports a case as `dagrad eval` imports a model for the values
// it is fed (ImportOnnxForValues: a shape or axes input is folded), runs it
// on each of its data sets and compares with its outputs within ONNX's
// backend tolerance (|got - want| <= 1e-7 + 1e-3 |want|). A case is "not
// supported" only for what dagrad lacks (the reason says what: an op
// outside the import table, an element type, a sequence or optional input,
// training-mode Dropout's random mask); any other outcome, a refusal of a
// supported op's feature included, is a failure.
//
//   onnx::ModelProto proto;
//   ASSERT_TRUE(ReadModel(dir, proto));
//   OnnxModel m;
//   CaseResult r = ImportCase(dir, proto, &m);   // r.outcome == Outcome::kPassed

#ifndef DAGRAD_TESTS_ONNX_SUPPORT_NODE_TESTS_H_
#define DAGRAD_TESTS_ONNX_SUPPORT_NODE_TESTS_H_

#include <onnx/onnx_pb.h>

#include <dirent.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/io/file_io.h"
#include "engine/status_macros.h"
#include "ops/onnx/import.h"
#include "ops/onnx/import_graph.h"
#include "ops/onnx/onnx_tensor.h"
#include "ops/onnx/run.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {

inline constexpr char kOnnxTestData[] = "/usr/share/libonnx-testdata/data";

// SortedEntries lists the entries of `dir` that start with `prefix`, sorted.
inline std::vector<std::string> SortedEntries(const std::string& dir, const std::string& prefix) {
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

// ReadModel parses `dir`/model.onnx into `proto`; false when it cannot.
inline bool ReadModel(const std::string& dir, onnx::ModelProto& proto) {
  absl::StatusOr<std::string> bytes = ReadFile(dir + "/model.onnx");
  return bytes.ok() && proto.ParseFromString(*bytes);
}

// ReadTensorFile reads a data set's tensor; `declared` is the element type
// the model declares for it. The test data of ONNX 1.12 hold bfloat16
// values as UINT16 words (numpy has no bfloat16): read as the model's
// BFLOAT16.
inline absl::StatusOr<Tensor> ReadTensorFile(const std::string& path, int32_t declared = 0) {
  DAGRAD_ASSIGN_OR_RETURN(std::string bytes, ReadFile(path));
  onnx::TensorProto proto;
  if (!proto.ParseFromString(bytes)) return absl::InvalidArgumentError("bad TensorProto " + path);
  if (declared == onnx::TensorProto::BFLOAT16 && proto.data_type() == onnx::TensorProto::UINT16) {
    proto.set_data_type(onnx::TensorProto::BFLOAT16);
  }
  return TensorFromOnnx(proto, "");
}

// DeclaredType is the element type a graph input or output declares.
inline int32_t DeclaredType(const onnx::ValueInfoProto& info) {
  return info.type().tensor_type().elem_type();
}

// Mismatch compares as ONNX's backend tests do (numpy.testing.assert_allclose
// with rtol 1e-3, atol 1e-7; integers and bools exactly): "" when `got`
// matches `want`, else where it does not. Bfloat16 is compared within one
// of its ulps (rtol 2^-7): ONNX 1.12's data truncate to bfloat16, where
// ONNX 1.14 and later, PyTorch, ONNX Runtime and dagrad round to nearest
// even (test_cast_FLOAT_to_BFLOAT16's 0.48033667 is 0.4785 truncated,
// 0.4805 rounded).
inline std::string Mismatch(const Tensor& got, const Tensor& want) {
  if (got.dtype() != want.dtype() || got.shape() != want.shape()) {
    return absl::StrCat("got ", got.TypeString(), ", want ", want.TypeString());
  }
  const double rtol = got.dtype() == DType::kBFloat16 ? 1.0 / 128 : 1e-3;
  std::vector<double> g = AsDoubles(got), w = AsDoubles(want);
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(w[i]) && std::isnan(g[i])) continue;
    if (g[i] == w[i]) continue;
    if (!(std::fabs(g[i] - w[i]) <= 1e-7 + rtol * std::fabs(w[i]))) {
      return absl::StrCat("element ", i, ": got ", g[i], ", want ", w[i]);
    }
  }
  return "";
}

enum class Outcome { kPassed, kFailed, kNotSupported };

struct CaseResult {
  Outcome outcome;
  std::string reason;
  // For a case not supported, the op types it is not supported for: the
  // ops outside the table, else every op of the case.
  std::vector<std::string> blame;
};

// DataInputs reads a data set's inputs, by the names of the graph inputs
// that are not initializers (input_<i>.pb is the i-th).
inline absl::StatusOr<OnnxInputValues> DataInputs(const onnx::GraphProto& graph,
                                                  const std::string& dir) {
  OnnxInputValues values;
  int i = 0;
  for (const onnx::ValueInfoProto& info : graph.input()) {
    bool is_initializer = false;
    for (const auto& init : graph.initializer()) is_initializer |= init.name() == info.name();
    if (is_initializer) continue;
    DAGRAD_ASSIGN_OR_RETURN(
        values[info.name()],
        ReadTensorFile(absl::StrCat(dir, "/input_", i++, ".pb"), DeclaredType(info)));
  }
  return values;
}

// RunDataSet feeds one test_data_set_* and compares every output: "" when
// all match, else the first that does not.
inline absl::StatusOr<std::string> RunDataSet(const onnx::GraphProto& graph, OnnxModel& m,
                                              Executor& exec, Plan& plan,
                                              const std::string& dir) {
  DAGRAD_ASSIGN_OR_RETURN(OnnxInputValues inputs, DataInputs(graph, dir));
  DAGRAD_ASSIGN_OR_RETURN(Feeds feeds, OnnxFeeds(m, inputs));
  DAGRAD_ASSIGN_OR_RETURN(std::vector<Tensor> got, exec.Run(plan, feeds));
  for (size_t i = 0; i < got.size(); ++i) {
    DAGRAD_ASSIGN_OR_RETURN(Tensor want, ReadTensorFile(absl::StrCat(dir, "/output_", i, ".pb"),
                                                        DeclaredType(graph.output(i))));
    std::string bad = Mismatch(got[i], want);
    if (!bad.empty()) return absl::StrCat("output ", i, " (", m.outputs[i].name, "): ", bad);
  }
  return std::string();
}

// ContradictedShape names the first input of a data set whose shape is not
// the static shape the model declares for it ("" when none is): such a
// case cannot run anywhere (libonnx-testdata's bfloat16 CastLike cases
// declare 'like' (3, 4) and feed (1,)).
inline std::string ContradictedShape(const onnx::GraphProto& graph,
                                     const OnnxInputValues& values) {
  for (const onnx::ValueInfoProto& info : graph.input()) {
    auto it = values.find(info.name());
    if (it == values.end() || !info.type().tensor_type().has_shape()) continue;
    const onnx::TensorShapeProto& shape = info.type().tensor_type().shape();
    bool same = shape.dim_size() == it->second.shape().rank();
    for (int d = 0; same && d < shape.dim_size(); ++d) {
      same = !shape.dim(d).has_dim_value() || shape.dim(d).dim_value() == it->second.shape()[d];
    }
    if (!same) return info.name();
  }
  return "";
}

// What dagrad lacks, by the words of the Unimplemented error that says so,
// and the reason the table gives; any other error is a failure.
inline constexpr std::pair<const char*, const char*> kLacks[] = {
    {"ONNX element type", "an element type dagrad lacks"},
    {"training_mode true", "training-mode Dropout's random mask"},
};

inline CaseResult Classify(const absl::Status& s) {
  if (absl::IsUnimplemented(s)) {
    for (const auto& [words, reason] : kLacks) {
      if (s.message().find(words) != absl::string_view::npos) {
        return {Outcome::kNotSupported, reason, {}};
      }
    }
  }
  return {Outcome::kFailed, s.ToString(), {}};
}

// MissingOps returns the op types of the case outside the import table.
inline std::vector<std::string> MissingOps(const onnx::GraphProto& graph) {
  std::set<std::string> missing;
  for (const onnx::NodeProto& node : graph.node()) {
    if (!OnnxOpTypeSupported(node.domain(), node.op_type())) missing.insert(node.op_type());
  }
  return std::vector<std::string>(missing.begin(), missing.end());
}

// RunImported compiles m's outputs and runs every data set of the case.
inline CaseResult RunImported(const std::string& case_dir, const onnx::ModelProto& proto,
                              OnnxModel& m, const std::vector<std::string>& sets) {
  Executor exec(*m.graph);
  if (absl::Status s = m.LoadParameters(exec); !s.ok()) return Classify(s);
  std::vector<Value> fetches;
  for (const OnnxValue& out : m.outputs) fetches.push_back(out.value);
  absl::StatusOr<std::unique_ptr<Plan>> plan = exec.Compile(fetches);
  if (!plan.ok()) return Classify(plan.status());
  for (const std::string& set : sets) {
    absl::StatusOr<std::string> bad =
        RunDataSet(proto.graph(), m, exec, **plan, case_dir + "/" + set);
    if (!bad.ok()) return Classify(bad.status());
    if (!bad->empty()) return {Outcome::kFailed, absl::StrCat(set, ": ", *bad), {}};
  }
  return {Outcome::kPassed, "", {}};
}

// ImportCase imports the case in `case_dir` (its model parsed in `proto`)
// for its first data set's values and runs it on every data set; when it
// passes and `imported` is given, the imported model is moved there.
inline CaseResult ImportCase(const std::string& case_dir, const onnx::ModelProto& proto,
                             OnnxModel* imported = nullptr) {
  if (std::vector<std::string> missing = MissingOps(proto.graph()); !missing.empty()) {
    return {Outcome::kNotSupported, "not in the import table", missing};
  }
  for (const onnx::ValueInfoProto& in : proto.graph().input()) {
    if (!in.type().has_tensor_type()) {
      return {Outcome::kNotSupported, "a sequence or optional input", {}};
    }
  }
  std::vector<std::string> sets = SortedEntries(case_dir, "test_data_set_");
  if (sets.empty()) return {Outcome::kFailed, "no test data", {}};
  absl::StatusOr<OnnxInputValues> data = DataInputs(proto.graph(), case_dir + "/" + sets[0]);
  if (!data.ok()) return Classify(data.status());
  if (std::string input = ContradictedShape(proto.graph(), *data); !input.empty()) {
    return {Outcome::kNotSupported, "a data set that contradicts its model's input shapes", {}};
  }
  absl::StatusOr<OnnxModel> m = ImportOnnxForValues(case_dir + "/model.onnx", *data);
  if (!m.ok()) return Classify(m.status());
  CaseResult r = RunImported(case_dir, proto, *m, sets);
  if (r.outcome == Outcome::kPassed && imported != nullptr) *imported = std::move(*m);
  return r;
}

// CaseOps returns the op types a case's result counts for: those it blames,
// or every op it holds.
inline std::set<std::string> CaseOps(const onnx::GraphProto& graph, const CaseResult& r) {
  std::set<std::string> ops(r.blame.begin(), r.blame.end());
  if (ops.empty()) {
    for (const onnx::NodeProto& node : graph.node()) ops.insert(node.op_type());
  }
  return ops;
}

}  // namespace dagrad::testing

#endif  // DAGRAD_TESTS_ONNX_SUPPORT_NODE_TESTS_H_
