// tests/onnx_eval_batch.cc
//
// Runs many ONNX models through dagrad's importer in one process, for the
// differential and shape-inference tests (tests/onnx/onnx_differential_test.py,
// tests/onnx/onnx_shape_inference_test.py), which would otherwise start one
// `dagrad eval` per model.
//
//   onnx_eval_batch MANIFEST
//
// Each line of MANIFEST is `name<TAB>mode<TAB>model<TAB>input<TAB>output`.
// Mode `fed` is `dagrad eval --model` itself (EvaluateOnnxFiles,
// ops/onnx/run.h): the graph inputs take their shapes from the input file and are fed
// when the plan runs. Mode `folded` fixes them to their values at import
// (OnnxInputValues), so every node whose inputs are all known is folded by
// the importer instead. Before each model it prints `start NAME`; after it
// `ok NAME`, or `error NAME CODE MESSAGE` (CODE is absl's status code
// name, the message on one line). A crash therefore leaves `start NAME` as
// the last line.

#include <iostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "engine/device/device.h"
#include "engine/io/file_io.h"
#include "engine/io/safetensors.h"
#include "engine/status_macros.h"
#include "ops/onnx/import.h"
#include "ops/onnx/run.h"

namespace dagrad {
namespace {

struct Job {
  std::string name, mode, model, input, output;
};

// EvaluateFolded imports `model` with every graph input known, so that
// nothing is left to feed.
absl::Status EvaluateFolded(const Job& job) {
  DAGRAD_ASSIGN_OR_RETURN(SafetensorsFile in, ReadSafetensors(job.input));
  OnnxInputShapes shapes;
  OnnxInputValues values;
  for (const auto& [name, t] : in.tensors) {
    shapes[name] = t.shape();
    values[name] = t;
  }
  DAGRAD_ASSIGN_OR_RETURN(OnnxModel m, ImportOnnx(job.model, shapes, values));
  Executor exec(*m.graph);
  DAGRAD_RETURN_IF_ERROR(m.LoadParameters(exec));
  std::vector<Value> fetches;
  for (const OnnxValue& out : m.outputs) fetches.push_back(out.value);
  DAGRAD_ASSIGN_OR_RETURN(auto plan, exec.Compile(fetches));
  DAGRAD_ASSIGN_OR_RETURN(std::vector<Tensor> got, exec.Run(*plan, {}));
  SafetensorsFile out;
  for (size_t i = 0; i < got.size(); ++i) out.tensors.push_back({m.outputs[i].name, got[i]});
  return WriteSafetensors(job.output, out);
}

absl::Status Evaluate(const Job& job) {
  if (job.mode == "fed") {
    return EvaluateOnnxFiles(job.model, job.input, job.output, CpuDevice(), ExecutorOptions());
  }
  if (job.mode == "folded") return EvaluateFolded(job);
  return absl::InvalidArgumentError("mode must be fed or folded, not " + job.mode);
}

int Main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: onnx_eval_batch MANIFEST\n";
    return 2;
  }
  absl::StatusOr<std::string> manifest = ReadFile(argv[1]);
  if (!manifest.ok()) {
    std::cerr << manifest.status().message() << "\n";
    return 2;
  }
  for (absl::string_view line : absl::StrSplit(*manifest, '\n', absl::SkipEmpty())) {
    std::vector<std::string> f = absl::StrSplit(line, '\t');
    if (f.size() != 5) {
      std::cerr << "manifest line without 5 tab-separated fields: " << line << "\n";
      return 2;
    }
    const Job job{f[0], f[1], f[2], f[3], f[4]};
    std::cout << "start " << job.name << std::endl;
    absl::Status st = Evaluate(job);
    if (st.ok()) {
      std::cout << "ok " << job.name << std::endl;
    } else {
      std::cout << "error " << job.name << " " << absl::StatusCodeToString(st.code()) << " "
                << absl::StrReplaceAll(st.message(), {{"\n", " "}}) << std::endl;
    }
  }
  return 0;
}

}  // namespace
}  // namespace dagrad

int main(int argc, char** argv) { return dagrad::Main(argc, argv); }
