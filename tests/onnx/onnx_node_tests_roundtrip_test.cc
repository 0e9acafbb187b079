// ONNX's node tests (libonnx-testdata's node directory) round-tripped
// through export and ONNX Runtime: every case that passes import
// (tests/onnx/support/node_tests.h) is exported again (SerializeOnnx) and
// run under ONNX Runtime on each of its data sets, all cases in one node
// process (tools/onnx/ort_batch.js), and compared with the case's outputs
// within ONNX's tolerance. A round trip is "not run" only when the imported
// graph holds an op whose OpDef declares NoOnnx (its reason is given) or
// when a graph input or output is bfloat16, which ONNX Runtime for Node
// cannot feed or fetch; any other outcome, an export refused included, is a
// failure. The test prints, per ONNX op, the import counts and the round
// trip's: the README's table. Skipped without node and onnxruntime-node
// (bash tools/setup.sh --onnx).

#ifdef DAGRAD_HAVE_ONNX

#include <onnx/onnx_pb.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/io/checkpoint.h"
#include "engine/io/file_io.h"
#include "engine/io/safetensors.h"
#include "engine/op.h"
#include "ops/onnx/export.h"
#include "tests/onnx/support/node_tests.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

// OrtBatch is tools/onnx/ort_batch.js, or "" when node or onnxruntime-node
// is missing.
std::string OrtBatch() {
  const std::string dir = std::string(DAGRAD_TEST_DATA_DIR) + "/../../tools/onnx";
  const std::string probe =
      "cd '" + dir + "' && node -e \"require('onnxruntime-node')\" > /dev/null 2>&1";
  return std::system(probe.c_str()) == 0 ? dir + "/ort_batch.js" : "";
}

std::vector<Value> Fetches(const OnnxModel& m) {
  std::vector<Value> fetches;
  for (const OnnxValue& out : m.outputs) fetches.push_back(out.value);
  return fetches;
}

// NotRunReason says why the round trip of `m` cannot run ("" when it can):
// the ops on its outputs' path that declare NoOnnx, or a bfloat16 input
// or output.
std::string NotRunReason(const OnnxModel& m) {
  std::set<std::string> why;
  for (NodeId id : AncestorsOf(*m.graph, Fetches(m))) {
    const Node& n = m.graph->node(id);
    if (n.kind == NodeKind::kOp && n.op->onnx.kind == OnnxKind::kNone) {
      why.insert(absl::StrCat("dagrad's ", n.op->name, " does not export: ", n.op->onnx.text));
    }
  }
  if (!why.empty()) return absl::StrJoin(why, "; ");
  std::vector<OnnxValue> ends = m.inputs;
  ends.insert(ends.end(), m.outputs.begin(), m.outputs.end());
  for (const OnnxValue& v : ends) {
    if (v.value.node().dtype == DType::kBFloat16) {
      return "onnxruntime-node has no bfloat16 tensors to feed or fetch";
    }
  }
  return "";
}

// ExportCase writes m's export to `work`/model.onnx and each data set's
// inputs (by the exported inputs' names) to `work`/SET.in.safetensors,
// and adds a manifest line per data set (ort_batch.js's format).
absl::Status ExportCase(const std::string& case_dir, const onnx::ModelProto& proto,
                        const OnnxModel& m, const std::string& work, std::ostream& manifest) {
  SafetensorsFile vars;
  for (const OnnxParameter& p : m.parameters) {
    vars.tensors.push_back({CheckpointName(p.value.node()), p.initial});
  }
  OnnxExportOptions options{.variables = &vars};
  for (const OnnxValue& out : m.outputs) options.output_names.push_back(out.name);
  DAGRAD_ASSIGN_OR_RETURN(std::string bytes, SerializeOnnx(*m.graph, Fetches(m), options));
  DAGRAD_RETURN_IF_ERROR(WriteFileAtomically(work + "/model.onnx", bytes));
  for (const std::string& set : SortedEntries(case_dir, "test_data_set_")) {
    DAGRAD_ASSIGN_OR_RETURN(OnnxInputValues values, DataInputs(proto.graph(), case_dir + "/" + set));
    SafetensorsFile in;
    for (const OnnxValue& v : m.inputs) in.tensors.push_back({v.value.node().name, values[v.name]});
    DAGRAD_RETURN_IF_ERROR(WriteSafetensors(work + "/" + set + ".in.safetensors", in));
    manifest << work << "/" << set << '\t' << work << "/model.onnx\t" << work << "/" << set
             << ".in.safetensors\t" << work << "/" << set << ".out.safetensors\n";
  }
  return absl::OkStatus();
}

