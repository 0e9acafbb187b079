// Builds y = sum(relu(x · wᵀ + b)) with the installed dagrad and checks it.
#include <cmath>
#include <cstdio>

#include <dagrad/dagrad.h>

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
  return ok ? 0 : 1;
}
