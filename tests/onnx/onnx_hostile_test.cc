// Hostile ONNX files: each gives a clear error (its code and words
// checked), never a crash, a hang or a huge allocation. Truncations of a
// real export, cycles, inputs no node makes, initializers whose data
// disagrees with their dims, external data outside the model's folder (by
// ".." or by a symlink) or in no regular file (a FIFO, a device), huge
// declared dimensions, unknown opsets, names defined twice.

#ifdef DAGRAD_HAVE_ONNX

#include <onnx/onnx_pb.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "engine/io/file_io.h"
#include "engine/io/safetensors.h"
#include "ops/onnx/import.h"
#include "tests/support/cli_runner.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

using ::testing::HasSubstr;

// ReluModel is x float (2, 3) -> Relu -> y, opset 17.
onnx::ModelProto ReluModel() {
  onnx::ModelProto m;
  m.add_opset_import()->set_version(17);
  onnx::GraphProto* g = m.mutable_graph();
  onnx::ValueInfoProto* x = g->add_input();
  x->set_name("x");
  x->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  for (int64_t d : {2, 3}) x->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(d);
  onnx::NodeProto* relu = g->add_node();
  relu->set_op_type("Relu");
  relu->set_name("relu");
  relu->add_input("x");
  relu->add_output("y");
  g->add_output()->set_name("y");
  return m;
}

// AddWeight makes the Relu read x + w for an initializer w.
onnx::TensorProto* AddWeight(onnx::ModelProto& m) {
  onnx::GraphProto* g = m.mutable_graph();
  onnx::NodeProto* add = g->add_node();
  add->set_op_type("Add");
  add->add_input("x");
  add->add_input("w");
  add->add_output("xw");
  g->mutable_node(0)->set_input(0, "xw");
  onnx::TensorProto* w = g->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(2);
  w->add_dims(3);
  return w;
}

absl::Status Import(const onnx::ModelProto& m, const std::string& dir = "") {
  return ImportOnnxFromBytes(m.SerializeAsString(), dir, {}).status();
}

TEST(OnnxHostile, TheValidModelImports) {
  onnx::ModelProto m = ReluModel();
  AddWeight(m)->set_raw_data(std::string(24, '\0'));
  ASSERT_OK(Import(m));
}

TEST(OnnxHostile, EveryTruncationOfAnExportFailsCleanly) {
  ASSERT_OK_AND_ASSIGN(std::string bytes,
                       ReadFile(absl::StrCat(DAGRAD_TEST_DATA_DIR, "/onnx/mha.onnx")));
  int errors = 0;
  for (size_t n = 0; n < bytes.size(); n += 13) {
    absl::StatusOr<OnnxModel> m = ImportOnnxFromBytes(bytes.substr(0, n), "", {});
    errors += !m.ok();
  }
  EXPECT_EQ(errors, (bytes.size() + 12) / 13);
  EXPECT_STATUS(ImportOnnxFromBytes("\xff\xff\xff garbage", "", {}).status(),
                absl::StatusCode::kInvalidArgument, "do not parse as a ModelProto");
}

TEST(OnnxHostile, CyclesAndDanglingInputs) {
  onnx::ModelProto cycle = ReluModel();
  cycle.mutable_graph()->mutable_node(0)->set_input(0, "z");
  onnx::NodeProto* back = cycle.mutable_graph()->add_node();
  back->set_op_type("Relu");
  back->add_input("y");
  back->add_output("z");
  EXPECT_STATUS(Import(cycle), absl::StatusCode::kInvalidArgument, "has a cycle through 2 nodes");

  onnx::ModelProto dangling = ReluModel();
  dangling.mutable_graph()->mutable_node(0)->set_input(0, "nowhere");
  EXPECT_STATUS(Import(dangling), absl::StatusCode::kInvalidArgument,
                "'relu' (Relu) reads 'nowhere', which no node");

  onnx::ModelProto twice = ReluModel();
  *twice.mutable_graph()->add_node() = twice.graph().node(0);
  EXPECT_STATUS(Import(twice), absl::StatusCode::kInvalidArgument, "produces 'y', which is already");

  onnx::ModelProto no_output = ReluModel();
  no_output.mutable_graph()->mutable_output(0)->set_name("q");
  EXPECT_STATUS(Import(no_output), absl::StatusCode::kInvalidArgument,
                "graph output 'q' is produced by no node");
}

