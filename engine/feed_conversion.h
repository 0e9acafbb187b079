// engine/feed_conversion.h
//
// Integer feeds of float inputs, as PyTorch users expect: a step number
// fed as Tensor::Scalar(t) with an int t where the graph's input is a
// float64 scalar. Executor::Run converts such a feed, every element
// exactly, or refuses it when an element would round: float64 holds every
// integer of magnitude up to 2^53, float32 up to 2^24 (beyond, those that
// happen to be representable).
//
//   DAGRAD_ASSIGN_OR_RETURN(std::optional<Feeds> converted, ExactFloatFeeds(g, feeds));
//   const Feeds& used = converted ? *converted : feeds;

#ifndef DAGRAD_ENGINE_FEED_CONVERSION_H_
#define DAGRAD_ENGINE_FEED_CONVERSION_H_

#include <optional>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/graph.h"
#include "engine/tensor.h"

namespace dagrad {

// ExactFloatFeeds returns `feeds` with each int32 or int64 tensor fed to a
// float32 or float64 input of `g` of the same shape replaced by its float
// copy; nullopt when there is none to convert. InvalidArgument, naming the
// input, the element and its value, when an element is not exactly a value
// of the input's dtype. Other mismatches are left for the feed checks.
absl::StatusOr<std::optional<std::vector<std::pair<Value, Tensor>>>> ExactFloatFeeds(
    const Graph& g, const std::vector<std::pair<Value, Tensor>>& feeds);

}  // namespace dagrad

#endif  // DAGRAD_ENGINE_FEED_CONVERSION_H_
