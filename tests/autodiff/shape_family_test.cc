// ShapeFamily (engine/shape_family.h): one build function run at the shapes
// it is fed, checked for consistency, with a bounded plan cache counted by
// the memory limit, and parameters shared with a training step. In
// tests/autodiff because the sharing test trains with BuildTrainingStep.

#include "engine/shape_family.h"

#include "engine/status_macros.h"
#include "ops/autodiff/autodiff.h"
#include "ops/autodiff/optimizer.h"
#include "ops/dropout.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "ops/reduce.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

using Sizes = std::map<std::string, int64_t>;

// Product is y = x · w for x float32 ("batch", 3), w (3, 2) a parameter of
// the graph made before the family.
struct Product {
  Graph g;
  Value w = g.Parameter("w", {3, 2}, Initializer::Normal(0.0, 1.0).WithSeed(7));
  std::unique_ptr<Executor> exec;
  std::unique_ptr<ShapeFamily> family;

  absl::Status Start(ExecutorOptions options = {}, int max_plans = 4, int64_t bound = 8) {
    exec = std::make_unique<Executor>(g, options);
    DAGRAD_ASSIGN_OR_RETURN(
        family, ShapeFamily::Create(
                    g, *exec,
                    {.inputs = {{"x", DType::kFloat32, {"batch", 3}}},
                     .bounds = {{"batch", bound}}, .max_plans = max_plans},
                    [this](Graph&, const Binding& b) -> absl::StatusOr<Specialized> {
                      return Specialized{.fetches = {MatMul(b.input("x"), w)}};
                    }));
    return absl::OkStatus();
  }
  absl::StatusOr<Tensor> Run(const Tensor& x) {
    DAGRAD_ASSIGN_OR_RETURN(std::vector<Tensor> out, family->Run({{"x", x}}));
    return out[0];
  }
};

// HandProduct is x (B, 3) times w (3, 2), in double.
std::vector<double> HandProduct(const Tensor& x, const Tensor& w) {
  const std::vector<double> xs = AsDoubles(x), ws = AsDoubles(w);
  const int64_t B = x.shape()[0];
  std::vector<double> y(B * 2, 0.0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t j = 0; j < 2; ++j)
      for (int64_t k = 0; k < 3; ++k) y[b * 2 + j] += xs[b * 3 + k] * ws[k * 2 + j];
  return y;
}

TEST(ShapeFamily, RunsEveryBatchSizeOfOneBuildFunction) {
  Product p;
  ASSERT_OK(p.Start());
  ASSERT_OK_AND_ASSIGN(Tensor w, p.exec->Read(p.w));
  for (int64_t batch : {2, 5, 2, 1}) {
    const Tensor x = Random(DType::kFloat32, {batch, 3}, batch);
    ASSERT_OK_AND_ASSIGN(Tensor y, p.Run(x));
    EXPECT_EQ(y.shape(), Shape({batch, 2}));
    ExpectAllClose(y, HandProduct(x, w), 1e-5, 1e-6, "batch " + std::to_string(batch));
  }
  EXPECT_EQ(p.family->builds(), 3);  // 2 was built once
  EXPECT_EQ(p.family->compiles(), 3);
}

TEST(ShapeFamily, InputsThatDisagreeOnASymbolAreNamedWithTheirDims) {
  Graph g;
  Value w = g.Parameter("w", {3}, Initializer::Ones());
  Executor exec(g);
  ASSERT_OK_AND_ASSIGN(
      auto family,
      ShapeFamily::Create(g, exec,
                          {.inputs = {{"x", DType::kFloat32, {"batch", "seq", 3}},
                                      {"t", DType::kInt64, {"seq", "batch"}}},
                           .bounds = {{"batch", 4}, {"seq", 6}}},
                          [&](Graph&, const Binding& b) -> absl::StatusOr<Specialized> {
                            return Specialized{.fetches = {Sum(b.input("x") * w)}};
                          }));
  const Tensor x = Random(DType::kFloat32, {2, 5, 3}, 1);
  EXPECT_STATUS(family->Run({{"x", x}, {"t", RandomInts({5, 3}, 1, 0, 9)}}).status(),
                absl::StatusCode::kInvalidArgument,
                "'batch' is 2 in input 'x' dim 0 but 3 in input 't' dim 1");
  EXPECT_STATUS(family->Run({{"x", Random(DType::kFloat32, {2, 7, 3}, 1)},
                             {"t", RandomInts({7, 2}, 1, 0, 9)}}).status(),
                absl::StatusCode::kInvalidArgument, "input 'x' dim 1 ('seq') is 7, outside [1, 6]");
  EXPECT_STATUS(family->Run({{"x", Random(DType::kFloat32, {2, 5, 4}, 1)},
                             {"t", RandomInts({5, 2}, 1, 0, 9)}}).status(),
                absl::StatusCode::kInvalidArgument, "input 'x' dim 2 is fixed at 3, fed (2, 5, 4)");
  EXPECT_STATUS(family->Run({{"x", x}}).status(), absl::StatusCode::kInvalidArgument,
                "no feed for input 't'");
  EXPECT_STATUS(family->Run({{"x", x}, {"t", RandomInts({5, 2}, 1, 0, 9)}, {"u", x}}).status(),
                absl::StatusCode::kInvalidArgument, "no input is named 'u'");
  EXPECT_STATUS(family->Run({{"x", x}, {"t", RandomInts({5}, 1, 0, 9)}}).status(),
                absl::StatusCode::kInvalidArgument, "input 't' has rank 2, fed (5,)");
  EXPECT_EQ(family->builds(), 0);  // nothing refused was built
  ASSERT_OK_AND_ASSIGN(auto out, family->Run({{"x", x}, {"t", RandomInts({5, 2}, 1, 0, 9)}}));
  double sum = 0;
  for (double v : AsDoubles(x)) sum += v;
  ExpectAllClose(out[0], {sum}, 1e-5, 1e-5, "sum of x");
}

