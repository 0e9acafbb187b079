#include "engine/plan/memory_budget.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/checked_math.h"

namespace dagrad {
namespace {

constexpr int kListed = 5;  // items named in the message
constexpr int64_t kOverflow = std::numeric_limits<int64_t>::max();  // sorts a sum that overflowed first

// SumsByCategory returns each category's sum (nullopt: overflow), biggest first.
std::vector<std::pair<std::string, std::optional<int64_t>>> SumsByCategory(
    const std::vector<std::pair<std::string, int64_t>>& counted) {
  std::vector<std::pair<std::string, std::optional<int64_t>>> sums;
  for (const auto& item : counted) {
    auto it = std::find_if(sums.begin(), sums.end(),
                           [&](const auto& s) { return s.first == item.first; });
    if (it == sums.end()) {
      sums.push_back({item.first, item.second});
    } else if (it->second.has_value()) {
      it->second = CheckedAdd(*it->second, item.second);
    }
  }
  std::stable_sort(sums.begin(), sums.end(), [](const auto& a, const auto& b) {
    return a.second.value_or(kOverflow) > b.second.value_or(kOverflow);
  });
  return sums;
}

std::string Bytes(std::optional<int64_t> bytes) {
  return bytes.has_value() ? HumanBytes(*bytes) : "more than 9.22 EB";
}

}  // namespace

void MemoryBudget::Add(absl::string_view category, absl::string_view what, int64_t bytes) {
  items_.push_back({std::string(category), std::string(what), bytes, true});
  if (total_.has_value()) total_ = CheckedAdd(*total_, bytes);
}

void MemoryBudget::Add(absl::string_view category, int64_t bytes) { Add(category, "", bytes); }

void MemoryBudget::AddPart(absl::string_view what, int64_t bytes) {
  items_.push_back({"", std::string(what), bytes, false});
}

void MemoryBudget::Merge(const MemoryBudget& other) {
  for (const Item& item : other.items_) {
    items_.push_back(item);
    if (item.counted && total_.has_value()) total_ = CheckedAdd(*total_, item.bytes);
  }
}

absl::Status MemoryBudget::CheckFits(const MemoryLimit& limit, absl::string_view for_what) const {
  if (total_.has_value() && *total_ <= limit.bytes) return absl::OkStatus();
  std::vector<std::pair<std::string, int64_t>> counted;
  std::vector<const Item*> listed;
  for (const Item& item : items_) {
    if (item.counted && item.bytes > 0) counted.push_back({item.category, item.bytes});
    if (!item.what.empty()) listed.push_back(&item);
  }
  std::stable_sort(listed.begin(), listed.end(),
                   [](const Item* a, const Item* b) { return a->bytes > b->bytes; });
  if (listed.size() > kListed) listed.resize(kListed);
  // Rounded alike ("needs 3.15 MB, over the limit of 3.15 MB"), both exact.
  std::string need = Bytes(total_), have = HumanBytes(limit.bytes);
  if (need == have) {
    need = absl::StrCat(*total_, " bytes");
    have = absl::StrCat(limit.bytes, " bytes");
  }
  return absl::ResourceExhaustedError(absl::StrCat(
      for_what, " needs ", need, ", over the memory limit of ", have, " (",
      limit.source, "): ",
      absl::StrJoin(SumsByCategory(counted), ", ",
                    [](std::string* out, const auto& s) {
                      absl::StrAppend(out, s.first, " ", Bytes(s.second));
                    }),
      listed.empty() ? "" : ". Biggest: ",
      absl::StrJoin(listed, "; ", [](std::string* out, const Item* item) {
        absl::StrAppend(out, item->what, " = ", HumanBytes(item->bytes));
      })));
}

}  // namespace dagrad
