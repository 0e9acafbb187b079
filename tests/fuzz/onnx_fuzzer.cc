// libFuzzer target: the ONNX importer on arbitrary bytes. Whatever they
// are, ImportOnnxFromBytes returns a Status; nothing may crash, hang or
// allocate what the bytes merely declare. A model that imports (its inputs'
// shapes fixed in the file) with small inputs is also compiled and run on
// zeros under a memory limit, so the folded shapes and the graph agree
// with the kernels.

#include <cstdint>
#include <string>
#include <vector>

#include "engine/executor.h"
#include "engine/onnx/import.h"

namespace {

using namespace dagrad;

constexpr int64_t kMaxElements = 1 << 16;

void RunOnZeros(OnnxModel& m) {
  Feeds feeds;
  for (const OnnxValue& in : m.inputs) {
    if (in.value.shape().num_elements() > kMaxElements) return;
    absl::StatusOr<Tensor> zeros = Tensor::Zeros(in.value.dtype(), in.value.shape());
    if (!zeros.ok()) return;
    feeds.push_back({in.value, *zeros});
  }
  std::vector<Value> fetches;
  for (const OnnxValue& out : m.outputs) fetches.push_back(out.value);
  Executor exec(*m.graph, ExecutorOptions{.memory_limit_bytes = int64_t{64} << 20});
  if (!m.LoadParameters(exec).ok()) return;
  absl::StatusOr<std::unique_ptr<Plan>> plan = exec.Compile(fetches);
  if (!plan.ok()) return;
  (void)exec.Run(**plan, feeds).status();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<OnnxModel> model = ImportOnnxFromBytes(bytes, "", {});
  if (model.ok()) RunOnZeros(*model);
  return 0;
}
