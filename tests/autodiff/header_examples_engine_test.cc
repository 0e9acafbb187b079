// The examples of engine/*.h and ops/autodiff/*.h, line for line, run
// (tests/support/header_examples.h says how they are kept in step with the headers).
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/attrs.h"
#include "engine/bfloat16.h"
#include "engine/cuda/cuda_device.h"
#include "engine/device/device.h"
#include "engine/dot/dot.h"
#include "engine/dtype.h"
#include "engine/executor.h"
#include "engine/graph.h"
#include "engine/initializer.h"
#include "engine/io/checkpoint.h"
#include "engine/io/crc32c.h"
#include "engine/io/dir_lock.h"
#include "engine/io/file_io.h"
#include "engine/io/safetensors.h"
#include "engine/io/utf8.h"
#include "engine/philox.h"
#include "engine/shape.h"
#include "engine/status_macros.h"
#include "engine/tensor.h"
#include "ops/autodiff/autodiff.h"
#include "ops/autodiff/optimizer.h"
#include "ops/elementwise.h"
#include "ops/gather.h"
#include "ops/loss.h"
#include "ops/matmul.h"
#include "ops/optim.h"
#include "ops/reduce.h"
#include "ops/shape_ops.h"
#include "tests/support/header_examples.h"

namespace dagrad {
namespace {

constexpr int64_t B = 2, T = 3, E = 4, V = 5;

HEADER_EXAMPLE(EngineDirectoryLock) {
  if (mkdir("runs", 0755) != 0 || mkdir("runs/train", 0755) != 0) return absl::InternalError("mkdir");
  std::vector<std::string> removed;
  DAGRAD_ASSIGN_OR_RETURN(DirectoryLock lock, LockDirectory("runs/train", &removed));
  // ... train; the lock is released when `lock` is destroyed
  EXPECT_EQ(LockDirectory("runs/train", &removed).status().code(),
            absl::StatusCode::kFailedPrecondition);
  return absl::OkStatus();
}

HEADER_EXAMPLE(Attrs) {
  Attrs a = Attrs().Int("axis", -1).Bool("keepdims", true);
  a.GetInt("axis");      // -1
  a.ToString();          // "axis=-1, keepdims=true"
  EXPECT_EQ(a.GetInt("axis"), -1);
  EXPECT_EQ(a.ToString(), "axis=-1, keepdims=true");
  return absl::OkStatus();
}

HEADER_EXAMPLE(Autodiff) {
  Graph g;
  Value x = g.Input("x", DType::kFloat32, {B, E});
  Value y = g.Input("y", DType::kFloat32, {B, E});
  Value w = g.Parameter("w", {E, E}, Initializer::Ones());
  Value loss = Mean(Pow(Sub(MatMul(x, w), y), 2));
  DAGRAD_ASSIGN_OR_RETURN(std::vector<Value> grads, Gradients(loss, {w}));
  // grads[0] has w's shape; compile it like any other value.
  EXPECT_EQ(grads[0].shape(), w.shape());
  return absl::OkStatus();
}

HEADER_EXAMPLE(AncestorsOf) {
  Graph g;
  Value x = g.Input("x", DType::kFloat32, {2});
  Value y = Exp(x), z = Neg(x);
  std::vector<NodeId> ids = AncestorsOf(g, {y});   // {x.id(), y.id()}: not z
  EXPECT_EQ(ids, (std::vector<NodeId>{x.id(), y.id()}));
  EXPECT_EQ(DependedOn(g, {z, Value()}), (std::vector<bool>{true, false, true}));
  return absl::OkStatus();
}

// A graph with a loss over embedded tokens, for the training examples.
struct TinyModel {
  Graph g;
  Value tokens = g.Input("tokens", DType::kInt64, {B, T});
  Value table = g.Parameter("table", {V, E}, Initializer::Normal(0.0, 0.1).WithSeed(1));
  Value w = g.Parameter("w", {V, E}, Initializer::XavierUniform());
  Value logits = Linear(Tanh(Reshape(Embedding(table, tokens), {B * T, E})), w);
  Value loss = CrossEntropy(logits, Reshape(tokens, {B * T}));
  Tensor batch = *Tensor::FromVector<int64_t>({B, T}, {0, 1, 2, 3, 4, 0});
};

HEADER_EXAMPLE(Optimizer) {
  TinyModel m;
  Graph& g = m.g;
  Value loss = m.loss, tokens = m.tokens;
  Tensor batch = m.batch;
  Executor exec(g);
  LrSchedule sched{.peak = 0.01, .warmup_steps = 1, .total_steps = 10};
  const uint64_t t = 1;
  DAGRAD_ASSIGN_OR_RETURN(TrainingStep ts,
      BuildTrainingStep(loss, g.Parameters(), {.kind = OptimizerKind::kAdamW,
                                               .weight_decay = 0.01, .clip_norm = 1.0}));
  DAGRAD_ASSIGN_OR_RETURN(auto plan, exec.Compile({loss}, ts.updates));
  DAGRAD_ASSIGN_OR_RETURN(const double lr, LearningRate(sched, t));
  DAGRAD_ASSIGN_OR_RETURN(auto out, exec.Run(*plan, {{tokens, batch},
      {ts.lr, Tensor::Scalar(lr)}, {ts.step, Tensor::Scalar<double>(t)}},
      {.training = true, .step = t}));
  EXPECT_GT(out[0].data<float>()[0], 0);
  return absl::OkStatus();
}

HEADER_EXAMPLE(OptimizerGroups) {
  TinyModel m;
  Graph& g = m.g;
  Value loss = m.loss;
  DAGRAD_ASSIGN_OR_RETURN(TrainingStep gpt_step, BuildTrainingStep(loss,
      DecayMatrices(g.Parameters(), 0.1), {.kind = OptimizerKind::kAdamW}));
  std::vector<ParamGroup> groups = DecayMatrices(g.Parameters(), 0.1);
  EXPECT_EQ(groups.size(), 2u);
  EXPECT_EQ(gpt_step.updates.size(), g.Parameters().size());
  return absl::OkStatus();
}

HEADER_EXAMPLE(OptimizerClipGradNorm) {
  TinyModel m;
  Executor exec(m.g);
  DAGRAD_ASSIGN_OR_RETURN(std::vector<Value> grads, Gradients(m.loss, m.g.Parameters()));
  DAGRAD_ASSIGN_OR_RETURN(ClippedGrads c, ClipGradNorm(grads, 1.0));
  DAGRAD_ASSIGN_OR_RETURN(auto clip_plan, exec.Compile({c.norm, c.grads[0]}));
  DAGRAD_ASSIGN_OR_RETURN(auto out, exec.Run(*clip_plan, {{m.tokens, m.batch}}));
  EXPECT_GT(out[0].data<double>()[0], 0.0);
  return absl::OkStatus();
}

HEADER_EXAMPLE(UpdateSkipped) {
  TinyModel m;
  DAGRAD_ASSIGN_OR_RETURN(TrainingStep ts,
                          BuildTrainingStep(m.loss, m.g.Parameters(),
                                            {.clip_norm = 1.0, .skip_nonfinite = true}));
  Executor exec(m.g);
  DAGRAD_ASSIGN_OR_RETURN(auto plan, exec.Compile({m.loss, ts.grad_norm}, ts.updates));
  int64_t applied = 0;
  DAGRAD_ASSIGN_OR_RETURN(auto out, exec.Run(*plan, {{m.tokens, m.batch},
                                                     {ts.lr, Tensor::Scalar(0.01)},
                                                     {ts.step, Tensor::Scalar(1.0)}}));
  const bool skipped = UpdateSkipped(out[0].data<float>()[0], out[1].data<double>()[0]);
  if (!skipped) ++applied;   // feed applied + 1 as ts.step next time
  EXPECT_EQ(applied, 1);
  return absl::OkStatus();
}

HEADER_EXAMPLE(Checkpoint) {
  TinyModel m;
  Graph& g = m.g;
  Executor exec(g);
  const std::string path = "model.safetensors";
  const int64_t step = 7;
  DAGRAD_RETURN_IF_ERROR(SaveVariables(exec, g.Parameters(), {{"dim", "64"}}, path));
  DAGRAD_ASSIGN_OR_RETURN(auto metadata, LoadVariables(exec, g.Parameters(), path));
  int dim = std::stoi(metadata.at("dim"));
  EXPECT_EQ(dim, 64);
  {
    Graph::Scope scope(g, "encoder/layers/0/linear1");
    Value w = g.Parameter("weight", {2}, Initializer::Zeros());
    CheckpointName(w.node());   // "encoder.layers.0.linear1.weight"
    EXPECT_EQ(CheckpointName(w.node()), "encoder.layers.0.linear1.weight");
  }
  DAGRAD_ASSIGN_OR_RETURN(SafetensorsFile f, CollectVariables(exec, g.Variables()));
  SafetensorsFile file = f;
  DAGRAD_RETURN_IF_ERROR(AssignVariables(exec, g.Parameters(), file, "pretrained"));
  DAGRAD_RETURN_IF_ERROR(MatchVariables(g.Parameters(), file, "'pretrained'",
                                        {.from_metadata = "dim=64"}));
  DAGRAD_RETURN_IF_ERROR(WriteCheckpoint("ckpt.safetensors", std::move(file)));
  {
    DAGRAD_ASSIGN_OR_RETURN(SafetensorsFile f, ReadCheckpoint("ckpt.safetensors"));
    DAGRAD_ASSIGN_OR_RETURN(f, ReadCheckpoint("ckpt.safetensors", {.require_checksums = true}));
    EXPECT_EQ(f.tensors.size(), 3u);
  }
  {
    DAGRAD_ASSIGN_OR_RETURN(std::string bytes, ReadFile("ckpt.safetensors"));
    DAGRAD_ASSIGN_OR_RETURN(SafetensorsFile f, ParseCheckpoint(bytes));
    EXPECT_EQ(f.tensors.size(), 3u);
  }
  DAGRAD_RETURN_IF_ERROR(SaveVariables(exec, g.Parameters(),
                                       {{"step", absl::StrCat(step)}}, "ckpt.safetensors"));
  std::vector<Value> vars = g.Variables();
  {
    DAGRAD_ASSIGN_OR_RETURN(SafetensorsFile f, CollectVariables(exec, vars));
    DAGRAD_RETURN_IF_ERROR(RequireFinite(f));
    DAGRAD_RETURN_IF_ERROR(WriteSafetensors(path, f));
  }
  return absl::OkStatus();
}

HEADER_EXAMPLE(Crc32c) {
  uint32_t crc = Crc32c("123456789");            // 0xE3069283
  crc = ExtendCrc32c(Crc32c("1234"), "56789");    // the same value
  EXPECT_EQ(crc, 0xE3069283u);
  EXPECT_EQ(Crc32c("123456789"), 0xE3069283u);
  return absl::OkStatus();
}

HEADER_EXAMPLE(Dot) {
  TinyModel m;
  Graph& g = m.g;
  Value loss = m.loss, logits = m.logits;
  DAGRAD_ASSIGN_OR_RETURN(TrainingStep ts, BuildTrainingStep(loss, g.Parameters(), {}));
  Value update = ts.updates[0];
  DotOptions opts{.title = "toy transformer, one training step",
                  .collapse = {"encoder/layers/1"}, .losses = {loss}};
  DAGRAD_ASSIGN_OR_RETURN(std::string dot, ToDot(g, {loss, update}, opts));
  DAGRAD_RETURN_IF_ERROR(WriteDotFile("step.dot", dot));
  DAGRAD_RETURN_IF_ERROR(RenderDot("step.dot", "svg", "step.svg"));
  {
    DAGRAD_ASSIGN_OR_RETURN(std::string dot, ToDot(g, {}));          // everything
    DAGRAD_ASSIGN_OR_RETURN(std::string fwd, ToDot(g, {logits}, {.legend = false}));
    EXPECT_LT(fwd.size(), dot.size());
    DAGRAD_RETURN_IF_ERROR(WriteDotFile("model.dot", dot));
  }
  DAGRAD_RETURN_IF_ERROR(WriteDotFile("/tmp/model.dot", dot));
  absl::Status s = RenderDot("model.dot", "svg", "model.svg");
  if (absl::IsUnavailable(s)) std::cerr << "no Graphviz: " << s << "\n";
  if (DotProgram().empty()) std::cerr << "no Graphviz: DOT files only\n";
  EXPECT_EQ(DotProgram().empty(), absl::IsUnavailable(s));
  return s;
}

HEADER_EXAMPLE(DType) {
  {
    absl::Status s = CheckValueFits(3e9, DType::kInt32, "value");  // InvalidArgument: out of range
    EXPECT_TRUE(absl::IsInvalidArgument(s));
  }
  absl::Status s = CheckIntegerFits(int64_t{1} << 40, DType::kInt32, "value");  // out of range
  EXPECT_TRUE(absl::IsInvalidArgument(s));
  GradientDType(DType::kBFloat16);   // DType::kFloat32
  EXPECT_EQ(GradientDType(DType::kBFloat16), DType::kFloat32);
  const uint32_t both = DTypeBit(DType::kBFloat16) | DTypeBit(DType::kFloat16);
  EXPECT_EQ(both, kReducedFloatBits);
  return absl::OkStatus();
}

HEADER_EXAMPLE(BFloat16) {
  BFloat16 h = FloatToBFloat16(1.00390625f);   // a tie: rounds to even, 1.0
  float back = BFloat16ToFloat(h);             // 1.0f, exactly
  Float16 big = FloatToFloat16(70000.0f);      // +inf: beyond 65504
  EXPECT_EQ(back, 1.0f);
  EXPECT_TRUE(std::isinf(Float16ToFloat(big)));
  ConvertElement<BFloat16>(int64_t{257});   // 256: a tie, to even
  ConvertElement<double>(Float16{0x3c00});  // 1.0
  EXPECT_EQ(BFloat16ToFloat(ConvertElement<BFloat16>(int64_t{257})), 256.0f);
  EXPECT_EQ(ConvertElement<double>(Float16{0x3c00}), 1.0);
  return absl::OkStatus();
}

HEADER_EXAMPLE(Executor) {
  TinyModel m;
  Graph& g = m.g;
  Value loss = m.loss, tokens = m.tokens;
  Tensor batch = m.batch;
  DAGRAD_ASSIGN_OR_RETURN(std::vector<Value> grads, Gradients(loss, {m.w}));
  Value velocity = g.Variable("velocity", m.w.shape(), Initializer::Zeros());
  Value update = SgdUpdate(m.w, grads[0], velocity, g.Constant(Tensor::Scalar(0.1)), {});
  const uint64_t n = 2;
  Executor exec(g);                              // CPU, seed 0
  DAGRAD_ASSIGN_OR_RETURN(auto plan, exec.Compile({loss}, {update}));
  for (uint64_t step = 0; step < n; ++step) {
    DAGRAD_ASSIGN_OR_RETURN(auto out,
        exec.Run(*plan, {{tokens, batch}}, {.training = true, .step = step}));
    float l = out[0].data<float>()[0];
  }
  DAGRAD_ASSIGN_OR_RETURN(Tensor w, exec.Read(m.w));   // two SGD steps moved it
  EXPECT_NE(w.data<float>()[0], m.batch.data<int64_t>()[0]);
  DAGRAD_ASSIGN_OR_RETURN(std::vector<Tensor> values, exec.ReadAll(g.Variables()));
  EXPECT_EQ(values.size(), 3u);  // table, w, velocity
  EXPECT_EQ(values[1].data<float>()[0], w.data<float>()[0]);
  return absl::OkStatus();
}

HEADER_EXAMPLE(ExecutorDeviceFeeds) {
  Graph g;
  Value x = g.Input("x", DType::kFloat32, {2});
  Value y = g.Input("y", DType::kFloat32, {2});
  Executor exec(g);
  DAGRAD_ASSIGN_OR_RETURN(auto plan, exec.Compile({Mul(x, y)}));
  DAGRAD_ASSIGN_OR_RETURN(Tensor x_values, Tensor::FromVector<float>({2}, {2, 3}));
  DAGRAD_ASSIGN_OR_RETURN(Tensor y_values, Tensor::FromVector<float>({2}, {5, 7}));
  DAGRAD_ASSIGN_OR_RETURN(DeviceTensor xs, exec.Upload(x_values));   // once
  DAGRAD_ASSIGN_OR_RETURN(auto out, exec.Run(*plan, {{y, y_values}}, {{x, xs}}, {}));
  EXPECT_EQ(out[0].data<float>()[1], 21);
  return absl::OkStatus();
}

HEADER_EXAMPLE(CudaExecutor) {
  Graph g;
  DAGRAD_ASSIGN_OR_RETURN(std::unique_ptr<Device> gpu, CudaDevice());
  Executor exec(g, std::move(gpu));
  return absl::OkStatus();
}

HEADER_EXAMPLE(CudaDeviceOrCpu) {
  Graph g;
  absl::StatusOr<std::unique_ptr<Device>> device = CudaDevice();
  if (absl::IsUnavailable(device.status())) device = CpuDevice();  // no GPU here
  if (!device.ok()) return device.status();
  Executor exec(g, *std::move(device));
  return absl::OkStatus();
}

HEADER_EXAMPLE(CudaDeviceTimed) {
  TinyModel m;
  Graph& g = m.g;
  Feeds feeds = {{m.tokens, m.batch}};
  DAGRAD_ASSIGN_OR_RETURN(std::unique_ptr<Device> gpu, CudaDevice(0));
  gpu->name();   // "cuda:0 (NVIDIA H100 80GB HBM3)"
  EXPECT_TRUE(absl::StartsWith(gpu->name(), "cuda:0"));
  Executor exec(g, std::move(gpu));
  DAGRAD_ASSIGN_OR_RETURN(auto plan, exec.Compile({m.loss}));
  auto ms = TimeOnDevice(exec.device(), 20, [&] { return exec.Run(*plan, feeds).status(); });
  return ms.status();
}

void Print(const std::string& what, const std::vector<std::string>& names) {
  std::cout << what << ": " << names.size() << "\n";
}
void Print(const std::string& name, const std::string& type) {
  std::cout << name << ": " << type << "\n";
}

HEADER_EXAMPLE(FileIo) {
  const std::string dot = "digraph {}\n", bytes = "bytes";
  {
    DAGRAD_RETURN_IF_ERROR(WriteFileAtomically("model.dot", dot));
    DAGRAD_ASSIGN_OR_RETURN(std::string bytes, ReadFile("model.dot"));
    EXPECT_EQ(bytes, dot);
  }
  {
    DAGRAD_RETURN_IF_ERROR(WriteFileAtomically("/tmp/w.safetensors", "x"));
    auto bytes = ReadFile("/tmp/w.safetensors");
    if (!bytes.ok()) return bytes.status();
  }
  if (mkdir("run", 0755) != 0 || mkdir("runs", 0755) != 0 || mkdir("runs/train", 0755) != 0) {
    return absl::InternalError("mkdir");
  }
  DAGRAD_RETURN_IF_ERROR(WriteFileAtomically("/tmp/graph.dot", dot));
  DAGRAD_RETURN_IF_ERROR(WriteFileAtomically(
      "run/ckpt.safetensors", bytes, {.keep_previous_as = "run/ckpt.prev.safetensors"}));
  TemporaryPathFor("/tmp/g.svg");   // "/tmp/g.svg.tmp.4242.0"
  EXPECT_TRUE(absl::StartsWith(TemporaryPathFor("/tmp/g.svg"), "/tmp/g.svg.tmp."));
  auto removed = RemoveStaleTemporaryFiles("runs/train");
  if (removed.ok() && !removed->empty()) Print("removed", *removed);
  return removed.status();
}

HEADER_EXAMPLE(FileInFolder) {
  if (mkdir("models", 0755) != 0 || mkdir("models/gpt", 0755) != 0) {
    return absl::InternalError("mkdir");
  }
  DAGRAD_RETURN_IF_ERROR(WriteFileAtomically("models/gpt/w.bin", "weights"));
  DAGRAD_ASSIGN_OR_RETURN(FileInFolder file, FileInFolder::Open("models/gpt", "w.bin"));
  std::string head(std::min<int64_t>(file.size(), 16), '\0');
  DAGRAD_RETURN_IF_ERROR(file.ReadAt(0, head.size(), head.data()));
  EXPECT_EQ(head, "weights");
  return absl::OkStatus();
}

HEADER_EXAMPLE(Graph) {
  Graph g;
  Value x = g.Input("x", DType::kFloat32, {B, T, E});
  Value w = g.Parameter("w", {E, E}, Initializer::XavierUniform());
  Value y = MatMul(x, w);
  if (!y.ok()) return y.status();   // or g.status(): the first error
  { Graph::Scope s(g, "encoder"); g.Input("x", DType::kFloat32, {2}); }  // "encoder/x"
  EXPECT_TRUE(g.Find("encoder/x").ok());
  {
    Graph::ScopePathGuard in_grad(g, "grad");
    if (!x.ok()) return x.status();   // the old path is restored
  }
  EXPECT_EQ(g.scope(), "");
  {
    Graph::Scope scope(g, "tok_emb");
    Value table = g.Parameter("weight", {V, E}, Initializer::Normal(0, 1));
    // table.path() == "tok_emb/weight", checkpoint name "tok_emb.weight"
    EXPECT_EQ(table.path(), "tok_emb/weight");
    EXPECT_EQ(CheckpointName(table.node()), "tok_emb.weight");
  }
  EXPECT_FALSE(g.Parameter("tok_emb/weight", {V, E}, Initializer::Zeros()).ok());
  EXPECT_FALSE(g.Input("x", DType::kFloat32, {E}).ok());   // a path twice
  return absl::OkStatus();
}

HEADER_EXAMPLE(Initializer) {
  Graph g;
  const int64_t in = 3, out = 2;
  g.Parameter("weight", {out, in}, Initializer::XavierUniform());
  g.Parameter("bias", {out}, Initializer::Zeros());
  g.Parameter("table", {V, E}, Initializer::Normal(0.0, 0.1).WithSeed(7));
  absl::Status s = Initializer::Constant(3e9).Validate({2}, DType::kInt32);  // InvalidArgument
  EXPECT_TRUE(absl::IsInvalidArgument(s));
  return g.status();
}

HEADER_EXAMPLE(Philox) {
  const uint32_t c0 = 1, c1 = 2, c2 = 3, c3 = 4, k0 = 5, k1 = 6;
  PhiloxBlock r = Philox4x32_10({c0, c1, c2, c3}, k0, k1);
  float u = UniformFromBits(r.v[0]);   // in [0, 1)
  EXPECT_GE(u, 0);
  EXPECT_LT(u, 1);
  return absl::OkStatus();
}

HEADER_EXAMPLE(Safetensors) {
  {
    SafetensorsFile f;
    f.tensors.emplace_back("w", *Tensor::FromVector<float>({2}, {1, 2}));
    f.metadata["step"] = "100";
    DAGRAD_RETURN_IF_ERROR(WriteSafetensors("/tmp/w.safetensors", f));
    DAGRAD_ASSIGN_OR_RETURN(SafetensorsFile g, ReadSafetensors("/tmp/w.safetensors"));
    const Tensor* w = g.Find("w");   // float32 (2,): 1, 2
    EXPECT_EQ(w->data<float>()[1], 2);
    DAGRAD_RETURN_IF_ERROR(WriteSafetensors("model.safetensors", g));
  }
  DAGRAD_ASSIGN_OR_RETURN(std::string bytes, ReadFile("model.safetensors"));
  {
    auto f = ParseSafetensors(bytes);
    if (!f.ok()) return f.status();
  }
  {
    DAGRAD_ASSIGN_OR_RETURN(SafetensorsFile f, ReadSafetensors("model.safetensors"));
    for (const auto& [name, tensor] : f.tensors) Print(name, tensor.TypeString());
    SafetensorsFile file = f;
    file.tensors.emplace_back("encoder.layers.0.linear1.weight", Tensor::Scalar(1.0f));
    const Tensor* w = file.Find("encoder.layers.0.linear1.weight");
    EXPECT_NE(w, nullptr);
    {
      DAGRAD_ASSIGN_OR_RETURN(std::string bytes, SerializeSafetensors(file));
      EXPECT_FALSE(bytes.empty());
    }
    DAGRAD_RETURN_IF_ERROR(WriteSafetensors("/tmp/ckpt.safetensors", file));
  }
  return absl::OkStatus();
}

HEADER_EXAMPLE(Shape) {
  Shape s({2, 3, 4});
  s.num_elements();         // 24
  s.ToString();             // "(2, 3, 4)"
  absl::StatusOr<Shape> b = BroadcastShapes(Shape({2, 1, 4}), Shape({3, 1}));  // (2, 3, 4)
  EXPECT_EQ(s.num_elements(), 24);
  EXPECT_EQ(s.ToString(), "(2, 3, 4)");
  EXPECT_EQ(b.value_or(Shape()), s);
  return absl::OkStatus();
}

HEADER_EXAMPLE(StatusMacros) {
  const std::string path = "notes.txt", text = "hello";
  DAGRAD_RETURN_IF_ERROR(WriteFileAtomically(path, text));
  DAGRAD_ASSIGN_OR_RETURN(std::string bytes, ReadFile(path));
  EXPECT_EQ(bytes, text);
  return absl::OkStatus();
}

HEADER_EXAMPLE(Tensor) {
  DAGRAD_ASSIGN_OR_RETURN(Tensor x, Tensor::FromVector<float>({2, 2}, {1, 2, 3, 4}));
  float first = x.data<float>()[0];
  Tensor lengths = Tensor::Scalar<int64_t>(3);
  EXPECT_EQ(first, 1);
  EXPECT_EQ(lengths.data<int64_t>()[0], 3);
  DAGRAD_ASSIGN_OR_RETURN(Tensor bf16_weights, ConvertFloats(x, DType::kBFloat16));
  DAGRAD_ASSIGN_OR_RETURN(Tensor wide, ConvertFloats(bf16_weights, DType::kFloat32));
  EXPECT_EQ(wide.ToVector<float>(), x.ToVector<float>());
  const Tensor& t = bf16_weights;
  {
    double first = FloatAt(t.raw_data(), t.dtype(), 0);
    const bool finite = FirstNonFinite(t.raw_data(), t.dtype(), t.num_elements()) < 0;
    EXPECT_EQ(first, 1);
    EXPECT_TRUE(finite);
  }
  return absl::OkStatus();
}

HEADER_EXAMPLE(Utf8) {
  const std::string s = "caf\xc3\xa9 \xff";
  int invalid_bytes = 0;
  {
    size_t pos = 0;
    while (pos < s.size()) {
      const int32_t c = NextCodePoint(s, pos);  // -1: s[pos] starts no valid sequence
      if (c < 0) ++invalid_bytes;
    }
  }
  EXPECT_EQ(invalid_bytes, 1);
  size_t pos = 0;
  NextCodePoint("\xc3\xa9!", pos);   // 0xE9, pos == 2
  EXPECT_EQ(pos, 2u);
  IsValidUtf8("caf\xc3\xa9");   // true
  IsValidUtf8("\xed\xa0\x80");  // false: an encoded surrogate
  PrintableText("a\nb\xff", true);  // 'a\nb\xff' (backslashes literal)
  EXPECT_EQ(PrintableText("a\nb\xff", true), "'a\\nb\\xff'");
  EXPECT_TRUE(IsValidUtf8("caf\xc3\xa9"));
  EXPECT_FALSE(IsValidUtf8("\xed\xa0\x80"));
  return absl::OkStatus();
}

}  // namespace
}  // namespace dagrad
