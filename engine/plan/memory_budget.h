// engine/plan/memory_budget.h
//
// MemoryBudget adds up, with checked arithmetic, what is about to be
// allocated, by category ("arena", "parameters", "optimizer state",
// "data") and by item (a node, a data set), and checks the sum against a
// limit before anything is allocated. When it does not fit, the error is
// RESOURCE_EXHAUSTED naming the need, the limit and where it came from, the
// categories, and the biggest items:
//
//   compiling the plan on cpu needs 1.02 PB, over the memory limit of 20.3 GB (MemAvailable
//   in /proc/meminfo): arena 1.02 PB, parameters 2.1 MB. Biggest: matmul
//   'encoder/layer0/self_attn/scores' float32 (64, 4, 1000000, 1000000) = 256 TB; ...
//
//   // setup: Budget
//   MemoryBudget need;
//   need.Add("parameters", "variable 'w' float32 (8192, 8192)", 268435456);
//   need.Add("arena", arena_bytes);                       // an aggregate, not listed
//   need.AddPart("matmul 'scores' float32 (64, 4, 512, 512)", scores_bytes);  // in the arena
//   DAGRAD_RETURN_IF_ERROR(need.CheckFits(limit, "compiling the plan"));

#ifndef DAGRAD_ENGINE_PLAN_MEMORY_BUDGET_H_
#define DAGRAD_ENGINE_PLAN_MEMORY_BUDGET_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "engine/plan/host_memory.h"

namespace dagrad {

class MemoryBudget {
 public:
  // Add counts `bytes` (>= 0) under `category`, listed among the biggest
  // items as `what`.
  void Add(absl::string_view category, absl::string_view what, int64_t bytes);
  // Add counts an aggregate (an arena) that is not itself listed.
  void Add(absl::string_view category, int64_t bytes);
  // AddPart lists `what` among the biggest items without counting it: it
  // is part of an aggregate counted already (a buffer in the arena).
  void AddPart(absl::string_view what, int64_t bytes);
  // Merge adds everything `other` counts and lists.
  void Merge(const MemoryBudget& other);

  // total is the sum, or nullopt when it overflows int64.
  std::optional<int64_t> total() const { return total_; }

  // CheckFits returns OK when the total is at most limit.bytes, else
  // ResourceExhausted as in the file comment; `for_what` starts it.
  absl::Status CheckFits(const MemoryLimit& limit, absl::string_view for_what) const;

 private:
  struct Item {
    std::string category, what;  // what: "" for an aggregate
    int64_t bytes;
    bool counted;
  };
  std::vector<Item> items_;
  std::optional<int64_t> total_ = 0;
};

}  // namespace dagrad

#endif  // DAGRAD_ENGINE_PLAN_MEMORY_BUDGET_H_
