// Builds y = sum(relu(x · wᵀ + b)) with the installed dagrad and checks it;
// then checks that ParallelFor, a template compiled here (this project does
// not use OpenMP), still spreads its chunks over two threads.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <set>
#include <thread>

#include <dagrad/dagrad.h>
#include <dagrad/ops/cpu/cpu_threads.h>
#include <dagrad/ops/cpu/parallel.h>

// ThreadsOfParallelFor returns how many threads ran a ParallelFor split in
// two (dagrad::SetNumThreads(2)) under the spin policy: two, one chunk each
// (OpenMP's static schedule), unless the loop ran serially. (Under share,
// or auto on busy cores, dagrad's pool may run both on the caller.)
size_t ThreadsOfParallelFor() {
  if (!dagrad::SetNumThreads(2).ok()) return 0;
  dagrad::SetWaitPolicy(dagrad::WaitPolicy::kSpin);
  std::mutex mu;
  std::set<std::thread::id> ids;
  dagrad::ParallelFor(2, 1, [&](int64_t, int64_t) {
    std::lock_guard<std::mutex> lock(mu);
    ids.insert(std::this_thread::get_id());
  });
  return ids.size();
}

int main() {
  using namespace dagrad;
  Graph g;
  Value x = g.Input("x", DType::kFloat32, {1, 2});
  Value w = g.Parameter("w", {2, 2}, Initializer::Ones());
  Value b = g.Parameter("b", {2}, Initializer::Constant(-4.0));
  Value y = Sum(Relu(Linear(x, w, b)));
  auto grads = Gradients(y, {w});
  if (!grads.ok()) return 1;
  Executor exec(g);
  auto plan = exec.Compile({y, (*grads)[0]});
  if (!plan.ok()) return 1;
  auto out = exec.Run(**plan, {{x, *Tensor::FromVector<float>({1, 2}, {2, 3})}});
  if (!out.ok()) return 1;
  // x·wᵀ + b = [1, 1], relu keeps both: y = 2; dy/dw = [[2, 3], [2, 3]].
  const float value = (*out)[0].data<float>()[0];
  const float* dw = (*out)[1].data<float>();
  const bool ok = std::abs(value - 2) < 1e-6 && dw[0] == 2 && dw[1] == 3 && dw[2] == 2 && dw[3] == 3;
  std::printf("consumer: y = %g, dw = [%g %g %g %g] %s\n", value, dw[0], dw[1], dw[2], dw[3],
              ok ? "ok" : "WRONG");
  // OMP_THREAD_LIMIT=1 holds OpenMP's team, and so ParallelFor, to one.
  const char* limit = std::getenv("OMP_THREAD_LIMIT");
  const size_t want = limit != nullptr && std::atoi(limit) == 1 ? 1 : 2;
  const size_t threads = ThreadsOfParallelFor();
  std::printf("consumer: ParallelFor over 2 threads ran on %zu %s\n", threads,
              threads == want ? "ok" : "WRONG");
  return ok && threads == want ? 0 : 1;
}