// RunOrt runs ort_batch.js on the manifest and returns, per manifest name,
// "" for a run that succeeded or ONNX Runtime's error.
absl::StatusOr<std::map<std::string, std::string>> RunOrt(const std::string& runner,
                                                          const std::string& work) {
  const std::string command = "node '" + runner + "' '" + work + "/manifest.tsv' > '" + work +
                              "/results.txt'";
  if (int rc = std::system(command.c_str()); rc != 0) {
    return absl::InternalError(absl::StrCat(command, " exited with ", rc));
  }
  DAGRAD_ASSIGN_OR_RETURN(std::string text, ReadFile(work + "/results.txt"));
  std::map<std::string, std::string> results;
  std::istringstream lines(text);
  for (std::string status, name, rest; lines >> status >> name && std::getline(lines, rest);) {
    results[name] = status == "ok" ? "" : absl::StrCat("ONNX Runtime: ", rest);
  }
  return results;
}

// CompareSet compares ONNX Runtime's outputs of one data set with the
// case's: "" when they match, else what differs.
absl::StatusOr<std::string> CompareSet(const std::string& case_dir, const std::string& set,
                                       const OnnxModel& m, const std::string& work) {
  DAGRAD_ASSIGN_OR_RETURN(SafetensorsFile got,
                          ReadSafetensors(work + "/" + set + ".out.safetensors"));
  for (size_t i = 0; i < m.outputs.size(); ++i) {
    const Tensor* out = got.Find(m.outputs[i].name);
    if (out == nullptr) return absl::StrCat("no output ", m.outputs[i].name);
    DAGRAD_ASSIGN_OR_RETURN(
        Tensor want, ReadTensorFile(absl::StrCat(case_dir, "/", set, "/output_", i, ".pb")));
    std::string bad = Mismatch(*out, want);
    if (!bad.empty()) return absl::StrCat(set, ": output ", i, " (", m.outputs[i].name, "): ", bad);
  }
  return std::string();
}

// RoundtripRow counts, for one ONNX op type, the cases that use it by import
// outcome and by round-trip outcome (pass, fail, not run), with the
// reasons of those not supported or not run.
struct RoundtripRow {
  int import[3] = {0, 0, 0}, trip[3] = {0, 0, 0};
  std::set<std::string> import_reasons, trip_reasons;
};

// One case: its model, its import result and, when imported, the model
// and the round trip's result.
struct Case {
  std::string name, dir, work;
  onnx::ModelProto proto;
  CaseResult import;
  OnnxModel model;
  std::optional<CaseResult> trip;  // set once it is final; kNotSupported: not run
};

// Prepare imports a case and, when it passes, exports it for ONNX Runtime.
void Prepare(Case& c, std::ostream& manifest) {
  c.import = ImportCase(c.dir, c.proto, &c.model);
  if (c.import.outcome != Outcome::kPassed) return;
  if (std::string why = NotRunReason(c.model); !why.empty()) {
    c.trip = CaseResult{Outcome::kNotSupported, why, {}};
    return;
  }
  std::error_code error;
  if (!std::filesystem::create_directories(c.work, error)) {
    c.trip = CaseResult{Outcome::kFailed, c.work + ": " + error.message(), {}};
  } else if (absl::Status e = ExportCase(c.dir, c.proto, c.model, c.work, manifest); !e.ok()) {
    c.trip = CaseResult{Outcome::kFailed, e.ToString(), {}};
  }
}

