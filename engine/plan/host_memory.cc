#include "engine/plan/host_memory.h"

#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "engine/checked_math.h"

namespace dagrad {
namespace {

std::optional<std::string> ReadSmallFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// ReadBytes reads a file holding one number of bytes; nullopt for "max",
// an unreadable file or anything else.
std::optional<int64_t> ReadBytes(const std::string& path) {
  std::optional<std::string> text = ReadSmallFile(path);
  int64_t v = 0;
  if (!text || !absl::SimpleAtoi(absl::StripAsciiWhitespace(*text), &v) || v < 0) {
    return std::nullopt;
  }
  return v;
}

// MemAvailable from /proc/meminfo ("MemAvailable:   20967084 kB").
std::optional<int64_t> MemAvailable(const std::string& meminfo) {
  std::optional<std::string> text = ReadSmallFile(meminfo);
  if (!text) return std::nullopt;
  for (absl::string_view line : absl::StrSplit(*text, '\n')) {
    if (!absl::ConsumePrefix(&line, "MemAvailable:")) continue;
    line = absl::StripAsciiWhitespace(line);
    int64_t kb = 0;
    if (!absl::ConsumeSuffix(&line, "kB") ||
        !absl::SimpleAtoi(absl::StripAsciiWhitespace(line), &kb) || kb < 0) {
      return std::nullopt;
    }
    return CheckedMul(kb, 1024);
  }
  return std::nullopt;
}

// Room returns limit - usage from the first directory in `dirs` holding
// the limit file; nullopt when there is none or no limit is set.
std::optional<int64_t> Room(const std::vector<std::string>& dirs, const char* limit_file,
                            const char* usage_file) {
  for (const std::string& dir : dirs) {
    std::optional<int64_t> limit = ReadBytes(absl::StrCat(dir, "/", limit_file));
    if (!limit) continue;
    // v1 writes "no limit" as a number near 2^63.
    if (*limit >= kMaxTensorBytes) return std::nullopt;
    const int64_t usage = ReadBytes(absl::StrCat(dir, "/", usage_file)).value_or(0);
    return *limit > usage ? *limit - usage : 0;
  }
  return std::nullopt;
}

void KeepSmaller(std::optional<MemoryLimit>& best, std::optional<int64_t> bytes,
                 std::string source) {
  if (bytes && (!best || *bytes < best->bytes)) best = MemoryLimit{*bytes, std::move(source)};
}

}  // namespace

std::optional<MemoryLimit> HostMemoryAvailable(const HostMemoryFiles& files) {
  std::optional<MemoryLimit> best;
  KeepSmaller(best, MemAvailable(files.meminfo), absl::StrCat("MemAvailable in ", files.meminfo));
  const std::string cgroups = ReadSmallFile(files.self_cgroup).value_or("");
  for (absl::string_view line : absl::StrSplit(cgroups, '\n', absl::SkipEmpty())) {
    const std::vector<std::string> f = absl::StrSplit(line, absl::MaxSplits(':', 2));
    if (f.size() != 3) continue;
    if (f[0] == "0" && f[1].empty()) {  // v2
      const std::string dir = absl::StrCat(files.cgroup_root, f[2] == "/" ? "" : f[2]);
      KeepSmaller(best, Room({dir, files.cgroup_root}, "memory.max", "memory.current"),
                  absl::StrCat("cgroup memory.max in ", dir));
    } else if (absl::StrContains(f[1], "memory")) {  // v1, maybe "memory,cpu"
      const std::string root = absl::StrCat(files.cgroup_root, "/memory");
      const std::string dir = absl::StrCat(root, f[2] == "/" ? "" : f[2]);
      KeepSmaller(best, Room({dir, root}, "memory.limit_in_bytes", "memory.usage_in_bytes"),
                  absl::StrCat("cgroup memory.limit_in_bytes in ", dir));
    }
  }
  return best;
}

}  // namespace dagrad
