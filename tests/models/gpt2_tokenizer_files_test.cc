// Broken vocab.json and merges.txt files (models/gpt/tokenizer_files.h):
// each is refused naming the file and the line or token at fault; the byte
// symbols worked by hand from encoder.py's bytes_to_unicode.

#include <string>

#include "absl/strings/str_replace.h"
#include "engine/io/file_io.h"
#include "models/gpt/tokenizer.h"
#include "models/gpt/tokenizer_files.h"
#include "tests/support/cli_runner.h"
#include "tests/support/gpt_fixtures.h"
#include "tests/support/test_util.h"

namespace dagrad::models {
namespace {

using ::dagrad::testing::FreshDir;
using ::dagrad::testing::HfGpt2Tiny;

std::string FixtureText(const std::string& name) {
  absl::StatusOr<std::string> text = ReadFile(HfGpt2Tiny() + "/" + name);
  EXPECT_TRUE(text.ok()) << text.status();
  return *text;
}

// LoadWith writes the two files (the fixture's where one is empty) and
// loads them.
absl::StatusOr<Gpt2Tokenizer> LoadWith(std::string vocab, std::string merges) {
  static int count = 0;
  const std::string dir = FreshDir("tok" + std::to_string(count++));
  if (vocab.empty()) vocab = FixtureText("vocab.json");
  if (merges.empty()) merges = FixtureText("merges.txt");
  EXPECT_TRUE(WriteFileAtomically(dir + "/vocab.json", vocab).ok());
  EXPECT_TRUE(WriteFileAtomically(dir + "/merges.txt", merges).ok());
  return Gpt2Tokenizer::LoadDirectory(dir);
}

// VocabWith is the fixture's vocab.json with `from` replaced by `to`.
std::string VocabWith(const std::string& from, const std::string& to) {
  const std::string vocab = FixtureText("vocab.json");
  EXPECT_NE(vocab.find(from), std::string::npos) << from;
  return absl::StrReplaceAll(vocab, {{from, to}});
}

void ExpectRefused(const absl::StatusOr<Gpt2Tokenizer>& t, const std::string& file,
                   const std::string& what) {
  ASSERT_FALSE(t.ok()) << what;
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument) << t.status();
  EXPECT_THAT(std::string(t.status().message()), ::testing::HasSubstr(file)) << t.status();
  EXPECT_THAT(std::string(t.status().message()), ::testing::HasSubstr(what)) << t.status();
}

TEST(Gpt2TokenizerFiles, ByteSymbolsAreEncoderPysBytesToUnicode) {
  EXPECT_EQ(Gpt2ByteSymbol('!'), '!');
  EXPECT_EQ(Gpt2ByteSymbol(0xAD), 0x100 + 33 + 34);  // after 0..32 and 127..160
  EXPECT_EQ(Gpt2ByteSymbol(0), 0x100);
  EXPECT_EQ(Gpt2ByteSymbol('\n'), 0x10A);
  EXPECT_EQ(Gpt2ByteSymbol(' '), 0x120);
  EXPECT_EQ(Gpt2ByteSymbol(0x7F), 0x121);
  EXPECT_EQ(Gpt2ByteSymbol(0xA0), 0x142);
  EXPECT_EQ(Gpt2ByteSymbol(0xFF), 0xFF);
}

TEST(Gpt2TokenizerFiles, BrokenVocabularyIsRefusedNamingWhere) {
  ExpectRefused(LoadWith("{\"a\": 0,\n \"b\": 1,\n  \"c\" 2}", ""), "vocab.json",
                "not JSON: parse error at line 3, column 7");
  ExpectRefused(LoadWith("[1, 2]", ""), "vocab.json", "is an array, not an object");
  ExpectRefused(LoadWith("7", ""), "vocab.json", "is an integer, not an object");
  ExpectRefused(LoadWith(VocabWith("\"!\":1,", "\"!\":\"1\","), ""), "vocab.json",
                "the id of token '!' is a string, not an integer");
  ExpectRefused(LoadWith(VocabWith("\"!\":1,", "\"!\":{\"x\":1},"), ""), "vocab.json",
                "the id of token '!' is an object");
  ExpectRefused(LoadWith(VocabWith("\"!\":1,", "\"!\":1.5,"), ""), "vocab.json",
                "the id of token '!' is a fraction");
  ExpectRefused(LoadWith(VocabWith("\"!\":1,", "\"!\":2,"), ""), "vocab.json",
                "the id 2 is given twice");
  ExpectRefused(LoadWith(VocabWith("\"!\":1,", "\"!\":512,"), ""), "vocab.json",
                "the id of token '!' is 512: the 512 ids must be 0 to 511, and no token has id 1");
  // An entry removed: the largest id is refused, and the gap named.
  ExpectRefused(LoadWith(VocabWith("\"!\":1,", ""), ""), "vocab.json",
                "the 511 ids must be 0 to 510, and no token has id 1");
  ExpectRefused(LoadWith(VocabWith("\"!\":1,", "\"!\":-1,"), ""), "vocab.json",
                "the id of token '!' is -1");
  ExpectRefused(LoadWith("{\"a\": 0, \"a\": 1}", ""), "vocab.json",
                "the token 'a' is given twice");
  ExpectRefused(LoadWith(VocabWith("\"!\":1,", "\"\\u20ac\":1,"), ""), "vocab.json",
                "has the character U+20AC, which stands for no byte");
  ExpectRefused(LoadWith(VocabWith("\"!\":1,", "\"!!!!!!!\":1,"), ""), "vocab.json",
                "byte 0x21 has no token");
  ExpectRefused(LoadWith("{\"\xff\": 0}", ""), "vocab.json", "not JSON");
}

TEST(Gpt2TokenizerFiles, BrokenMergesAreRefusedNamingTheLine) {
  const std::string merges = FixtureText("merges.txt");
  ExpectRefused(LoadWith("", merges + "a b c\n"), "merges.txt line 257",
                "'a b c' is not two symbols separated by one space");
  ExpectRefused(LoadWith("", "#version: 0.2\nab\n"), "merges.txt line 2",
                "'ab' is not two symbols");
  ExpectRefused(LoadWith("", "#version: 0.2\na  b\n"), "merges.txt line 2", "not two symbols");
  ExpectRefused(LoadWith("", "#version: 0.2\n\na b\n"), "merges.txt line 2", "not two symbols");
  ExpectRefused(LoadWith("", "#version: 0.2\na b\r\r\n"), "merges.txt line 2",
                "the symbol 'b\\r' is not in the vocabulary");
  ExpectRefused(LoadWith("", "\xc4\xa0 \xe2\x82\xac\n"), "merges.txt line 1",
                "the symbol '\xe2\x82\xac' is not in the vocabulary");
  ExpectRefused(LoadWith("", "q q\n"), "merges.txt line 1",
                "the merged token 'qq' is not in the vocabulary");
  ExpectRefused(LoadWith("", merges + "e r\n"), "merges.txt line 257",
                "the pair 'e r' was given on line 4");
}

TEST(Gpt2TokenizerFiles, AMissingFileIsNamed) {
  const absl::StatusOr<Gpt2Tokenizer> t = Gpt2Tokenizer::LoadDirectory(HfGpt2Tiny() + "/absent");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(t.status().message()), ::testing::HasSubstr("absent/vocab.json"));
}

