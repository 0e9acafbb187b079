#include "engine/io/checkpoint.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "engine/io/crc32c.h"
#include "engine/io/utf8.h"
#include "engine/status_macros.h"

namespace dagrad {
namespace {

// A message lists at most this many names of one kind; the count says the rest.
constexpr size_t kMaxListed = 10;

std::string ListNames(std::vector<std::string> names) {
  std::sort(names.begin(), names.end());
  std::vector<std::string> shown;
  for (size_t i = 0; i < names.size() && i < kMaxListed; ++i) shown.push_back(QuotedText(names[i]));
  std::string out = absl::StrJoin(shown, ", ");
  if (names.size() > kMaxListed) absl::StrAppend(&out, " and ", names.size() - kMaxListed, " more");
  return out;
}

// Named pairs each variable with its checkpoint name, after checking that
// `variables` are distinct variables of `graph` (`whose`, in messages) with
// distinct names.
absl::StatusOr<std::vector<std::pair<std::string, Value>>> Named(
    const Graph* graph, absl::string_view whose, absl::Span<const Value> variables) {
  std::vector<std::pair<std::string, Value>> out;
  absl::flat_hash_map<std::string, std::string> path_of;  // checkpoint name -> path
  for (size_t i = 0; i < variables.size(); ++i) {
    const Value& v = variables[i];
    if (!v.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "variables[", i, "] is not a node: ", v.is_null() ? "null Value" : v.status().message()));
    }
    if (v.graph() != graph) {
      return absl::InvalidArgumentError(absl::StrCat(
          "variables[", i, "] ", QuotedText(v.path()), " belongs to another graph than ", whose));
    }
    if (!v.node().is_variable()) {
      return absl::InvalidArgumentError(
          absl::StrCat("variables[", i, "] ", QuotedText(v.path()), " is not a variable"));
    }
    std::string name = CheckpointName(v.node());
    auto [it, inserted] = path_of.emplace(name, v.path());
    if (!inserted) {
      return absl::InvalidArgumentError(
          it->second == v.path()
              ? absl::StrCat("variable ", QuotedText(v.path()), " is listed twice")
              : absl::StrCat("variables ", QuotedText(it->second), " and ", QuotedText(v.path()),
                             " both have the checkpoint name ", QuotedText(name)));
    }
    out.emplace_back(std::move(name), v);
  }
  return out;
}

using NamedTensor = std::pair<std::string, Tensor>;

std::vector<const NamedTensor*> ByName(const SafetensorsFile& file) {
  std::vector<const NamedTensor*> sorted;
  for (const NamedTensor& entry : file.tensors) sorted.push_back(&entry);
  std::sort(sorted.begin(), sorted.end(),
            [](const NamedTensor* a, const NamedTensor* b) { return a->first < b->first; });
  return sorted;
}

// AppendField appends `s` with its length first, so that no two lists of
// fields give the same bytes.
void AppendField(absl::string_view s, std::string& out) {
  const uint64_t n = s.size();
  out.append(reinterpret_cast<const char*>(&n), sizeof(n));
  out.append(s.data(), s.size());
}

// HeaderChecksum covers what the header says besides the offsets (which
// the data checksums and the reader's tiling check cover): tensor names,
// dtypes and shapes, and the metadata other than the checksums.
uint32_t HeaderChecksum(const std::vector<const NamedTensor*>& sorted,
                        const std::map<std::string, std::string>& metadata) {
  std::string bytes;
  AppendField(absl::StrCat(sorted.size()), bytes);
  for (const NamedTensor* entry : sorted) {
    AppendField(entry->first, bytes);
    AppendField(SafetensorsDTypeName(entry->second.dtype()), bytes);
    AppendField(absl::StrJoin(entry->second.shape().dims(), ","), bytes);
  }
  for (const auto& [key, value] : metadata) {
    if (key == kChecksumKey) continue;
    AppendField(key, bytes);
    AppendField(value, bytes);
  }
  return Crc32c(bytes);
}

uint32_t DataChecksum(const Tensor& t) {
  return Crc32c(absl::string_view(static_cast<const char*>(t.raw_data()), t.nbytes()));
}

std::string Hex(uint32_t crc) { return absl::StrFormat("%08x", crc); }