TEST(ShapeFamily, RefusesABadDeclaration) {
  Graph g, other;
  Executor exec(g), elsewhere(other);
  auto build = [](Graph&, const Binding&) -> absl::StatusOr<Specialized> { return Specialized{}; };
  auto create = [&](Executor& e, ShapeFamilyOptions o) {
    return ShapeFamily::Create(g, e, std::move(o), build).status();
  };
  const FamilyInput x{"x", DType::kFloat32, {"batch"}};
  EXPECT_STATUS(create(elsewhere, {.inputs = {x}, .bounds = {{"batch", 2}}}),
                absl::StatusCode::kInvalidArgument, "the executor runs another graph");
  EXPECT_STATUS(create(exec, {.inputs = {x}}), absl::StatusCode::kInvalidArgument,
                "input 'x' dim 0 is 'batch', which has no bound");
  EXPECT_STATUS(create(exec, {.inputs = {x}, .bounds = {{"batch", 0}}}),
                absl::StatusCode::kInvalidArgument, "'batch' has bound 0 < 1");
  EXPECT_STATUS(create(exec, {.inputs = {x}, .bounds = {{"batch", 2}, {"seq", 2}}}),
                absl::StatusCode::kInvalidArgument, "no input uses 'seq'");
  EXPECT_STATUS(create(exec, {.inputs = {x, x}, .bounds = {{"batch", 2}}}),
                absl::StatusCode::kInvalidArgument, "input 'x' twice");
  // Refused at every Run before.
  EXPECT_STATUS(create(exec, {.inputs = {{"enc/ids", DType::kInt64, {"batch"}}},
                              .bounds = {{"batch", 2}}}),
                absl::StatusCode::kInvalidArgument, "input 'enc/ids': a name must not contain '/'");
  EXPECT_STATUS(create(exec, {.inputs = {x}, .bounds = {{"batch", 2}}, .max_plans = 0}),
                absl::StatusCode::kInvalidArgument, "max_plans 0 < 1");
}

// A second family of one graph with the same input at the same size (an
// evaluation that makes its family per epoch) asked for the first one's
// input path again: "duplicate path", kept for that size for good. It
// builds under a scope of its own.
TEST(ShapeFamily, TwoFamiliesOfOneGraphShareNoInputPath) {
  Product p;
  ASSERT_OK(p.Start());
  ASSERT_OK_AND_ASSIGN(Tensor w, p.exec->Read(p.w));
  const Tensor x = Random(DType::kFloat32, {3, 3}, 1);
  // Each epoch makes the family again and runs it at batch 3.
  auto epochs = [&](int count, const std::string& what) {
    for (int epoch = 0; epoch < count; ++epoch) {
      p.family.reset();
      ASSERT_OK(p.Start());
      ASSERT_OK_AND_ASSIGN(Tensor y, p.Run(x));
      ExpectAllClose(y, HandProduct(x, w), 1e-5, 1e-6, what + std::to_string(epoch));
    }
  };
  ASSERT_NO_FATAL_FAILURE(epochs(3, "epoch "));
  EXPECT_FALSE(p.g.Find("batch=3/x").is_null());
  EXPECT_FALSE(p.g.Find("batch=3#3/x").is_null());
  // Under a scope too (its bindings' inputs are "eval/batch=3/x", ...).
  Graph::Scope eval(p.g, "eval");
  ASSERT_NO_FATAL_FAILURE(epochs(2, "scoped epoch "));
  EXPECT_FALSE(p.g.Find("eval/batch=3#2/x").is_null());
}

