// The examples of models/gpt/tokenizer.h, pretokenizer.h and
// tokenizer_files.h, line for line, run on the tiny GPT-2's tokenizer files.

#include <cstdint>
#include <string>
#include <vector>

#include "engine/status_macros.h"
#include "models/gpt/pretokenizer.h"
#include "models/gpt/tokenizer.h"
#include "models/gpt/tokenizer_files.h"
#include "tests/support/test_util.h"

namespace dagrad::models {
namespace {

const std::string dir = std::string(DAGRAD_TEST_DATA_DIR) + "/hf_gpt2_tiny";

absl::Status TokenizerExample(std::string& text_out) {
  DAGRAD_ASSIGN_OR_RETURN(Gpt2Tokenizer tokenizer, Gpt2Tokenizer::LoadDirectory(dir));
  std::vector<int64_t> ids = tokenizer.Encode("Hello world<|endoftext|>");
  DAGRAD_ASSIGN_OR_RETURN(std::string text, tokenizer.Decode(ids));
  text_out = text;
  return absl::OkStatus();
}

TEST(HeaderExamplesGpt2Tokenizer, Tokenizer) {
  std::string text;
  ASSERT_OK(TokenizerExample(text));
  EXPECT_EQ(text, "Hello world<|endoftext|>");
}

TEST(HeaderExamplesGpt2Tokenizer, PreTokenizeAndByteSymbol) {
  std::vector<absl::string_view> words = Gpt2PreTokenize("I'm here  now");
  // "I", "'m", " here", " ", " now"
  EXPECT_THAT(words, ::testing::ElementsAre("I", "'m", " here", " ", " now"));
  Gpt2ByteSymbol(' ');  // 0x120
  EXPECT_EQ(Gpt2ByteSymbol(' '), 0x120);
}

}  // namespace
}  // namespace dagrad::models