// ParseHex reads exactly 8 lower-case hex digits, as Hex writes them (an
// upper-case digit is a damaged byte, if a harmless one).
bool ParseHex(absl::string_view text, uint32_t* crc) {
  const auto lower_hex = [](char c) { return absl::ascii_isdigit(c) || (c >= 'a' && c <= 'f'); };
  return text.size() == 8 && std::all_of(text.begin(), text.end(), lower_hex) &&
         absl::SimpleHexAtoi(text, crc);
}

// IsChecksumList says whether `value` has the form of the checksum list of
// a file of `tensors` tensors.
bool IsChecksumList(absl::string_view value, size_t tensors) {
  const std::vector<absl::string_view> fields = absl::StrSplit(value, ' ');
  uint32_t crc = 0;
  return fields.size() == tensors + 1 &&
         std::all_of(fields.begin(), fields.end(),
                     [&](absl::string_view f) { return ParseHex(f, &crc); });
}

// OwnWithoutChecksums returns, for a file without kChecksumKey, why it is
// one of dagrad's, which have checksums (see the header), or "" for a file
// of another writer.
std::string OwnWithoutChecksums(const SafetensorsFile& file,
                                const ReadCheckpointOptions& options) {
  if (options.require_checksums) return "the reader takes only dagrad's own checkpoints";
  for (const auto& [key, value] : file.metadata) {
    if (absl::StartsWith(key, "dagrad.")) {
      return absl::StrCat("its metadata key ", QuotedText(key), " is dagrad's");
    }
    if (IsChecksumList(value, file.tensors.size())) {
      return absl::StrCat("its metadata key ", QuotedText(key), " holds dagrad's checksum list");
    }
  }
  return "";
}

// VerifyChecksums checks `file` against its kChecksumKey and removes the
// key; a file without it passes when it is not dagrad's own. `source`
// names the file in messages.
absl::Status VerifyChecksums(SafetensorsFile& file, absl::string_view source,
                             const ReadCheckpointOptions& options) {
  const auto damaged = [&](absl::string_view what) {
    return absl::DataLossError(absl::StrCat("damaged checkpoint ", source, ": ", what));
  };
  auto it = file.metadata.find(kChecksumKey);
  if (it == file.metadata.end()) {
    const std::string own = OwnWithoutChecksums(file, options);
    if (own.empty()) return absl::OkStatus();
    return damaged(absl::StrCat("the checksums '", kChecksumKey,
                                "' are missing from a file of dagrad's (", own, ")"));
  }
  const std::vector<absl::string_view> fields = absl::StrSplit(it->second, ' ');
  const std::vector<const NamedTensor*> sorted = ByName(file);
  std::vector<uint32_t> stored(fields.size());
  for (size_t i = 0; i < fields.size(); ++i) {
    if (!ParseHex(fields[i], &stored[i])) {
      return damaged(absl::StrCat("the checksum list '", kChecksumKey, "' holds ",
                                  QuotedText(fields[i]),
                                  ", not 8 hex digits"));
    }
  }
  if (stored.size() != sorted.size() + 1) {
    return damaged(absl::StrCat("the checksum list '", kChecksumKey, "' has ", stored.size(),
                                " entries for ", sorted.size(), " tensors and the header"));
  }
  if (const uint32_t crc = HeaderChecksum(sorted, file.metadata); crc != stored[0]) {
    return damaged(absl::StrCat(
        "the header (tensor names, dtypes, shapes or metadata) fails its checksum: stored crc32c ",
        Hex(stored[0]), ", computed ", Hex(crc)));
  }
  std::vector<std::string> bad;
  for (size_t i = 0; i < sorted.size(); ++i) {
    if (const uint32_t crc = DataChecksum(sorted[i]->second); crc != stored[i + 1]) {
      bad.push_back(absl::StrCat("tensor ", QuotedText(sorted[i]->first),
                                 ": data fails its checksum (stored crc32c ", Hex(stored[i + 1]),
                                 ", computed ", Hex(crc), ")"));
    }
  }
  if (!bad.empty()) {
    const size_t more = bad.size() - 1;
    return damaged(more == 0 ? bad[0] : absl::StrCat(bad[0], " and ", more, " more tensors fail"));
  }
  file.metadata.erase(it);
  return absl::OkStatus();
}