TEST(OnnxHostile, InitializersWhoseDataDisagreesWithTheirDims) {
  onnx::ModelProto m = ReluModel();
  AddWeight(m)->set_raw_data(std::string(8, '\0'));
  EXPECT_STATUS(Import(m), absl::StatusCode::kInvalidArgument,
                "'w': 8 bytes of data for float32 (2, 3), which takes 24");
  onnx::ModelProto typed = ReluModel();
  AddWeight(typed)->add_float_data(1.0f);
  EXPECT_STATUS(Import(typed), absl::StatusCode::kInvalidArgument, "1 values for float32 (2, 3)");
  onnx::ModelProto bytes = ReluModel();
  AddWeight(bytes)->set_data_type(onnx::TensorProto::UINT8);
  EXPECT_STATUS(Import(bytes), absl::StatusCode::kUnimplemented, "ONNX element type UINT8");
}

TEST(OnnxHostile, HugeDeclaredDimensionsAllocateNothing) {
  onnx::ModelProto m = ReluModel();
  onnx::TensorProto* w = AddWeight(m);
  w->set_dims(0, int64_t{1} << 20);
  w->set_dims(1, int64_t{1} << 20);  // 4 TiB declared over 4 bytes of data
  w->set_raw_data(std::string(4, '\0'));
  EXPECT_STATUS(Import(m), absl::StatusCode::kInvalidArgument, "4 bytes of data for float32");
  w->set_dims(0, int64_t{1} << 40);
  w->set_dims(1, int64_t{1} << 40);
  EXPECT_STATUS(Import(m), absl::StatusCode::kInvalidArgument, "overflows int64");

  onnx::ModelProto input = ReluModel();
  auto* dims = input.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()
                   ->mutable_shape();
  dims->mutable_dim(0)->set_dim_value(int64_t{1} << 61);
  EXPECT_STATUS(Import(input), absl::StatusCode::kInvalidArgument, "input 'x'");
  dims->mutable_dim(0)->set_dim_value(-5);
  EXPECT_STATUS(Import(input), absl::StatusCode::kInvalidArgument, "negative dim -5");
}

// Ops whose import makes index tensors (Trilu's mask, a reversed Slice,
// ArgMax's last index) make them as graph nodes, not at import, so a
// declared 4 TiB input imports at once and is refused when compiled.
TEST(OnnxHostile, HugeInputsImportWithoutAllocating) {
  for (const char* op : {"Trilu", "ArgMaxLast", "ReversedSlice"}) {
    onnx::ModelProto m = ReluModel();
    auto* dims = m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()
                     ->mutable_shape();
    dims->mutable_dim(0)->set_dim_value(int64_t{1} << 20);
    dims->mutable_dim(1)->set_dim_value(int64_t{1} << 20);
    onnx::NodeProto* node = m.mutable_graph()->mutable_node(0);
    node->set_op_type(op);
    if (std::string(op) == "ArgMaxLast") {
      node->set_op_type("ArgMax");
      onnx::AttributeProto* a = node->add_attribute();
      a->set_name("select_last_index");
      a->set_type(onnx::AttributeProto::INT);
      a->set_i(1);
    } else if (std::string(op) == "ReversedSlice") {
      node->set_op_type("Slice");
      const std::pair<const char*, int64_t> args[] = {
          {"starts", -1}, {"ends", INT64_MIN}, {"axes", 0}, {"steps", -1}};  // x[::-1]
      for (const auto& [name, value] : args) {
        node->add_input(name);
        onnx::TensorProto* t = m.mutable_graph()->add_initializer();
        t->set_name(name);
        t->set_data_type(onnx::TensorProto::INT64);
        t->add_dims(1);
        t->add_int64_data(value);
      }
    }
    ASSERT_OK_AND_ASSIGN(OnnxModel model, ImportOnnxFromBytes(m.SerializeAsString(), "", {}));
    Executor exec(*model.graph, ExecutorOptions{.memory_limit_bytes = int64_t{1} << 30});
    EXPECT_STATUS(exec.Compile({model.outputs[0].value}).status(),
                  absl::StatusCode::kResourceExhausted, "");
  }
}

