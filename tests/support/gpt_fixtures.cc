#include "tests/support/gpt_fixtures.h"

#include <fstream>

#include "tests/support/cli_runner.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {

std::string GptGoldens() { return std::string(DAGRAD_TEST_DATA_DIR) + "/goldens/gpt/"; }

std::string HfGpt2Tiny() { return std::string(DAGRAD_TEST_DATA_DIR) + "/hf_gpt2_tiny"; }

SafetensorsFile HfGpt2TinyWeights() {
  absl::StatusOr<SafetensorsFile> file = ReadSafetensors(HfGpt2Tiny() + "/model.safetensors");
  EXPECT_TRUE(file.ok()) << file.status();
  return file.ok() ? *std::move(file) : SafetensorsFile();
}

std::string TextCorpus(int repeats) {
  std::string text;
  for (int i = 0; i < repeats; ++i) {
    text += "the quick brown fox jumps over the lazy dog. ";
    text += "pack my box with five dozen liquor jugs!\n";
  }
  return text;
}

void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

std::string WriteCorpus(const std::string& name, int repeats) {
  const std::string path = FreshDir(name) + "/corpus.txt";
  WriteBytes(path, TextCorpus(repeats));
  return path;
}

}  // namespace dagrad::testing