// Families of other input names: the second's binding took the first's
// scope, and its variable's path there was a duplicate, for good.
TEST(ShapeFamily, FamiliesOfOtherInputNamesTakeScopesOfTheirOwn) {
  Graph g;
  Executor exec(g);
  auto make = [&](const std::string& name) {
    return ShapeFamily::Create(
        g, exec, {.inputs = {{name, DType::kFloat32, {"batch", 3}}}, .bounds = {{"batch", 8}}},
        [name](Graph& graph, const Binding& b) -> absl::StatusOr<Specialized> {
          const Value acc = graph.Variable("acc", {3}, Initializer::Ones());
          return Specialized{.fetches = {Sum(b.input(name), {0}) + acc}};
        });
  };
  ASSERT_OK_AND_ASSIGN(auto first, make("x"));
  ASSERT_OK_AND_ASSIGN(auto second, make("y"));
  const Tensor ones = T<float>({2, 3}, {1, 1, 1, 1, 1, 1});
  ASSERT_OK_AND_ASSIGN(auto a, first->Run({{"x", ones}}));
  ASSERT_OK_AND_ASSIGN(auto b, second->Run({{"y", ones}}));
  ExpectAllClose(b[0], {3, 3, 3}, 0, 0, "second family");
  EXPECT_FALSE(g.Find("batch=2/acc").is_null());
  EXPECT_FALSE(g.Find("batch=2#2/acc").is_null());
}

TEST(ShapeFamily, KeepsAtMostMaxPlansEvictingTheLeastRecentlyUsed) {
  Product p;
  ASSERT_OK(p.Start({}, /*max_plans=*/2));
  for (int64_t batch : {1, 2, 3, 1}) {
    ASSERT_OK(p.Run(Random(DType::kFloat32, {batch, 3}, batch)).status());
  }
  // 1, 2 kept; 3 evicts 1; 1 again evicts 2, the least recently used.
  EXPECT_EQ(p.family->cached_plans(), 2);
  EXPECT_TRUE(p.family->IsCached(Sizes{{"batch", 1}}));
  EXPECT_FALSE(p.family->IsCached(Sizes{{"batch", 2}}));
  EXPECT_TRUE(p.family->IsCached(Sizes{{"batch", 3}}));
  EXPECT_EQ(p.family->compiles(), 4);
  EXPECT_EQ(p.family->builds(), 3);  // 1 compiled again from the nodes it had
}