// The header's vocab.json and merges.txt rules that are not errors: no
// "#version" line, no newline at the end.
TEST(Gpt2TokenizerFiles, MergesWithoutVersionLineOrLastNewlineRead) {
  const std::string merges = FixtureText("merges.txt");
  const std::string body = merges.substr(merges.find('\n') + 1);
  ASSERT_OK_AND_ASSIGN(const Gpt2Tokenizer a, LoadWith("", body));
  ASSERT_OK_AND_ASSIGN(const Gpt2Tokenizer b, LoadWith("", body.substr(0, body.size() - 1)));
  // "Hello world": the fixture's ids (tokenizer_cases.json).
  const std::vector<int64_t> want = {40, 325, 360, 283, 268, 76, 68};
  EXPECT_EQ(a.Encode("Hello world"), want);
  EXPECT_EQ(b.Encode("Hello world"), want);
}

// Windows line ends read as Python's text mode and Rust's lines() read them
// (transformers' two GPT-2 tokenizers): the same merges.
TEST(Gpt2TokenizerFiles, MergesWithWindowsLineEndsRead) {
  const std::string crlf = absl::StrReplaceAll(FixtureText("merges.txt"), {{"\n", "\r\n"}});
  ASSERT_OK_AND_ASSIGN(const Gpt2Tokenizer t, LoadWith("", crlf));
  const std::vector<int64_t> want = {40, 325, 360, 283, 268, 76, 68};
  EXPECT_EQ(t.Encode("Hello world"), want);
  ASSERT_OK_AND_ASSIGN(const Gpt2Tokenizer no_last, LoadWith("", crlf.substr(0, crlf.size() - 2)));
  EXPECT_EQ(no_last.Encode("Hello world"), want);
  ASSERT_OK_AND_ASSIGN(const Gpt2Tokenizer lf, LoadWith("", ""));
  const std::string text = FixtureText("vocab.json");  // long, and every symbol
  EXPECT_EQ(t.Encode(text), lf.Encode(text));
}

// Parse reads the files' contents as Load reads the files, and its
// messages name the files as the caller names them.
TEST(Gpt2TokenizerFiles, ParseReadsContentsNamingThemAsTold) {
  ASSERT_OK_AND_ASSIGN(const Gpt2Tokenizer t, Gpt2Tokenizer::Parse(FixtureText("vocab.json"),
                                                                   FixtureText("merges.txt"),
                                                                   "in/v.json", "in/m.txt"));
  EXPECT_EQ(t.vocab_size(), 512);
  EXPECT_EQ(t.end_of_text(), 0);
  const std::vector<int64_t> want = {40, 325, 360, 283, 268, 76, 68, 0};
  EXPECT_EQ(t.Encode("Hello world<|endoftext|>"), want);
  ExpectRefused(Gpt2Tokenizer::Parse("{}", "", "in/v.json", "in/m.txt"), "in/v.json: ",
                "byte 0x00 has no token");
  ExpectRefused(Gpt2Tokenizer::Parse(FixtureText("vocab.json"), "q q", "in/v.json", "in/m.txt"),
                "in/m.txt line 1: ", "the merged token 'qq' is not in the vocabulary");
}

}  // namespace
}  // namespace dagrad::models
