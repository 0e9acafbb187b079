// `dagrad eval` and `dagrad generate` on a Hugging Face GPT-2 directory
// (--model=DIR): the tiny GPT-2 of tests/data/hf_gpt2_tiny/, against what
// transformers computed for it (forward_backward.safetensors: logits, the
// loss and every gradient; greedy40.json: a greedy continuation).

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/io/file_io.h"
#include "engine/io/safetensors.h"
#include "engine/io/utf8.h"
#include "models/gpt/tokenizer.h"
#include "nlohmann/json.hpp"
#include "tests/support/cli_runner.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

using ::testing::HasSubstr;

const std::string kDir = std::string(DAGRAD_TEST_DATA_DIR) + "/hf_gpt2_tiny";

// MaxDifference: the largest |got - want|, and the largest |want|.
std::pair<double, double> MaxDifference(const Tensor& got, const Tensor& want) {
  const std::vector<double> g = AsDoubles(got), w = AsDoubles(want);
  EXPECT_EQ(g.size(), w.size());
  double diff = 0, scale = 0;
  for (size_t i = 0; i < std::min(g.size(), w.size()); ++i) {
    diff = std::max(diff, std::abs(g[i] - w[i]));
    scale = std::max(scale, std::abs(w[i]));
  }
  return {diff, scale};
}

// The fixture's tokens, and its labels as targets aligned with the logits
// (transformers' loss shifts them: logits[:, t] predict labels[:, t + 1]).
SafetensorsFile EvalInput(const SafetensorsFile& hf) {
  const Tensor& ids = *hf.Find("input_ids");
  const Tensor& labels = *hf.Find("labels");
  const int64_t b = ids.shape().dim(0), t = ids.shape().dim(1);
  std::vector<int64_t> targets(b * t, -100);
  for (int64_t r = 0; r < b; ++r) {
    for (int64_t i = 0; i + 1 < t; ++i) targets[r * t + i] = labels.data<int64_t>()[r * t + i + 1];
  }
  SafetensorsFile in;
  in.tensors = {{"tokens", ids}, {"targets", *Tensor::FromVector<int64_t>(ids.shape(), targets)}};
  return in;
}

TEST(CliGpt2, EvalMatchesTransformersLogitsLossAndEveryGradient) {
  ASSERT_OK_AND_ASSIGN(SafetensorsFile hf, ReadSafetensors(kDir + "/forward_backward.safetensors"));
  const std::string dir = FreshDir("cli_gpt2_eval");
  ASSERT_OK(WriteSafetensors(dir + "/in.safetensors", EvalInput(hf)));
  CliResult r = RunDagrad(absl::StrCat("eval --model=", kDir, " --input=", dir,
                                       "/in.safetensors --output=", dir, "/out.safetensors"));
  ASSERT_EQ(r.code, 0) << r.err;
  ASSERT_OK_AND_ASSIGN(SafetensorsFile out, ReadSafetensors(dir + "/out.safetensors"));
  EXPECT_LE(MaxDifference(*out.Find("logits"), *hf.Find("logits")).first, 1e-5);
  EXPECT_LE(MaxDifference(*out.Find("loss"), *hf.Find("loss")).first, 1e-6);
  int grads = 0;
  for (const auto& [name, want] : hf.tensors) {
    if (name.rfind("grad.", 0) != 0) continue;
    ++grads;
    const Tensor* got = out.Find(name);
    ASSERT_NE(got, nullptr) << name;
    const auto [diff, scale] = MaxDifference(*got, want);
    EXPECT_LE(diff, 1e-4 * scale) << name;
  }
  EXPECT_EQ(grads, 2 + 2 * 12 + 2);  // wte, wpe; 12 per layer; ln_f
}

TEST(CliGpt2, GenerateContinuesGreedilyAsTransformersDoes) {
  ASSERT_OK_AND_ASSIGN(std::string json, ReadFile(kDir + "/greedy40.json"));
  const nlohmann::json greedy = nlohmann::json::parse(json);
  const std::vector<int64_t> prompt = greedy["prompt"], all = greedy["greedy"];
  ASSERT_OK_AND_ASSIGN(models::Gpt2Tokenizer tok, models::Gpt2Tokenizer::LoadDirectory(kDir));
  ASSERT_OK_AND_ASSIGN(std::string prompt_text, tok.Decode(prompt));
  ASSERT_EQ(tok.Encode(prompt_text), prompt);  // the text gives back the fixture's prompt
  ASSERT_OK_AND_ASSIGN(std::string want, tok.Decode(all));
  const std::string dir = FreshDir("cli_gpt2_generate");
  ASSERT_OK(WriteFileAtomically(dir + "/prompt.txt", prompt_text));
  CliResult r = RunDagrad(absl::StrCat("generate --model=", kDir, " --prompt_file=", dir,
                                       "/prompt.txt --temperature=0 --tokens=",
                                       all.size() - prompt.size()));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, TerminalText(want));
}

TEST(CliGpt2, ABrokenDirectoryIsAUsageErrorNamingTheFile) {
  const std::string dir = FreshDir("cli_gpt2_broken");
  CliResult r = RunDagrad(absl::StrCat("eval --model=", dir, " --input=a --output=b"));
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr(dir + "/config.json"));
  r = RunDagrad(absl::StrCat("generate --model=", dir, " --prompt=x"));
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr(dir + "/vocab.json"));
  r = RunDagrad(absl::StrCat("generate --model=", kDir, " --checkpoint=x --prompt=x"));
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("give --checkpoint or --model, not both"));
}

}  // namespace
}  // namespace dagrad::testing