TEST(OnnxHostile, OpsetsDagradDoesNotKnow) {
  onnx::ModelProto m = ReluModel();
  m.mutable_opset_import(0)->set_version(99);
  EXPECT_STATUS(Import(m), absl::StatusCode::kUnimplemented,
                "uses ONNX opset 99; dagrad knows opsets up to 17");
  m.mutable_opset_import(0)->set_domain("com.example");
  EXPECT_STATUS(Import(m), absl::StatusCode::kInvalidArgument, "imports no default-domain opset");
}

// ExternalWeight makes w's data external, at `location`.
onnx::ModelProto ExternalWeight(const std::string& location, int64_t offset = 0,
                                int64_t length = 24) {
  onnx::ModelProto m = ReluModel();
  onnx::TensorProto* w = AddWeight(m);
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* entry = w->add_external_data();
  entry->set_key("location");
  entry->set_value(location);
  entry = w->add_external_data();
  entry->set_key("offset");
  entry->set_value(absl::StrCat(offset));
  entry = w->add_external_data();
  entry->set_key("length");
  entry->set_value(absl::StrCat(length));
  return m;
}

TEST(OnnxHostile, ExternalDataStaysInTheModelsFolder) {
  const std::string dir = FreshDir("onnx_external");
  std::ofstream(dir + "/weights.bin", std::ios::binary) << std::string(24, '\0');
  ASSERT_OK(Import(ExternalWeight("weights.bin"), dir));
  EXPECT_STATUS(Import(ExternalWeight("../weights.bin"), dir),
                absl::StatusCode::kInvalidArgument, "leaves the model's folder");
  EXPECT_STATUS(Import(ExternalWeight("sub/../../x"), dir), absl::StatusCode::kInvalidArgument,
                "leaves the model's folder");
  EXPECT_STATUS(Import(ExternalWeight("/etc/passwd"), dir), absl::StatusCode::kInvalidArgument,
                "is not relative to the model's folder");
  EXPECT_STATUS(Import(ExternalWeight("weights.bin", 8), dir),
                absl::StatusCode::kInvalidArgument, "external data [8, +24) lies beyond");
  EXPECT_STATUS(Import(ExternalWeight("weights.bin", 0, 16), dir),
                absl::StatusCode::kInvalidArgument, "16 bytes of external data for float32 (2, 3)");
  EXPECT_STATUS(Import(ExternalWeight("missing.bin"), dir), absl::StatusCode::kNotFound,
                "'w': external data 'missing.bin': cannot resolve");
  EXPECT_STATUS(Import(ExternalWeight("weights.bin")), absl::StatusCode::kInvalidArgument,
                "external data in a model read from memory");
}

// ImportInAChild imports `m` from `dir` in a child process, so that an
// import that waits forever (on a FIFO) fails the test, DeadlineExceeded
// after `seconds`, instead of hanging it.
absl::Status ImportInAChild(const onnx::ModelProto& m, const std::string& dir,
                            int seconds = 30) {
  int fds[2];
  if (pipe(fds) != 0) return absl::InternalError("pipe");
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    const absl::Status s = Import(m, dir);
    const std::string text = absl::StrCat(static_cast<int>(s.code()), " ", s.message());
    _exit(write(fds[1], text.data(), text.size()) == static_cast<ssize_t>(text.size()) ? 0 : 1);
  }
  close(fds[1]);
  std::string text;
  pollfd reader{fds[0], POLLIN, 0};
  char buf[4096];
  ssize_t n = 1;
  while (n > 0 && poll(&reader, 1, seconds * 1000) == 1) {
    n = read(fds[0], buf, sizeof(buf));
    if (n > 0) text.append(buf, static_cast<size_t>(n));
  }
  close(fds[0]);
  if (n != 0) kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  if (n != 0) return absl::DeadlineExceededError("the import did not return");
  int code = 0;
  const size_t space = text.find(' ');
  if (space == std::string::npos || !absl::SimpleAtoi(text.substr(0, space), &code)) {
    return absl::InternalError(absl::StrCat("the child wrote '", text, "'"));
  }
  return absl::Status(static_cast<absl::StatusCode>(code), text.substr(space + 1));
}