// Finish sets the round trip's result of an exported case from ONNX
// Runtime's runs of its data sets.
void Finish(Case& c, const std::map<std::string, std::string>& ort) {
  for (const std::string& set : SortedEntries(c.dir, "test_data_set_")) {
    auto it = ort.find(c.work + "/" + set);
    if (it == ort.end() || !it->second.empty()) {
      c.trip = CaseResult{Outcome::kFailed, it == ort.end() ? set + ": no run" : it->second, {}};
      return;
    }
    absl::StatusOr<std::string> bad = CompareSet(c.dir, set, c.model, c.work);
    if (!bad.ok() || !bad->empty()) {
      c.trip = CaseResult{Outcome::kFailed, bad.ok() ? *bad : bad.status().ToString(), {}};
      return;
    }
  }
  c.trip = CaseResult{Outcome::kPassed, "", {}};
}

void Tally(const Case& c, std::map<std::string, RoundtripRow>& rows) {
  for (const std::string& op : CaseOps(c.proto.graph(), c.import)) {
    RoundtripRow& row = rows[op];
    ++row.import[static_cast<int>(c.import.outcome)];
    if (c.import.outcome == Outcome::kNotSupported) row.import_reasons.insert(c.import.reason);
    if (!c.trip) continue;
    ++row.trip[static_cast<int>(c.trip->outcome)];
    if (c.trip->outcome == Outcome::kNotSupported) row.trip_reasons.insert(c.trip->reason);
  }
}

std::string Cell(int count, const std::set<std::string>& reasons) {
  if (reasons.empty()) return absl::StrCat(count);
  return absl::StrCat(count, " (", absl::StrJoin(reasons, "; "), ")");
}

// PrintTable prints one row per ONNX op type in `rows`, as the README has it.
void PrintRoundtripTable(const std::map<std::string, RoundtripRow>& rows) {
  std::cout << "| ONNX op | import pass | fail | not supported | round trip pass | fail | "
               "not run |\n| --- | --- | --- | --- | --- | --- | --- |\n";
  for (const auto& [op, r] : rows) {
    std::cout << "| " << op << " | " << r.import[0] << " | " << r.import[1] << " | "
              << Cell(r.import[2], r.import_reasons) << " | " << r.trip[0] << " | " << r.trip[1]
              << " | " << Cell(r.trip[2], r.trip_reasons) << " |\n";
  }
}

TEST(OnnxNodeTestsRoundTrip, EveryImportedCasePassesInOnnxRuntime) {
  const std::string root = absl::StrCat(kOnnxTestData, "/node");
  std::vector<std::string> names = SortedEntries(root, "");
  if (names.empty()) GTEST_SKIP() << root << " is missing (apt-get install libonnx-testdata)";
  const std::string runner = OrtBatch();
  if (runner.empty()) {
    GTEST_SKIP() << "node or onnxruntime-node is not installed (bash tools/setup.sh --onnx)";
  }
  const std::string work = NewTempDir("onnx_node_roundtrip");
  std::vector<Case> cases(names.size());
  {
    std::ofstream manifest(work + "/manifest.tsv");
    for (size_t i = 0; i < names.size(); ++i) {
      cases[i].name = names[i];
      cases[i].dir = root + "/" + names[i];
      cases[i].work = work + "/" + names[i];
      ASSERT_TRUE(ReadModel(cases[i].dir, cases[i].proto)) << names[i] << ": no model";
      Prepare(cases[i], manifest);
    }
  }
  absl::StatusOr<std::map<std::string, std::string>> ort = RunOrt(runner, work);
  ASSERT_TRUE(ort.ok()) << ort.status();
  int counts[3] = {0, 0, 0};
  std::map<std::string, RoundtripRow> rows;
  for (Case& c : cases) {
    if (c.import.outcome == Outcome::kPassed && !c.trip) Finish(c, *ort);
    if (c.import.outcome == Outcome::kFailed) ADD_FAILURE() << c.name << ": " << c.import.reason;
    if (c.trip) ++counts[static_cast<int>(c.trip->outcome)];
    if (c.trip && c.trip->outcome == Outcome::kFailed) {
      ADD_FAILURE() << c.name << " (round trip): " << c.trip->reason;
    }
    Tally(c, rows);
  }
  std::cout << "onnx node tests round trip: " << cases.size() << " cases, "
            << counts[0] + counts[1] + counts[2] << " imported: " << counts[0] << " passed, "
            << counts[1] << " failed, " << counts[2] << " not run\n";
  PrintRoundtripTable(rows);
}

}  // namespace
}  // namespace dagrad::testing

#endif  // DAGRAD_HAVE_ONNX
