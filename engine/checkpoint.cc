#include "engine/checkpoint.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/status_macros.h"
#include "engine/utf8.h"

namespace dagrad {
namespace {

// A message lists at most this many names of one kind; the count says the rest.
constexpr size_t kMaxListed = 10;

std::string Quote(absl::string_view s) { return PrintableText(s, /*quote=*/true); }

std::string TypeString(const Node& n) {
  return absl::StrCat(DTypeName(n.dtype), " ", n.shape.ToString());
}

std::string ListNames(std::vector<std::string> names) {
  std::sort(names.begin(), names.end());
  std::vector<std::string> shown;
  for (size_t i = 0; i < names.size() && i < kMaxListed; ++i) shown.push_back(Quote(names[i]));
  std::string out = absl::StrJoin(shown, ", ");
  if (names.size() > kMaxListed) absl::StrAppend(&out, " and ", names.size() - kMaxListed, " more");
  return out;
}

// Named pairs each variable with its checkpoint name, after checking that
// `variables` are distinct variables of the executor's graph with distinct
// names.
absl::StatusOr<std::vector<std::pair<std::string, Value>>> Named(
    const Executor& executor, absl::Span<const Value> variables) {
  std::vector<std::pair<std::string, Value>> out;
  absl::flat_hash_map<std::string, std::string> path_of;  // checkpoint name -> path
  for (size_t i = 0; i < variables.size(); ++i) {
    const Value& v = variables[i];
    if (!v.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "variables[", i, "] is not a node: ", v.is_null() ? "null Value" : v.status().message()));
    }
    if (v.graph() != &executor.graph()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "variables[", i, "] ", Quote(v.path()), " belongs to another graph than the executor's"));
    }
    if (!v.node().is_variable()) {
      return absl::InvalidArgumentError(
          absl::StrCat("variables[", i, "] ", Quote(v.path()), " is not a variable"));
    }
    std::string name = CheckpointName(v.node());
    auto [it, inserted] = path_of.emplace(name, v.path());
    if (!inserted) {
      return absl::InvalidArgumentError(
          it->second == v.path()
              ? absl::StrCat("variable ", Quote(v.path()), " is listed twice")
              : absl::StrCat("variables ", Quote(it->second), " and ", Quote(v.path()),
                             " both have the checkpoint name ", Quote(name)));
    }
    out.emplace_back(std::move(name), v);
  }
  return out;
}

}  // namespace

std::string CheckpointName(const Node& node) {
  std::string name = node.path();
  std::replace(name.begin(), name.end(), '/', '.');
  return name;
}

absl::StatusOr<SafetensorsFile> CollectVariables(Executor& executor,
                                                 absl::Span<const Value> variables) {
  DAGRAD_ASSIGN_OR_RETURN(auto named, Named(executor, variables));
  SafetensorsFile file;
  for (auto& [name, v] : named) {
    DAGRAD_ASSIGN_OR_RETURN(Tensor t, executor.Read(v));
    file.tensors.emplace_back(std::move(name), std::move(t));
  }
  return file;
}

absl::Status AssignVariables(Executor& executor, absl::Span<const Value> variables,
                             const SafetensorsFile& file, absl::string_view source,
                             const LoadOptions& options) {
  DAGRAD_ASSIGN_OR_RETURN(auto named, Named(executor, variables));
  absl::flat_hash_map<absl::string_view, const Tensor*> in_file;
  for (const auto& [name, t] : file.tensors) in_file.emplace(name, &t);

  std::vector<std::pair<Value, const Tensor*>> assignments;
  std::vector<std::string> missing, mismatched;
  absl::flat_hash_map<absl::string_view, bool> wanted;
  for (const auto& [name, v] : named) {
    wanted[name] = true;
    auto it = in_file.find(name);
    if (it == in_file.end()) {
      if (options.strict) missing.push_back(name);
      continue;
    }
    const Tensor& t = *it->second;
    const Node& node = v.node();
    if (t.dtype() != node.dtype || t.shape() != node.shape) {
      mismatched.push_back(absl::StrCat(PrintableText(name), ": checkpoint has ", t.TypeString(),
                                        ", model expects ", TypeString(node)));
      continue;
    }
    assignments.emplace_back(v, &t);
  }
  std::vector<std::string> unexpected;
  if (options.strict) {
    for (const auto& [name, t] : file.tensors) {
      if (!wanted.contains(name)) unexpected.push_back(name);
    }
  }

  if (!missing.empty() || !unexpected.empty() || !mismatched.empty()) {
    std::vector<std::string> problems;
    if (!missing.empty()) {
      problems.push_back(absl::StrCat(missing.size(), " missing (variables with no tensor): ",
                                      ListNames(missing)));
    }
    if (!unexpected.empty()) {
      problems.push_back(absl::StrCat(unexpected.size(),
                                      " unexpected (tensors with no variable): ",
                                      ListNames(unexpected)));
    }
    if (mismatched.size() > kMaxListed) {
      const size_t more = mismatched.size() - kMaxListed;
      mismatched.resize(kMaxListed);
      mismatched.push_back(absl::StrCat("and ", more, " more mismatches"));
    }
    for (std::string& m : mismatched) problems.push_back(std::move(m));
    return absl::InvalidArgumentError(absl::StrCat(
        "checkpoint ", source, " does not match the variables; nothing was loaded: ",
        absl::StrJoin(problems, "; ")));
  }
  for (const auto& [v, t] : assignments) {
    absl::Status s = executor.Assign(v, *t);
    if (!s.ok()) {
      // Everything was validated, so only the device can fail here.
      return absl::InternalError(absl::StrCat("checkpoint ", source, ": assigning ",
                                              Quote(v.path()), " failed after validation, "
                                              "variables may be partly loaded: ", s.message()));
    }
  }
  return absl::OkStatus();
}

absl::Status SaveVariables(Executor& executor, absl::Span<const Value> variables,
                           const std::map<std::string, std::string>& metadata,
                           const std::string& path) {
  DAGRAD_ASSIGN_OR_RETURN(SafetensorsFile file, CollectVariables(executor, variables));
  file.metadata = metadata;
  return WriteSafetensors(path, file);
}

absl::StatusOr<std::map<std::string, std::string>> LoadVariables(
    Executor& executor, absl::Span<const Value> variables, const std::string& path,
    const LoadOptions& options) {
  DAGRAD_ASSIGN_OR_RETURN(SafetensorsFile file, ReadSafetensors(path));
  DAGRAD_RETURN_IF_ERROR(AssignVariables(executor, variables, file, Quote(path), options));
  return std::move(file.metadata);
}

namespace {

// FirstNonFinite is the index of the first NaN or +-Inf of `t`, or -1.
template <typename T>
int64_t FirstNonFinite(const Tensor& t) {
  const T* p = t.data<T>();
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    if (!std::isfinite(p[i])) return i;
  }
  return -1;
}

}  // namespace

absl::Status RequireFinite(const SafetensorsFile& file) {
  for (const auto& [name, t] : file.tensors) {
    int64_t bad = -1;
    double value = 0;
    if (t.dtype() == DType::kFloat32) {
      bad = FirstNonFinite<float>(t);
      if (bad >= 0) value = t.data<float>()[bad];
    } else if (t.dtype() == DType::kFloat64) {
      bad = FirstNonFinite<double>(t);
      if (bad >= 0) value = t.data<double>()[bad];
    }
    if (bad >= 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          "tensor ", Quote(name), " holds ", value, " at element ", bad,
          "; a non-finite value is never saved"));
    }
  }
  return absl::OkStatus();
}

}  // namespace dagrad
