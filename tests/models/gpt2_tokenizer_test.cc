// GPT-2's tokenizer (models/gpt/tokenizer.h, pretokenizer.h) against the
// original encoder: the fixture's cases (tests/data/hf_gpt2_tiny/, ids from
// openai/gpt-2's src/encoder.py), the cases of tools/goldens/gpt2_tokenizer.py
// (encoder.py's algorithm under Python's `regex`: Unicode spaces, other
// scripts, invalid UTF-8), hand-worked splits and merges, and the round
// trip of random bytes.

#include <cstdint>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/strings/escaping.h"
#include "engine/io/file_io.h"
#include "models/gpt/pretokenizer.h"
#include "models/gpt/tokenizer.h"
#include "tests/support/cli_runner.h"
#include "tests/support/gpt_fixtures.h"
#include "tests/support/test_util.h"

namespace dagrad::models {
namespace {

using ::dagrad::testing::FreshDir;
using ::dagrad::testing::HfGpt2Tiny;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

nlohmann::json ReadJson(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

Gpt2Tokenizer TinyTokenizer() {
  absl::StatusOr<Gpt2Tokenizer> t = Gpt2Tokenizer::LoadDirectory(HfGpt2Tiny());
  EXPECT_TRUE(t.ok()) << t.status();
  return *std::move(t);
}

TEST(Gpt2Tokenizer, EveryFixtureCaseEncodesAndDecodesExactly) {
  const Gpt2Tokenizer t = TinyTokenizer();
  const nlohmann::json cases = ReadJson(HfGpt2Tiny() + "/tokenizer_cases.json")["cases"];
  ASSERT_EQ(cases.size(), 16u);
  for (const auto& c : cases) {
    const std::string text = c["text"];
    const std::vector<int64_t> want = c["ids"];
    EXPECT_EQ(t.EncodeOrdinary(text), want) << text;
    EXPECT_EQ(t.Encode(text), want) << text;
    ASSERT_OK_AND_ASSIGN(const std::string back, t.Decode(want));
    EXPECT_EQ(back, text);
  }
}

TEST(Gpt2Tokenizer, EveryGeneratedCaseEncodesAndDecodesExactly) {
  const Gpt2Tokenizer t = TinyTokenizer();
  const nlohmann::json cases = ReadJson(HfGpt2Tiny() + "/tokenizer_extra_cases.json")["cases"];
  ASSERT_EQ(cases.size(), 17u);
  for (const auto& c : cases) {
    const std::string bytes = absl::HexStringToBytes(c["hex"].get<std::string>());
    const std::vector<int64_t> want = c["ids"];
    EXPECT_EQ(t.EncodeOrdinary(bytes), want) << c["hex"];
    ASSERT_OK_AND_ASSIGN(const std::string back, t.Decode(want));
    EXPECT_EQ(back, bytes);
  }
}

// Bytes of three kinds: any byte, mostly ASCII letters and spaces, and
// pieces of multi-byte UTF-8 (lead and continuation bytes, apostrophes).
std::string RandomBytes(std::mt19937& rng) {
  static const std::string kPieces[] = {"a", "Z", " ", "  ", "\n", "'", "'s", "7", "\xc3",
                                        "\xa9", "\xe2\x80", "\x99", "\xf0\x9f\x99\x82",
                                        "\xe3\x80\x80", "\xc2\xa0", "\xff", "<|endoftext|>"};
  std::string s;
  const int kind = static_cast<int>(rng() % 3);
  const int n = static_cast<int>(rng() % 200);
  for (int i = 0; i < n; ++i) {
    if (kind == 0) s += static_cast<char>(rng() & 0xFF);
    if (kind == 1) s += " aeiouxyzTH"[rng() % 11];
    if (kind == 2) s += kPieces[rng() % std::size(kPieces)];
  }
  return s;
}

TEST(Gpt2Tokenizer, RandomBytesComeBackExactly) {
  const Gpt2Tokenizer t = TinyTokenizer();
  for (uint32_t seed = 0; seed < 500; ++seed) {
    std::mt19937 rng(seed);
    const std::string bytes = RandomBytes(rng);
    std::string joined;
    for (const absl::string_view w : Gpt2PreTokenize(bytes)) {
      ASSERT_FALSE(w.empty()) << "seed " << seed;
      joined.append(w.data(), w.size());
    }
    EXPECT_EQ(joined, bytes) << "seed " << seed;
    for (const auto& ids : {t.Encode(bytes), t.EncodeOrdinary(bytes)}) {
      ASSERT_OK_AND_ASSIGN(const std::string back, t.Decode(ids));
      ASSERT_EQ(back, bytes) << "seed " << seed;
    }
  }
}

std::vector<std::string> Words(absl::string_view text) {
  std::vector<std::string> words;
  for (const absl::string_view w : Gpt2PreTokenize(text)) words.emplace_back(w);
  return words;
}

// Splits worked by hand from the pattern, alternative by alternative.
TEST(Gpt2PreTokenize, FollowsThePatternsAlternativesInOrder) {
  std::vector<absl::string_view> words = Gpt2PreTokenize("I'm here  now");
  // "I", "'m", " here", " ", " now"
  EXPECT_THAT(words, ElementsAre("I", "'m", " here", " ", " now"));
  EXPECT_THAT(Words("it'll 'S x''s"), ElementsAre("it", "'ll", " '", "S", " x", "''", "s"));
  EXPECT_THAT(Words("a1b22 3.5"), ElementsAre("a", "1", "b", "22", " 3", ".", "5"));
  // \s+(?!\S) leaves the last space to the word after; a single space or
  // tab before a word stands alone only when it is not U+0020.
  EXPECT_THAT(Words("a   b\tc \n"), ElementsAre("a", "  ", " b", "\t", "c", " \n"));
  // U+00A0 is \s but not the ` ?` of a word; U+3000 likewise.
  EXPECT_THAT(Words("a \xc2\xa0" "b\xe3\x80\x80"),
              ElementsAre("a", " ", "\xc2\xa0", "b", "\xe3\x80\x80"));
  // Letters and numbers of other scripts; a combining mark is neither.
  EXPECT_THAT(Words("\xd9\xa3x \xe2\x85\xab" "e\xcc\x81"),
              ElementsAre("\xd9\xa3", "x", " \xe2\x85\xab", "e", "\xcc\x81"));
}

TEST(Gpt2PreTokenize, BytesThatAreNotUtf8ArePunctuation) {
  EXPECT_THAT(Words("ab\xff\xfe" "cd"), ElementsAre("ab", "\xff\xfe", "cd"));
  EXPECT_THAT(Words("a \xff" "b"), ElementsAre("a", " \xff", "b"));
  // A truncated sequence is two bytes that start no code point; a valid
  // one after them is read again.
  EXPECT_THAT(Words("!\xe2\x82\xc3\xa9"), ElementsAre("!\xe2\x82", "\xc3\xa9"));
  EXPECT_THAT(Words("x\xed\xa0\x80's"), ElementsAre("x", "\xed\xa0\x80'", "s"));
}

TEST(Gpt2Tokenizer, EndOfTextIsTheSpecialTokenInEncodeOnly) {
  const Gpt2Tokenizer t = TinyTokenizer();
  // vocab.json: "<|endoftext|>": 0, "a": 65, "b": 66.
  EXPECT_EQ(t.end_of_text(), 0);
  EXPECT_EQ(t.vocab_size(), 512);
  EXPECT_THAT(t.Encode("a<|endoftext|>b"), ElementsAre(65, 0, 66));
  EXPECT_THAT(t.Encode("<|endoftext|><|endoftext|>"), ElementsAre(0, 0));
  EXPECT_THAT(t.Encode("<|endoftext|"), ::testing::Not(::testing::Contains(0)));
  EXPECT_THAT(t.EncodeOrdinary("<|endoftext|>"), ::testing::Not(::testing::Contains(0)));
  ASSERT_OK_AND_ASSIGN(const std::string text, t.Decode({65, 0, 66}));
  EXPECT_EQ(text, "a<|endoftext|>b");
}

TEST(Gpt2Tokenizer, DecodeNamesAnIdOutsideTheVocabulary) {
  const Gpt2Tokenizer t = TinyTokenizer();
  EXPECT_STATUS(t.Decode({65, 512}).status(), absl::StatusCode::kInvalidArgument,
                "token 1 is 512, not an id of the vocabulary (0 to 511)");
  EXPECT_STATUS(t.Decode({-1}).status(), absl::StatusCode::kInvalidArgument, "token 0 is -1");
}

// A tokenizer of the fixture's special token and 256 byte symbols (ids
// 0..256) and `extra` tokens after them, with `merges`.
absl::StatusOr<Gpt2Tokenizer> Small(const std::vector<std::string>& extra,
                                    const std::string& merges, const std::string& name) {
  nlohmann::json vocab = nlohmann::json::object();
  const nlohmann::json fixture = ReadJson(HfGpt2Tiny() + "/vocab.json");
  for (const auto& entry : fixture.items()) {
    if (entry.value().get<int>() <= 256) vocab[entry.key()] = entry.value();
  }
  for (size_t i = 0; i < extra.size(); ++i) vocab[extra[i]] = 257 + i;
  const std::string dir = FreshDir(name);
  EXPECT_TRUE(WriteFileAtomically(dir + "/vocab.json", vocab.dump()).ok());
  EXPECT_TRUE(WriteFileAtomically(dir + "/merges.txt", merges).ok());
  return Gpt2Tokenizer::LoadDirectory(dir);
}

// encoder.py merges every occurrence of the best pair before it looks
// again, even when a merge makes a pair of lower rank: with merges
// "ab a" (rank 0) and "a b" (rank 1), "abab" is [ab][ab], not [aba][b].
TEST(Gpt2Tokenizer, MergesEveryOccurrenceOfTheBestPairBeforeLookingAgain) {
  ASSERT_OK_AND_ASSIGN(const Gpt2Tokenizer t,
                       Small({"ab", "aba"}, "#version: 0.2\nab a\na b\n", "pass"));
  EXPECT_THAT(t.EncodeOrdinary("abab"), ElementsAre(257, 257));
  EXPECT_THAT(t.EncodeOrdinary("aba"), ElementsAre(258));
  // "aaa" with "a a": left to right, [aa][a].
  ASSERT_OK_AND_ASSIGN(const Gpt2Tokenizer u, Small({"aa"}, "a a", "overlap"));
  EXPECT_THAT(u.EncodeOrdinary("aaa"), ElementsAre(257, 65));
  EXPECT_THAT(u.EncodeOrdinary("aaaa"), ElementsAre(257, 257));
}

TEST(Gpt2Tokenizer, AMegabyteWordEncodesAndComesBack) {
  const Gpt2Tokenizer t = TinyTokenizer();
  std::string word;
  for (int i = 0; i < (1 << 20) / 4; ++i) word += "inth";
  const std::vector<int64_t> ids = t.EncodeOrdinary(word);
  EXPECT_LT(ids.size(), word.size());
  ASSERT_OK_AND_ASSIGN(const std::string back, t.Decode(ids));
  EXPECT_EQ(back, word);
}

}  // namespace
}  // namespace dagrad::models
