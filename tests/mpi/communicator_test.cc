// The MPI communicator and the collective ops over two ranks: ctest runs
// this program under `mpirun -np 2` (tests/CMakeLists.txt). The oracle is
// arithmetic on both ranks' inputs, which every rank can compute alone:
// rank r's input is a known function of r.

#include <cmath>
#include <vector>

#include "engine/executor.h"
#include "engine/mpi/mpi_communicator.h"
#include "ops/autodiff/autodiff.h"
#include "ops/autodiff/optimizer.h"
#include "ops/collective.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "ops/reduce.h"
#include "tests/support/test_util.h"

namespace dagrad {
namespace {

// Comm is the job's communicator, for the whole program: MPI is finalised
// with it, at exit.
std::shared_ptr<Communicator> Comm() {
  static std::shared_ptr<Communicator> comm = [] {
    auto made = MpiCommunicator();
    EXPECT_TRUE(made.ok()) << made.status();
    return made.ok() ? *made : nullptr;
  }();
  return comm;
}

TEST(Mpi, RunsOnTwoRanks) {
  ASSERT_NE(Comm(), nullptr);
  ASSERT_EQ(Comm()->size(), 2) << "run under mpirun -np 2";
}

TEST(Mpi, AllReduceSumsEveryRank) {
  const int r = Comm()->rank();
  std::vector<double> d = {1.0 + r, -2.0 * r, 0.5};
  std::vector<float> f(1000);
  for (int i = 0; i < 1000; ++i) f[i] = static_cast<float>(i * (r + 1));
  ASSERT_OK(Comm()->AllReduceSum({.data = d.data(), .count = 3, .dtype = DType::kFloat64}));
  ASSERT_OK(Comm()->AllReduceSum({.data = f.data(), .count = 1000, .dtype = DType::kFloat32}));
  EXPECT_EQ(d, (std::vector<double>{3.0, -2.0, 1.0}));  // (1 + 2), (0 - 2), (0.5 + 0.5)
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(f[i], 3.0f * i);
}

TEST(Mpi, StartedSumsCompleteInAnyWaitOrder) {
  const int r = Comm()->rank();
  std::vector<double> a(5, r + 1.0), b(7, 10.0 * (r + 1));
  ASSERT_OK(Comm()->StartAllReduceSum({.data = a.data(), .count = 5, .dtype = DType::kFloat64}));
  ASSERT_OK(Comm()->StartAllReduceSum({.data = b.data(), .count = 7, .dtype = DType::kFloat64}));
  ASSERT_OK(Comm()->WaitAllReduce(b.data()));
  ASSERT_OK(Comm()->WaitAllReduce(a.data()));
  EXPECT_EQ(a, std::vector<double>(5, 3.0));
  EXPECT_EQ(b, std::vector<double>(7, 30.0));
  EXPECT_STATUS(Comm()->WaitAllReduce(a.data()), absl::StatusCode::kFailedPrecondition,
                "wait for an all-reduce that was not started");
}

TEST(Mpi, BroadcastCopiesRankZero) {
  int64_t v[2] = {Comm()->rank() == 0 ? 41 : -1, Comm()->rank() == 0 ? 42 : -1};
  ASSERT_OK(Comm()->Broadcast(v, sizeof(v), 0));
  EXPECT_EQ(v[0], 41);
  EXPECT_EQ(v[1], 42);
}

// The gradient of AllReduce is an all-reduce: with loss_r = sum(AllReduce(x)
// * w_r) on each rank, the job's loss sums both, and dL/dx_r = w_0 + w_1.
TEST(Mpi, AllReduceGradientIsAnAllReduce) {
  const int r = Comm()->rank();
  Graph g;
  Value x = g.Input("x", DType::kFloat64, {3});
  Value w = g.Input("w", DType::kFloat64, {3});
  Value loss = Sum(AllReduce(x) * w);
  ASSERT_OK_AND_ASSIGN(std::vector<Value> grads, Gradients(loss, {x}));
  Executor exec(g, {.communicator = Comm()});
  ASSERT_OK_AND_ASSIGN(auto plan, exec.Compile({loss, grads[0]}));
  ASSERT_OK_AND_ASSIGN(
      auto out, exec.Run(*plan, {{x, testing::T<double>({3}, {1.0 + r, 2.0, 3.0 * r})},
                                 {w, testing::T<double>({3}, {1.0, r + 1.0, -1.0 * r})}}));
  // AllReduce(x) = (3, 4, 3); rank 0: 3 + 4 + 0 = 7, rank 1: 3 + 8 - 3 = 8.
  EXPECT_EQ(out[0].data<double>()[0], r == 0 ? 7.0 : 8.0);
  testing::ExpectAllClose(out[1], {2.0, 3.0, -1.0}, 0, 0);
}

// Net: w1 (3, 5), w2 (7), w3 (40), so that 16-element buckets split w1 and
// w2 and w3 spans three; rank r's batch is x_r.
struct Net {
  Graph g;
  Value x, loss;
  Net() {
    x = g.Input("x", DType::kFloat32, {2, 5});
    Value w1 = g.Parameter("w1", {3, 5}, Initializer::Uniform(-1, 1));
    Value w2 = g.Parameter("w2", {7}, Initializer::Uniform(-1, 1));
    Value w3 = g.Parameter("w3", {40}, Initializer::Uniform(-1, 1));
    Value h = Tanh(Linear(x, w1));
    loss = Sum(h * h) * Sum(w2 * w2) + Sum(Tanh(w3)) * Sum(x);
  }
};

Tensor BatchOf(int rank) {
  std::vector<float> v(10);
  for (int i = 0; i < 10; ++i) v[i] = 0.1f * static_cast<float>((i + 3 * rank) % 7) - 0.3f;
  return testing::T<float>({2, 5}, v);
}

// The bucketed, overlapped sum over two ranks equals, within float
// rounding, the sum of the two ranks' gradients computed in one process.
TEST(Mpi, BucketedGradientsAreTheSumOverRanks) {
  Net dp;
  ASSERT_OK_AND_ASSIGN(TrainingStep ts,
                       BuildTrainingStep(dp.loss, dp.g.Parameters(),
                                         {.clip_norm = 1.0,
                                          .data_parallel = {.communicator = Comm(),
                                                            .bucket_bytes = 16 * 4}}));
  EXPECT_EQ(ts.num_buckets, 4);
  Executor exec(dp.g, {.communicator = Comm()});
  std::vector<Value> fetches = ts.grads;
  fetches.push_back(ts.grad_norm);
  ASSERT_OK_AND_ASSIGN(auto plan, exec.Compile(fetches));
  ASSERT_OK_AND_ASSIGN(auto summed, exec.Run(*plan, {{dp.x, BatchOf(Comm()->rank())}}));

  Net alone;  // the same parameters (same seed), both batches here
  ASSERT_OK_AND_ASSIGN(std::vector<Value> grads, Gradients(alone.loss, alone.g.Parameters()));
  Executor local(alone.g);
  ASSERT_OK_AND_ASSIGN(auto local_plan, local.Compile(grads));
  ASSERT_OK_AND_ASSIGN(auto g0, local.Run(*local_plan, {{alone.x, BatchOf(0)}}));
  ASSERT_OK_AND_ASSIGN(auto g1, local.Run(*local_plan, {{alone.x, BatchOf(1)}}));
  double norm2 = 0;
  for (size_t i = 0; i < grads.size(); ++i) {
    std::vector<double> want = testing::AsDoubles(g0[i]);
    const std::vector<double> other = testing::AsDoubles(g1[i]);
    for (size_t k = 0; k < want.size(); ++k) {
      want[k] += other[k];
      norm2 += want[k] * want[k];
    }
    testing::ExpectAllClose(summed[i], want, 1e-5, 1e-6);
  }
  EXPECT_NEAR(summed.back().data<double>()[0], std::sqrt(norm2), 1e-5 * std::sqrt(norm2));
}

}  // namespace
}  // namespace dagrad
