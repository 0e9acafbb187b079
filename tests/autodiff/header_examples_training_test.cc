// The examples of engine/feed_conversion.h, LrSchedule
// (ops/autodiff/optimizer.h) and engine/io/utf8.h's writers of generated
// text, line for line, run (tests/support/header_examples.h).
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>

#include "engine/executor.h"
#include "engine/feed_conversion.h"
#include "engine/graph.h"
#include "engine/io/utf8.h"
#include "engine/status_macros.h"
#include "engine/tensor.h"
#include "ops/autodiff/optimizer.h"
#include "tests/support/header_examples.h"

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

HEADER_EXAMPLE(Utf8Terminal) {
  TerminalText("caf\xc3\xa9\n\xff");  // "caf\xc3\xa9\n" then the 4 characters \xff
  EXPECT_EQ(TerminalText("caf\xc3\xa9\n\xff"), "caf\xc3\xa9\n\\xff");
  // Tabs stay; a C0 control, DEL, a C1 control (two bytes, shown as one), a
  // lone continuation byte and a truncated sequence are escaped.
  EXPECT_EQ(TerminalText("\t\x01\x7f\xc2\x85\x80\xe2\x82"), "\t\\x01\\x7f\\x85\\x80\\xe2\\x82");
  IncompleteTail("a\xc3");  // 1
  EXPECT_EQ(IncompleteTail("a\xc3"), 1u);
  EXPECT_EQ(IncompleteTail("a\xe2\x82"), 2u);
  EXPECT_EQ(IncompleteTail("a\xe2\x82\xac"), 0u);  // the euro sign, whole
  EXPECT_EQ(IncompleteTail("a\x80"), 0u);            // no lead byte: nothing to wait for
  EXPECT_EQ(IncompleteTail("\xc3\xa9"), 0u);
  return absl::OkStatus();
}

}  // namespace
}  // namespace dagrad
