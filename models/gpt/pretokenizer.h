// models/gpt/pretokenizer.h
//
// GPT-2's pre-tokenization: the split of text into the words that byte-level
// BPE then merges within (models/gpt/tokenizer.h). It is the pattern of
// openai/gpt-2's src/encoder.py,
//
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//
// as Python's `regex` module matches it (the first alternative that matches
// at a position wins, each greedy), written as a scanner over code points:
//   - \p{L}, \p{N}: Unicode's general categories L* and N* (ICU's u_charType);
//   - \s: Unicode's White_Space property (ICU's u_isUWhiteSpace), which is
//     what `regex` matches: \t \n \v \f \r, space, U+0085, U+00A0, U+1680,
//     U+2000..U+200A, U+2028, U+2029, U+202F, U+205F, U+3000 (not U+001C..
//     U+001F, which Python's str.isspace also takes);
//   - the optional space of ` ?` is U+0020 only, and the contractions are
//     ASCII and case-sensitive ("'S" is not one), as in the pattern.
// encoder.py works on a Python str; here the text is bytes, read as UTF-8.
// A byte that starts no valid UTF-8 sequence is a code point of its own that
// is neither a letter, a number nor a space (it joins a run of punctuation),
// so every byte of any input lands in exactly one word.
//
//   std::vector<absl::string_view> words = Gpt2PreTokenize("I'm here  now");
//   // "I", "'m", " here", " ", " now"

#ifndef DAGRAD_MODELS_GPT_PRETOKENIZER_H_
#define DAGRAD_MODELS_GPT_PRETOKENIZER_H_

#include <vector>

#include "absl/strings/string_view.h"

namespace dagrad::models {

// Gpt2PreTokenize returns the words of `text`, in order, as views into it:
// concatenated they are `text`, and none is empty. Any bytes are accepted.
std::vector<absl::string_view> Gpt2PreTokenize(absl::string_view text);

}  // namespace dagrad::models

#endif  // DAGRAD_MODELS_GPT_PRETOKENIZER_H_