// Verified returns the parsed `file` once its checksums are verified; a
// file that did not parse is damaged (the parser's messages begin with
// `source`; a file that could not be read, a device, is not damaged).
absl::StatusOr<SafetensorsFile> Verified(absl::StatusOr<SafetensorsFile> file,
                                         absl::string_view source,
                                         const ReadCheckpointOptions& options) {
  if (!file.ok()) {
    if (absl::IsInvalidArgument(file.status()) &&
        absl::StartsWith(file.status().message(), source)) {
      return absl::DataLossError(absl::StrCat("damaged checkpoint ", file.status().message()));
    }
    return file.status();
  }
  DAGRAD_RETURN_IF_ERROR(VerifyChecksums(*file, source, options));
  return file;
}

// MismatchError lists what keeps a checkpoint from matching the variables:
// the variables it lacks, the tensors no variable takes (both only when
// strict), and the tensors of the wrong type.
absl::Status MismatchError(absl::string_view source, const LoadOptions& options,
                           const std::vector<std::string>& missing,
                           const std::vector<std::string>& unexpected,
                           std::vector<std::string> mismatched) {
  const bool described = !options.from_metadata.empty();
  std::vector<std::string> problems;
  if (!missing.empty()) {
    problems.push_back(absl::StrCat(missing.size(), " missing (variables with no tensor): ",
                                    ListNames(missing)));
  }
  if (!unexpected.empty()) {
    problems.push_back(absl::StrCat(
        unexpected.size(), " unexpected (tensors ",
        described ? "the metadata does not account for" : "with no variable", "): ",
        ListNames(unexpected)));
  }
  if (mismatched.size() > kMaxListed) {
    const size_t more = mismatched.size() - kMaxListed;
    mismatched.resize(kMaxListed);
    mismatched.push_back(absl::StrCat("and ", more, " more mismatches"));
  }
  for (std::string& m : mismatched) problems.push_back(std::move(m));
  return absl::InvalidArgumentError(absl::StrCat(
      "checkpoint ", source, " does not match ",
      described ? absl::StrCat("the model its metadata describes (", options.from_metadata, ")")
                : "the variables",
      "; nothing was loaded: ", absl::StrJoin(problems, "; ")));
}

using Assignments = std::vector<std::pair<Value, const Tensor*>>;

// Loads says whether a tensor of dtype `stored` loads into a variable of
// dtype `variable`: its own, or a 16-bit float into float32 or float64,
// which hold each of its values exactly.
bool Loads(DType stored, DType variable) {
  return stored == variable || (IsReducedFloat(stored) && IsFloating(variable));
}

// Match pairs each of `named` with its tensor of `file`, or lists every
// problem (MismatchError).
absl::StatusOr<Assignments> Match(const std::vector<std::pair<std::string, Value>>& named,
                                  const SafetensorsFile& file, absl::string_view source,
                                  const LoadOptions& options) {
  absl::flat_hash_map<absl::string_view, const Tensor*> in_file;
  for (const auto& [name, t] : file.tensors) in_file.emplace(name, &t);
  Assignments assignments;
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
    if (!Loads(t.dtype(), node.dtype) || t.shape() != node.shape) {
      mismatched.push_back(absl::StrCat(PrintableText(name), ": checkpoint has ", t.TypeString(),
                                        ", model expects ", node.TypeString()));
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
    return MismatchError(source, options, missing, unexpected, std::move(mismatched));
  }
  return assignments;
}

}  // namespace

std::string CheckpointName(const Node& node) {
  std::string name = node.path();
  std::replace(name.begin(), name.end(), '/', '.');
  return name;
}

absl::StatusOr<SafetensorsFile> CollectVariables(Executor& executor,
                                                 absl::Span<const Value> variables) {
  DAGRAD_ASSIGN_OR_RETURN(auto named, Named(&executor.graph(), "the executor's", variables));
  // One copy from the device for all of them (Executor::ReadAll).
  DAGRAD_ASSIGN_OR_RETURN(std::vector<Tensor> values, executor.ReadAll(variables));
  SafetensorsFile file;
  for (size_t i = 0; i < named.size(); ++i) {
    file.tensors.emplace_back(std::move(named[i].first), std::move(values[i]));
  }
  return file;
}

absl::Status MatchVariables(absl::Span<const Value> variables, const SafetensorsFile& file,
                            absl::string_view source, const LoadOptions& options) {
  const Graph* graph = variables.empty() || !variables[0].ok() ? nullptr : variables[0].graph();
  DAGRAD_ASSIGN_OR_RETURN(auto named, Named(graph, "variables[0]'s", variables));
  return Match(named, file, source, options).status();
}

