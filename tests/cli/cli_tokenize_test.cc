// `dagrad tokenize` on the tiny GPT-2's tokenizer files
// (tests/data/hf_gpt2_tiny/, ids from openai/gpt-2's src/encoder.py).

#include <string>

#include "engine/io/file_io.h"
#include "tests/support/cli_runner.h"
#include "tests/support/gpt_fixtures.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

using ::testing::HasSubstr;

TEST(CliTokenize, PrintsTheIdsOnOneLine) {
  // tokenizer_cases.json: "Hello world" and "I'm can't we'll they've".
  CliResult r = RunDagrad("tokenize --model=" + HfGpt2Tiny() + " --text='Hello world'");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "40 325 360 283 268 76 68\n");
  r = RunDagrad("tokenize --model=" + HfGpt2Tiny() + " \"--text=I'm can't we'll they've\"");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "41 7 77 271 303 7 84 283 69 7 76 76 274 89 7 467\n");
  // vocab.json: "a" 65, "<|endoftext|>" 0, "b" 66.
  r = RunDagrad("tokenize --model=" + HfGpt2Tiny() + " '--text=a<|endoftext|>b'");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "65 0 66\n");
}

TEST(CliTokenize, RefusesMissingFlagsAndBrokenFilesWithExit2) {
  CliResult r = RunDagrad("tokenize --text=x");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--model=DIR is required"));
  r = RunDagrad("tokenize --model=" + HfGpt2Tiny());
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--text is required"));
  const std::string dir = FreshDir("tokenize_broken");
  r = RunDagrad("tokenize --text=x --model=" + dir);
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr(dir + "/vocab.json"));
  ASSERT_OK_AND_ASSIGN(const std::string vocab, ReadFile(HfGpt2Tiny() + "/vocab.json"));
  ASSERT_OK(WriteFileAtomically(dir + "/vocab.json", vocab));
  ASSERT_OK(WriteFileAtomically(dir + "/merges.txt", "#version: 0.2\nz z z\n"));
  r = RunDagrad("tokenize --text=x --model=" + dir);
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr(dir + "/merges.txt line 2: 'z z z' is not two symbols"));
}

}  // namespace
}  // namespace dagrad::testing