// Arenas: a probe measures two plans' arenas; under a limit that holds
// either but not both, the second compile evicts the first, and a limit
// below one plan refuses it.
TEST(ShapeFamily, PlansAreCountedByTheMemoryLimitAndEvictedBeforeRefusing) {
  auto arena = [](int64_t batch) -> int64_t {
    Product probe;
    EXPECT_TRUE(probe.Start({}, 4, 4096).ok());
    EXPECT_TRUE(probe.Run(Random(DType::kFloat32, {batch, 3}, 1)).ok());
    return probe.family->cached_bytes();
  };
  const int64_t big = arena(4096), small = arena(2048);
  ASSERT_GT(small, 0);
  Product p;
  // w's 24 bytes are allocated with the first run.
  ASSERT_OK(p.Start({.memory_limit_bytes = big + small - 1 + 24, .check_host_memory = false},
                    4, 4096));
  ASSERT_OK(p.Run(Random(DType::kFloat32, {4096, 3}, 1)).status());
  ASSERT_OK(p.Run(Random(DType::kFloat32, {2048, 3}, 2)).status());
  EXPECT_EQ(p.family->cached_plans(), 1);
  EXPECT_FALSE(p.family->IsCached(Sizes{{"batch", 4096}}));
  EXPECT_EQ(p.exec->bytes_in_use(), small + 24);
  Product tight;
  ASSERT_OK(tight.Start({.memory_limit_bytes = small - 1 + 24, .check_host_memory = false},
                        4, 4096));
  ASSERT_OK(tight.Run(Random(DType::kFloat32, {1, 3}, 1)).status());
  EXPECT_EQ(tight.Run(Random(DType::kFloat32, {2048, 3}, 1)).status().code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(tight.family->cached_plans(), 0);  // the batch-1 plan was evicted first
}

// A training step on a (4, 3) batch, built once beside the family, moves w;
// the family's batch-2 plan then computes with the moved w: by hand, SGD on
// Sum(x4 · w) moves w[k][j] by -lr * (sum over rows of x4[:, k]).
TEST(ShapeFamily, ATrainingStepOnOneShapeIsSeenByAnother) {
  Product p;
  const Value x4 = p.g.Input("x4", DType::kFloat32, {4, 3});
  ASSERT_OK_AND_ASSIGN(TrainingStep ts, BuildTrainingStep(Sum(MatMul(x4, p.w)), {p.w},
                                                          {.kind = OptimizerKind::kSgd,
                                                           .momentum = 0.0}));
  ASSERT_OK(p.Start());
  ASSERT_OK_AND_ASSIGN(auto step, p.exec->Compile({ts.loss}, ts.updates));
  const Tensor x = Random(DType::kFloat32, {2, 3}, 3), batch4 = Random(DType::kFloat32, {4, 3}, 4);
  ASSERT_OK(p.Run(x).status());
  ASSERT_OK_AND_ASSIGN(Tensor w0, p.exec->Read(p.w));
  ASSERT_OK(p.exec->Run(*step, {{x4, batch4}, {ts.lr, Tensor::Scalar(0.5)},
                               {ts.step, Tensor::Scalar(1.0)}}).status());
  std::vector<double> moved = AsDoubles(w0);
  const std::vector<double> rows = AsDoubles(batch4);
  for (int k = 0; k < 3; ++k)
    for (int j = 0; j < 2; ++j)
      for (int r = 0; r < 4; ++r) moved[k * 2 + j] -= 0.5 * rows[r * 3 + k];
  ASSERT_OK_AND_ASSIGN(Tensor y, p.Run(x));
  ExpectAllClose(y, HandProduct(x, T<double>({3, 2}, moved)), 1e-5, 1e-5, "after the step");
}

// Dropout draws by its place in the specialisation, not by when the
// specialisation was built: two graphs that met the shapes in other orders
// (a run and its resume) drop the same elements at the same step, and the
// backward drops what the forward dropped.
TEST(ShapeFamily, ASpecialisationDrawsTheSameDropoutWheneverItIsBuilt) {
  auto outputs = [](const std::vector<int64_t>& order) -> absl::StatusOr<std::vector<Tensor>> {
    Graph g;
    Executor exec(g);
    DAGRAD_ASSIGN_OR_RETURN(
        std::unique_ptr<ShapeFamily> family,
        ShapeFamily::Create(g, exec,
                            {.inputs = {{"x", DType::kFloat32, {"batch", 16}}},
                             .bounds = {{"batch", 8}}},
                            [](Graph&, const Binding& b) -> absl::StatusOr<Specialized> {
                              const Value y = Dropout(b.input("x"), 0.5);
                              DAGRAD_ASSIGN_OR_RETURN(std::vector<Value> dx,
                                                      Gradients(Sum(y), {b.input("x")}));
                              return Specialized{.fetches = {y, dx[0]}};
                            }));
    std::vector<Tensor> last;
    for (const int64_t rows : order) {
      DAGRAD_ASSIGN_OR_RETURN(last, family->Run({{"x", Random(DType::kFloat32, {rows, 16}, 1)}},
                                                {.training = true, .step = 5}));
    }
    return last;
  };
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> first, outputs({3, 2}));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> resumed, outputs({2}));
  ExpectAllClose(resumed[0], AsDoubles(first[0]), 0, 0, "the batch-2 forward");
  const std::vector<double> y = AsDoubles(first[0]), dx = AsDoubles(first[1]);
  int dropped = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    EXPECT_EQ(y[i] == 0, dx[i] == 0) << i;
    dropped += y[i] == 0;
  }
  EXPECT_GT(dropped, 4);
  EXPECT_LT(dropped, 28);
}

TEST(ShapeFamily, ABuildErrorIsKeptForItsBindingAlone) {
  Product p;
  p.exec = std::make_unique<Executor>(p.g);
  int calls = 0;
  ASSERT_OK_AND_ASSIGN(
      p.family, ShapeFamily::Create(
                    p.g, *p.exec,
                    {.inputs = {{"x", DType::kFloat32, {"batch", 3}}}, .bounds = {{"batch", 8}}},
                    [&](Graph&, const Binding& b) -> absl::StatusOr<Specialized> {
                      ++calls;
                      if (b.size("batch") == 3) return absl::UnimplementedError("no threes");
                      return Specialized{.fetches = {MatMul(b.input("x"), b.input("x"))}};
                    }));
  for (int i = 0; i < 2; ++i) {
    EXPECT_STATUS(p.Run(Random(DType::kFloat32, {3, 3}, 1)).status(),
                  absl::StatusCode::kUnimplemented, "no threes");
  }
  EXPECT_STATUS(p.Run(Random(DType::kFloat32, {2, 3}, 1)).status(),
                absl::StatusCode::kInvalidArgument, "shape family, building batch=2: ");
  EXPECT_EQ(calls, 2);  // each binding built once
}

}  // namespace
}  // namespace dagrad::testing