absl::Status AssignVariables(Executor& executor, absl::Span<const Value> variables,
                             const SafetensorsFile& file, absl::string_view source,
                             const LoadOptions& options) {
  DAGRAD_ASSIGN_OR_RETURN(auto named, Named(&executor.graph(), "the executor's", variables));
  DAGRAD_ASSIGN_OR_RETURN(const Assignments assignments, Match(named, file, source, options));
  // Every value in its variable's dtype before any is assigned.
  std::vector<Tensor> values;
  for (const auto& [v, t] : assignments) {
    absl::StatusOr<Tensor> value = t->dtype() == v.dtype() ? *t : ConvertFloats(*t, v.dtype());
    if (!value.ok()) {
      return absl::Status(value.status().code(),
                          absl::StrCat("checkpoint ", source, ": ", QuotedText(v.path()), ": ",
                                       value.status().message(), "; nothing was loaded"));
    }
    values.push_back(*std::move(value));
  }
  for (size_t i = 0; i < assignments.size(); ++i) {
    const Value& v = assignments[i].first;
    absl::Status s = executor.Assign(v, values[i]);
    if (!s.ok()) {
      // Everything was validated, so only the device can fail here.
      return absl::InternalError(absl::StrCat("checkpoint ", source, ": assigning ",
                                              QuotedText(v.path()), " failed after validation, "
                                              "variables may be partly loaded: ", s.message()));
    }
  }
  return absl::OkStatus();
}

absl::Status WriteCheckpoint(const std::string& path, SafetensorsFile file,
                             const AtomicWriteOptions& options) {
  if (file.metadata.contains(kChecksumKey)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "WriteCheckpoint '", path, "': the metadata key '", kChecksumKey, "' is dagrad's own"));
  }
  const std::vector<const NamedTensor*> sorted = ByName(file);
  std::string checksums = Hex(HeaderChecksum(sorted, file.metadata));
  for (const NamedTensor* entry : sorted) {
    absl::StrAppend(&checksums, " ", Hex(DataChecksum(entry->second)));
  }
  file.metadata[kChecksumKey] = std::move(checksums);
  DAGRAD_ASSIGN_OR_RETURN(std::string bytes, SerializeSafetensors(file));
  return WriteFileAtomically(path, bytes, options);
}

absl::StatusOr<SafetensorsFile> ReadCheckpoint(const std::string& path,
                                               const ReadCheckpointOptions& options) {
  return Verified(ReadSafetensors(path), absl::StrCat("'", path, "'"), options);
}

absl::StatusOr<SafetensorsFile> ParseCheckpoint(absl::string_view bytes,
                                                const ReadCheckpointOptions& options) {
  return Verified(ParseSafetensors(bytes), "safetensors data", options);
}

absl::Status SaveVariables(Executor& executor, absl::Span<const Value> variables,
                           const std::map<std::string, std::string>& metadata,
                           const std::string& path, const AtomicWriteOptions& options) {
  DAGRAD_ASSIGN_OR_RETURN(SafetensorsFile file, CollectVariables(executor, variables));
  file.metadata = metadata;
  return WriteCheckpoint(path, std::move(file), options);
}

absl::StatusOr<std::map<std::string, std::string>> LoadVariables(
    Executor& executor, absl::Span<const Value> variables, const std::string& path,
    const LoadOptions& options) {
  DAGRAD_ASSIGN_OR_RETURN(SafetensorsFile file, ReadCheckpoint(path));
  DAGRAD_RETURN_IF_ERROR(AssignVariables(executor, variables, file, QuotedText(path), options));
  return std::move(file.metadata);
}

absl::Status RequireFinite(const SafetensorsFile& file) {
  for (const auto& [name, t] : file.tensors) {
    const int64_t bad = FirstNonFinite(t.raw_data(), t.dtype(), t.num_elements());
    if (bad >= 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          "tensor ", QuotedText(name), " holds ", FloatAt(t.raw_data(), t.dtype(), bad),
          " at element ", bad));
    }
  }
  return absl::OkStatus();
}

std::string MetadataNumber(double x) {
  std::string text = absl::StrCat(x);
  double back = 0;
  for (int digits = 7; digits <= 17; ++digits) {
    if (absl::SimpleAtod(text, &back) && (back == x || std::isnan(x))) break;
    text = absl::StrFormat("%.*g", digits, x);
  }
  return text;
}

}  // namespace dagrad
