#include "models/gpt/pretokenizer.h"

#include <unicode/uchar.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/io/utf8.h"

namespace dagrad::models {
namespace {

// The classes the pattern tells apart. kOther is [^\s\p{L}\p{N}]: also a
// byte that is not UTF-8.
enum class CharClass : uint8_t { kLetter, kNumber, kSpace, kOther };

// One code point of the text: where its bytes start, its value (-1 for an
// invalid byte) and its class.
struct Unit {
  size_t start;
  int32_t code;
  CharClass cls;
};

CharClass ClassOfAscii(int32_t c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return CharClass::kLetter;
  if (c >= '0' && c <= '9') return CharClass::kNumber;
  if (c == ' ' || (c >= '\t' && c <= '\r')) return CharClass::kSpace;
  return CharClass::kOther;
}

CharClass ClassOf(int32_t c) {
  if (c < 0) return CharClass::kOther;
  if (c < 0x80) return ClassOfAscii(c);
  if (u_isUWhiteSpace(c)) return CharClass::kSpace;
  const uint32_t mask = U_GET_GC_MASK(c);
  if (mask & U_GC_L_MASK) return CharClass::kLetter;
  if (mask & U_GC_N_MASK) return CharClass::kNumber;
  return CharClass::kOther;
}

// Units decodes `text`, with a last unit that starts at text.size() so
// that unit i's bytes are [units[i].start, units[i + 1].start).
std::vector<Unit> Units(absl::string_view text) {
  std::vector<Unit> units;
  units.reserve(text.size() + 1);
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t start = pos;
    const int32_t c = NextCodePoint(text, pos);
    units.push_back({start, c, ClassOf(c)});
  }
  units.push_back({text.size(), -1, CharClass::kOther});
  return units;
}

// ContractionEnd returns the end of 's|'t|'re|'ve|'m|'ll|'d at unit i, or
// i when there is none.
size_t ContractionEnd(const std::vector<Unit>& u, size_t i, size_t n) {
  if (u[i].code != '\'' || i + 1 >= n) return i;
  const int32_t a = u[i + 1].code;
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return i + 2;
  if (i + 2 >= n) return i;
  const int32_t b = u[i + 2].code;
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return i + 3;
  return i;
}

// RunEnd returns the end of the run of units of `cls` from i.
size_t RunEnd(const std::vector<Unit>& u, size_t i, size_t n, CharClass cls) {
  while (i < n && u[i].cls == cls) ++i;
  return i;
}

// MatchEnd returns the end of the word that starts at unit i (< n): the
// pattern's alternatives in its order.
size_t MatchEnd(const std::vector<Unit>& u, size_t i, size_t n) {
  if (const size_t end = ContractionEnd(u, i, n); end > i) return end;
  // ` ?\p{L}+`, ` ?\p{N}+`, ` ?[^\s\p{L}\p{N}]+`: the space taken first.
  const size_t j = (u[i].code == ' ' && i + 1 < n) ? i + 1 : i;
  if (u[j].cls != CharClass::kSpace) return RunEnd(u, j, n, u[j].cls);
  // `\s+(?!\S)`: the run of spaces, less its last when a non-space follows
  // (that one goes with the word after it); `\s+` when the run is one.
  const size_t end = RunEnd(u, i, n, CharClass::kSpace);
  return (end < n && end - i >= 2) ? end - 1 : end;
}

}  // namespace

std::vector<absl::string_view> Gpt2PreTokenize(absl::string_view text) {
  const std::vector<Unit> units = Units(text);
  const size_t n = units.size() - 1;
  std::vector<absl::string_view> words;
  size_t i = 0;
  while (i < n) {
    const size_t end = MatchEnd(units, i, n);
    words.push_back(text.substr(units[i].start, units[end].start - units[i].start));
    i = end;
  }
  return words;
}

}  // namespace dagrad::models
