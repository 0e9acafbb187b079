// engine/io/utf8.h
//
// A strict UTF-8 decoder for the writers that must escape text for another
// format (safetensors headers, DOT labels): it rejects overlong forms,
// surrogates, code points above U+10FFFF and truncated sequences, so that
// what it accepts is exactly what JSON parsers and Graphviz accept.
//
// It also makes untrusted text safe to show in an error message.
//
//   size_t pos = 0;
//   while (pos < s.size()) {
//     const int32_t c = NextCodePoint(s, pos);  // -1: s[pos] starts no valid sequence
//     if (c < 0) ++invalid_bytes;
//   }

#ifndef DAGRAD_ENGINE_IO_UTF8_H_
#define DAGRAD_ENGINE_IO_UTF8_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace dagrad {

// NextCodePoint decodes the code point starting at s[pos] and advances pos
// past it. For an invalid sequence it returns -1 and advances pos by one
// byte, so a caller can report or replace that byte and go on.
//   size_t pos = 0;
//   NextCodePoint("\xc3\xa9!", pos);   // 0xE9, pos == 2
inline int32_t NextCodePoint(absl::string_view s, size_t& pos) {
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(s[i]); };
  const uint8_t b0 = byte(pos);
  int len;
  int32_t c;
  int32_t min;
  if (b0 < 0x80) {
    ++pos;
    return b0;
  } else if ((b0 & 0xE0) == 0xC0) {
    len = 2, c = b0 & 0x1F, min = 0x80;
  } else if ((b0 & 0xF0) == 0xE0) {
    len = 3, c = b0 & 0x0F, min = 0x800;
  } else if ((b0 & 0xF8) == 0xF0) {
    len = 4, c = b0 & 0x07, min = 0x10000;
  } else {
    ++pos;
    return -1;
  }
  if (pos + len > s.size()) {
    ++pos;
    return -1;
  }
  for (int i = 1; i < len; ++i) {
    const uint8_t b = byte(pos + i);
    if ((b & 0xC0) != 0x80) {
      ++pos;
      return -1;
    }
    c = (c << 6) | (b & 0x3F);
  }
  if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) {
    ++pos;
    return -1;
  }
  pos += len;
  return c;
}

// IsValidUtf8 is true when all of `s` decodes.
//   IsValidUtf8("caf\xc3\xa9");   // true
//   IsValidUtf8("\xed\xa0\x80");  // false: an encoded surrogate
inline bool IsValidUtf8(absl::string_view s) {
  size_t pos = 0;
  while (pos < s.size()) {
    if (NextCodePoint(s, pos) < 0) return false;
  }
  return true;
}

// PrintableText returns `s` for an error message: valid UTF-8 stays as it
// is, control characters become \n, \t, \r or \xNN, bytes that are not
// UTF-8 become \xNN; with `quote`, also \ and ' are escaped and the result
// is wrapped in '...', so a hostile name cannot forge or break a message.
//   PrintableText("a\nb\xff", true);  // 'a\nb\xff' (backslashes literal)
inline std::string PrintableText(absl::string_view s, bool quote = false) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  if (quote) out += '\'';
  size_t pos = 0;
  while (pos < s.size()) {
    const size_t start = pos;
    const int32_t c = NextCodePoint(s, pos);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (quote && (c == '\\' || c == '\'')) {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7F || (c >= 0x80 && c < 0xA0)) {
      // c < 0 is an invalid byte; C1 controls take two bytes, shown as one.
      const uint8_t b = static_cast<uint8_t>(c < 0 ? s[start] : c);
      out += "\\x";
      out += kHex[b >> 4];
      out += kHex[b & 15];
    } else {
      out.append(s.data() + start, pos - start);
    }
  }
  if (quote) out += '\'';
  return out;
}

}  // namespace dagrad

#endif  // DAGRAD_ENGINE_IO_UTF8_H_