// A FIFO named as external data made the import wait for a writer forever.
TEST(OnnxHostile, ExternalDataInAFifoIsRefusedAtOnce) {
  const std::string dir = FreshDir("onnx_external_fifo");
  ASSERT_EQ(mkfifo((dir + "/w.bin").c_str(), 0600), 0);
  EXPECT_STATUS(ImportInAChild(ExternalWeight("w.bin"), dir), absl::StatusCode::kInvalidArgument,
                absl::StrCat("ONNX tensor 'w': external data 'w.bin': cannot read '", dir,
                             "/w.bin': it is a FIFO, not a file"));
}

// Weights of 24 bytes: 0.5 to 3 in steps of 0.5, as float32.
std::string Weights() {
  const float w[6] = {0.5f, 1.0f, 1.5f, 2.0f, 2.5f, 3.0f};
  return std::string(reinterpret_cast<const char*>(w), sizeof(w));
}

// A symlink in the model's folder read whatever it led to (/etc/passwd)
// as weights; one that stays in the folder is followed.
TEST(OnnxHostile, ExternalDataThroughSymlinksStaysInTheFolder) {
  const std::string dir = FreshDir("onnx_external_links");
  const std::string outside = FreshDir("onnx_external_outside");
  ASSERT_OK(WriteFileAtomically(outside + "/secret.bin", std::string(24, 'S')));
  ASSERT_EQ(mkdir((dir + "/sub").c_str(), 0755), 0);
  ASSERT_OK(WriteFileAtomically(dir + "/sub/real.bin", Weights()));
  const std::pair<const char*, std::string> links[] = {
      {"inside.bin", "sub/real.bin"}, {"linked_sub", "sub"},     {"passwd.bin", "/etc/passwd"},
      {"secret.bin", outside + "/secret.bin"}, {"up", ".."},      {"zero.bin", "/dev/zero"},
      {"dangling.bin", "nothing"}, {"loop.bin", "loop.bin"}};
  for (const auto& [name, target] : links) {
    ASSERT_EQ(symlink(target.c_str(), (dir + "/" + name).c_str()), 0) << name;
  }
  for (const char* location : {"inside.bin", "linked_sub/real.bin"}) {
    const std::string bytes = ExternalWeight(location).SerializeAsString();
    ASSERT_OK_AND_ASSIGN(OnnxModel m, ImportOnnxFromBytes(bytes, dir, {}));
    ASSERT_EQ(m.parameters.size(), 1u) << location;
    ExpectAllClose(m.parameters[0].initial, {0.5, 1.0, 1.5, 2.0, 2.5, 3.0}, 0, 0);
  }
  const std::string up = "up/" + outside.substr(outside.rfind('/') + 1) + "/secret.bin";
  for (const std::string& location :
       std::vector<std::string>{"passwd.bin", "secret.bin", "zero.bin", up}) {
    EXPECT_STATUS(Import(ExternalWeight(location), dir), absl::StatusCode::kInvalidArgument,
                  absl::StrCat("ONNX tensor 'w': external data '", location, "': cannot read '",
                               dir, "/", location, "': it resolves to '"));
  }
  EXPECT_STATUS(Import(ExternalWeight("passwd.bin"), dir), absl::StatusCode::kInvalidArgument,
                "it resolves to '/etc/passwd', outside the folder");
  EXPECT_STATUS(Import(ExternalWeight("linked_sub"), dir), absl::StatusCode::kInvalidArgument,
                "external data 'linked_sub': cannot read '" + dir +
                    "/linked_sub': it is a directory, not a file");
  EXPECT_STATUS(Import(ExternalWeight("dangling.bin"), dir), absl::StatusCode::kNotFound,
                "external data 'dangling.bin': cannot resolve '" + dir +
                    "/dangling.bin': No such file or directory");
  EXPECT_STATUS(Import(ExternalWeight("loop.bin"), dir), absl::StatusCode::kInvalidArgument,
                "external data 'loop.bin': cannot resolve '" + dir +
                    "/loop.bin': too many symbolic links (a loop)");
}

