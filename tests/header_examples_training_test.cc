// The examples of engine/feed_conversion.h and LrSchedule
// (engine/autodiff/optimizer.h), line for line, run
// (tests/header_examples.h).
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>

#include "engine/autodiff/optimizer.h"
#include "engine/executor.h"
#include "engine/feed_conversion.h"
#include "engine/graph.h"
#include "engine/status_macros.h"
#include "engine/tensor.h"
#include "tests/header_examples.h"

namespace dagrad {
namespace {

HEADER_EXAMPLE(FeedConversion) {
  Graph g;
  Value step = g.Input("step", DType::kFloat64, {});
  const Feeds feeds = {{step, Tensor::Scalar(7)}};
  DAGRAD_ASSIGN_OR_RETURN(std::optional<Feeds> converted, ExactFloatFeeds(g, feeds));
  const Feeds& used = converted ? *converted : feeds;
  EXPECT_EQ(used[0].second.dtype(), DType::kFloat64);
  EXPECT_EQ(used[0].second.data<double>()[0], 7.0);
  return absl::OkStatus();
}

HEADER_EXAMPLE(LrSchedule) {
  LrSchedule warm_cosine{.peak = 6e-4, .warmup_steps = 100, .total_steps = 2000,
                         .final_fraction = 0.1};
  LrSchedule nanogpt{.custom = [](int64_t s) { return 6e-4 * std::min<double>(s, 101) / 101; }};
  DAGRAD_ASSIGN_OR_RETURN(const double first, LearningRate(warm_cosine, 1));  // 6e-6
  EXPECT_DOUBLE_EQ(first, 6e-4 / 100);
  EXPECT_DOUBLE_EQ(*LearningRate(nanogpt, 1), 6e-4 / 101);  // nanoGPT's get_lr(0)
  return absl::OkStatus();
}

}  // namespace
}  // namespace dagrad
