// ONNX's own backend test cases (Debian's libonnx-testdata) as a test
// suite: every case of a directory is imported and run as
// tests/onnx/support/node_tests.h says (ImportCase), and one failure fails
// the directory's test. Each directory prints its counts and, per ONNX op,
// the cases that pass, fail and are not supported, with why: the README's
// tables are that output (the node directory's, with its round trip
// through ONNX Runtime, is onnx_node_tests_roundtrip_test.cc's).

#ifdef DAGRAD_HAVE_ONNX

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tests/onnx/support/node_tests.h"

namespace dagrad::testing {
namespace {

// OpRow counts, for one ONNX op type, the cases that use it by outcome,
// and why those not supported are not.
struct OpRow {
  int counts[3] = {0, 0, 0};
  std::set<std::string> reasons;
};

// Tally adds a case to the rows of its ops (CaseOps).
void Tally(const onnx::GraphProto& graph, const CaseResult& r, std::map<std::string, OpRow>& rows) {
  for (const std::string& op : CaseOps(graph, r)) {
    OpRow& row = rows[op];
    ++row.counts[static_cast<int>(r.outcome)];
    if (r.outcome == Outcome::kNotSupported) row.reasons.insert(r.reason);
  }
}

// PrintTable prints one row per ONNX op type in `rows`, as the README has it.
void PrintTable(const std::map<std::string, OpRow>& rows) {
  std::cout << "| ONNX op | pass | fail | not supported |\n| --- | --- | --- | --- |\n";
  for (const auto& [op, row] : rows) {
    std::cout << "| " << op << " | " << row.counts[0] << " | " << row.counts[1] << " | "
              << row.counts[2];
    if (!row.reasons.empty()) std::cout << " (" << absl::StrJoin(row.reasons, "; ") << ")";
    std::cout << " |\n";
  }
}

class OnnxNodeTests : public ::testing::TestWithParam<std::string> {};

TEST_P(OnnxNodeTests, EverySupportedCasePasses) {
  const std::string root = absl::StrCat(kOnnxTestData, "/", GetParam());
  std::vector<std::string> cases = SortedEntries(root, "");
  if (cases.empty()) GTEST_SKIP() << root << " is missing (apt-get install libonnx-testdata)";
  int counts[3] = {0, 0, 0};
  std::map<std::string, OpRow> rows;
  for (const std::string& name : cases) {
    const std::string dir = root + "/" + name;
    onnx::ModelProto proto;
    ASSERT_TRUE(ReadModel(dir, proto)) << name << ": no model";
    CaseResult r = ImportCase(dir, proto);
    ++counts[static_cast<int>(r.outcome)];
    if (r.outcome == Outcome::kFailed) ADD_FAILURE() << name << ": " << r.reason;
    Tally(proto.graph(), r, rows);
  }
  std::cout << "onnx node tests " << GetParam() << ": " << cases.size() << " cases, "
            << counts[0] << " passed, " << counts[1] << " failed, " << counts[2]
            << " not supported\n";
  PrintTable(rows);
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
