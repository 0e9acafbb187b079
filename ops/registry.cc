#include "ops/registry.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace dagrad {
namespace {

// Built on first use, so that registrations from static initialisers in
// any order find it; kept ordered by name, so AllOps() does not depend on
// the order the linker put the ops' files in.
std::vector<const OpDef*>& Registered() {
  static auto* const ops = new std::vector<const OpDef*>();
  return *ops;
}

bool ByName(const OpDef* a, const OpDef* b) { return a->name < b->name; }

}  // namespace

OpRegistrar::OpRegistrar(const OpDef& op) {
  std::vector<const OpDef*>& ops = Registered();
  auto at = std::lower_bound(ops.begin(), ops.end(), &op, ByName);
  if (at != ops.end() && (*at)->name == op.name) {
    std::fprintf(stderr, "dagrad: two ops are called '%s'\n", std::string(op.name).c_str());
    std::abort();
  }
  ops.insert(at, &op);
}

const std::vector<const OpDef*>& AllOps() { return Registered(); }

const OpDef* FindOp(absl::string_view name) {
  const std::vector<const OpDef*>& ops = Registered();
  auto at = std::lower_bound(ops.begin(), ops.end(), name,
                             [](const OpDef* op, absl::string_view n) { return op->name < n; });
  return at != ops.end() && (*at)->name == name ? *at : nullptr;
}

}  // namespace dagrad