// A device inside the model's folder (here the folder is /dev) is no file.
TEST(OnnxHostile, ExternalDataInADeviceIsRefused) {
  EXPECT_STATUS(Import(ExternalWeight("zero"), "/dev"), absl::StatusCode::kInvalidArgument,
                "external data 'zero': cannot read '/dev/zero': it is a character device, "
                "not a file");
}

// `dagrad eval` of a model whose external data is a FIFO waited forever;
// one whose external data is a link to /etc/passwd ran (exit 0) with its
// bytes as weights, and so in the outputs.
TEST(OnnxHostile, EvalRefusesExternalDataInAFifoOrOutsideTheFolder) {
  const std::string dir = FreshDir("onnx_external_eval");
  ASSERT_EQ(mkfifo((dir + "/fifo.bin").c_str(), 0600), 0);
  ASSERT_EQ(symlink("/etc/passwd", (dir + "/passwd.bin").c_str()), 0);
  SafetensorsFile in;
  ASSERT_OK_AND_ASSIGN(Tensor x, Tensor::Zeros(DType::kFloat32, Shape({2, 3})));
  in.tensors.push_back({"x", x});
  ASSERT_OK(WriteSafetensors(dir + "/in.safetensors", in));
  for (const char* location : {"fifo.bin", "passwd.bin"}) {
    const std::string model = absl::StrCat(dir, "/", location, ".onnx");
    ASSERT_OK(WriteFileAtomically(model, ExternalWeight(location).SerializeAsString()));
    const CliResult r = RunDagrad(absl::StrCat("eval --model=", model, " --input=", dir,
                                               "/in.safetensors --output=", dir,
                                               "/out.safetensors"),
                                  "timeout 60");
    EXPECT_EQ(r.code, 2) << location << ": " << r.err;  // 124: timed out
    EXPECT_THAT(r.err, HasSubstr(absl::StrCat("external data '", location, "': cannot read '")));
    EXPECT_THAT(r.err, HasSubstr(location[0] == 'f' ? "it is a FIFO, not a file"
                                                    : "it resolves to '/etc/passwd', outside"));
    EXPECT_FALSE(std::filesystem::exists(dir + "/out.safetensors")) << location;
  }
}

TEST(OnnxHostile, NodesWithBadArguments) {
  onnx::ModelProto m = ReluModel();
  m.mutable_graph()->mutable_node(0)->set_op_type("Add");
  EXPECT_STATUS(Import(m), absl::StatusCode::kInvalidArgument, "input 1 is missing");
  onnx::ModelProto reshape = ReluModel();
  onnx::NodeProto* node = reshape.mutable_graph()->mutable_node(0);
  node->set_op_type("Reshape");
  node->add_input("shape");
  onnx::TensorProto* shape = reshape.mutable_graph()->add_initializer();
  shape->set_name("shape");
  shape->set_data_type(onnx::TensorProto::INT64);
  shape->add_dims(1);
  shape->add_int64_data(7);
  EXPECT_STATUS(Import(reshape), absl::StatusCode::kInvalidArgument, "ONNX node 0 'relu' (Reshape)");
}

TEST(OnnxHostile, HugeFoldedShapesFailWhenCompiled) {
  onnx::ModelProto m = ReluModel();
  onnx::NodeProto* node = m.mutable_graph()->mutable_node(0);
  node->set_op_type("ConstantOfShape");
  node->set_input(0, "shape");
  onnx::TensorProto* shape = m.mutable_graph()->add_initializer();
  shape->set_name("shape");
  shape->set_data_type(onnx::TensorProto::INT64);
  shape->add_dims(2);
  shape->add_int64_data(int64_t{1} << 20);  // 4 TiB: not folded, refused when compiled
  shape->add_int64_data(int64_t{1} << 20);
  ASSERT_OK_AND_ASSIGN(OnnxModel model, ImportOnnxFromBytes(m.SerializeAsString(), "", {}));
  Executor exec(*model.graph, ExecutorOptions{.memory_limit_bytes = int64_t{1} << 30});
  EXPECT_STATUS(exec.Compile({model.outputs[0].value}).status(),
                absl::StatusCode::kResourceExhausted, "");
}

}  // namespace
}  // namespace dagrad::testing

#endif  // DAGRAD_HAVE_ONNX
