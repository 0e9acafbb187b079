// libFuzzer target: the ONNX importer on arbitrary bytes. Whatever they
// are, the import returns a Status; nothing may crash, hang or allocate
// what the bytes merely declare. A model that imports (its inputs' shapes
// fixed in the file) with small inputs is also compiled and run on zeros
// under a memory limit, so the folded shapes and the graph agree with the
// kernels.
//
// An input is a model imported from memory (external data refused), or,
// when it begins with "DGXD", a model read from a folder of its own:
//
//   "DGXD" <model size n, 4 bytes, little-endian> <n bytes: the model> <data.bin's bytes>
//
// The folder (one per process) holds the model as model.onnx, the rest of
// the input as data.bin, and what a hostile model may name: a FIFO
// (fifo.bin), links to data.bin (link.bin), to /etc/passwd (outside.bin),
// to /dev/zero (zero.bin) and to nothing (dangling.bin), and a folder
// (sub). tests/fuzz/onnx_seeds.py writes the seeds of both kinds.
//
// Every model is also imported as `dagrad eval` imports one for the values
// it is fed (ImportOnnxForValues, ops/onnx/run.h), its integer inputs
// holding small numbers taken from the input's last bytes, so that the
// shapes, axes and indices a model takes as inputs fold: the specialised
// graph runs on those values.

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "engine/executor.h"
#include "ops/onnx/import.h"
#include "ops/onnx/run.h"

namespace {

using namespace dagrad;

constexpr int64_t kMaxElements = 1 << 16;
constexpr char kMagic[] = "DGXD";

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

void RemoveFolder();

// Folder makes this process's model folder, once, and removes it at exit.
const std::string& Folder() {
  static const std::string* folder = [] {
    const char* tmp = std::getenv("TMPDIR");
    std::string dir = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") +
                      "/dagrad_onnx_fuzz_XXXXXX";
    if (::mkdtemp(dir.data()) == nullptr) std::abort();
    const bool made = ::mkfifo((dir + "/fifo.bin").c_str(), 0600) == 0 &&
                      ::symlink("data.bin", (dir + "/link.bin").c_str()) == 0 &&
                      ::symlink("/etc/passwd", (dir + "/outside.bin").c_str()) == 0 &&
                      ::symlink("/dev/zero", (dir + "/zero.bin").c_str()) == 0 &&
                      ::symlink("nothing", (dir + "/dangling.bin").c_str()) == 0 &&
                      ::mkdir((dir + "/sub").c_str(), 0700) == 0;
    if (!made) std::abort();
    std::atexit(RemoveFolder);
    return new std::string(dir);
  }();
  return *folder;
}

void RemoveFolder() {
  std::error_code ec;
  std::filesystem::remove_all(Folder(), ec);
}

// Write replaces the file `name` in the folder with `bytes`; no fsync, as
// nothing must survive a crash.
void Write(const std::string& name, absl::string_view bytes) {
  std::ofstream(Folder() + "/" + name, std::ios::binary | std::ios::trunc) << bytes;
}

absl::StatusOr<OnnxModel> ImportFromFolder(absl::string_view input) {
  input.remove_prefix(sizeof(kMagic) - 1);
  uint32_t model_size = 0;
  for (int i = 0; i < 4 && i < static_cast<int>(input.size()); ++i) {
    model_size |= uint32_t{static_cast<uint8_t>(input[i])} << (8 * i);
  }
  input.remove_prefix(std::min<size_t>(4, input.size()));
  const absl::string_view model = input.substr(0, model_size);
  Write("model.onnx", model);
  Write("data.bin", input.substr(model.size()));
  return ImportOnnx(Folder() + "/model.onnx");
}

// FedValue returns a value for a declared input (symbolic dims 1): zeros,
// or for an integer input small numbers cycled from `bytes` (-128 to 127).
absl::StatusOr<Tensor> FedValue(const OnnxInputInfo& in, absl::string_view bytes) {
  std::vector<int64_t> dims = in.dims;
  for (int64_t& d : dims) d = d < 0 ? 1 : d;
  const Shape shape(dims);
  if (shape.num_elements() > kMaxElements) return absl::OutOfRangeError("large input");
  if (!IsInteger(in.dtype)) return Tensor::Zeros(in.dtype, shape);
  std::vector<int64_t> values(shape.num_elements());
  for (size_t i = 0; i < values.size(); ++i) {
    values[i] = bytes.empty() ? 0 : static_cast<int8_t>(bytes[bytes.size() - 1 - i % bytes.size()]);
  }
  if (in.dtype == DType::kInt64) return Tensor::FromVector<int64_t>(shape, values);
  return Tensor::FromVector<int32_t>(shape, std::vector<int32_t>(values.begin(), values.end()));
}

// RunFed imports the model at `path` for values fed to its inputs and runs
// the specialised graph on them under a memory limit.
void RunFed(const std::string& path, absl::string_view bytes) {
  absl::StatusOr<std::vector<OnnxInputInfo>> inputs = OnnxInputs(path);
  if (!inputs.ok()) return;
  OnnxInputValues values;
  for (const OnnxInputInfo& in : *inputs) {
    absl::StatusOr<Tensor> value = FedValue(in, bytes);
    if (!value.ok()) return;
    values[in.name] = *std::move(value);
  }
  absl::StatusOr<OnnxModel> m = ImportOnnxForValues(path, values);
  if (!m.ok()) return;
  absl::StatusOr<Feeds> feeds = OnnxFeeds(*m, values);
  if (!feeds.ok()) return;
  std::vector<Value> fetches;
  for (const OnnxValue& out : m->outputs) fetches.push_back(out.value);
  Executor exec(*m->graph, ExecutorOptions{.memory_limit_bytes = int64_t{64} << 20});
  if (!m->LoadParameters(exec).ok()) return;
  absl::StatusOr<std::unique_ptr<Plan>> plan = exec.Compile(fetches);
  if (plan.ok()) (void)exec.Run(**plan, *feeds).status();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<OnnxModel> model = absl::StartsWith(bytes, kMagic)
                                        ? ImportFromFolder(bytes)
                                        : ImportOnnxFromBytes(bytes, "", {});
  if (model.ok()) RunOnZeros(*model);
  if (!absl::StartsWith(bytes, kMagic)) Write("model.onnx", bytes);
  RunFed(Folder() + "/model.onnx", bytes);
  return 0;
}
