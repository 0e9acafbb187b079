// micrograd's demo in dagrad: a two-layer MLP learns to tell two moons apart.
#include <dagrad/dagrad.h>
#include <cmath>
#include <cstdio>
#include <random>
using namespace dagrad;
absl::StatusOr<float> Train(int n, int steps) {  // returns the accuracy after training
  std::vector<float> xy;  // n points, alternately on the upper and the lower moon
  std::vector<int64_t> labels;
  std::mt19937 rng(0);
  std::normal_distribution<float> noise(0.0f, 0.1f);
  for (int i = 0; i < n; ++i) {
    const float t = M_PI * (i / 2) / (n / 2 - 1), c = i % 2, s = 1 - 2 * c;
    xy.insert(xy.end(), {c + s * std::cos(t) + noise(rng), c / 2 + s * std::sin(t) + noise(rng)});
    labels.push_back(i % 2);
  }
  Graph g;
  Value x = g.Input("x", DType::kFloat32, {n, 2}), y = g.Input("y", DType::kInt64, {n});
  const Initializer glorot = Initializer::XavierUniform(), zeros = Initializer::Zeros();
  Value w1 = g.Parameter("w1", {16, 2}, glorot), b1 = g.Parameter("b1", {16}, zeros);
  Value w2 = g.Parameter("w2", {2, 16}, glorot), b2 = g.Parameter("b2", {2}, zeros);
  Value logits = Linear(Relu(Linear(x, w1, b1)), w2, b2), loss = CrossEntropy(logits, y);
  Value predicted = Cast(Greater(Slice(logits, 1, 1, 2), Slice(logits, 1, 0, 1)), DType::kInt64);
  Value accuracy = Mean(Cast(Equal(predicted, Reshape(y, {n, 1})), DType::kFloat32));
  DAGRAD_ASSIGN_OR_RETURN(TrainingStep step, BuildTrainingStep(loss, g.Parameters(), {}));
  Executor exec(g);
  DAGRAD_ASSIGN_OR_RETURN(auto plan, exec.Compile({accuracy}, step.updates));
  DAGRAD_ASSIGN_OR_RETURN(Tensor xs, Tensor::FromVector<float>({n, 2}, xy));
  DAGRAD_ASSIGN_OR_RETURN(Tensor ys, Tensor::FromVector<int64_t>({n}, labels));
  for (int t = 1;; ++t) {  // full-batch Adam, learning rate 0.05
    DAGRAD_ASSIGN_OR_RETURN(auto out, exec.Run(*plan, {{x, xs}, {y, ys},
        {step.lr, Tensor::Scalar(0.05)}, {step.step, Tensor::Scalar<double>(t)}}));
    if (t == steps) return out[0].data<float>()[0];  // before this step's update
  }
}
int main() {  // fails unless the accuracy reaches 97%
  absl::StatusOr<float> accuracy = Train(/*n=*/200, /*steps=*/300);
  std::printf("accuracy %.3f (%s)\n", accuracy.value_or(0), accuracy.status().ToString().c_str());
  return accuracy.value_or(0) >= 0.97 ? 0 : 1;
}
