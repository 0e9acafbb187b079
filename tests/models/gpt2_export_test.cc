// WriteHfGpt2 (models/gpt2/hf_export.h): the fixture that transformers
// 5.17 wrote (tests/data/hf_gpt2_tiny), read and exported again, against
// the fixture's own files: config.json's keys and values, the tensors'
// names, layouts and bits, the safetensors metadata, the tokenizer files;
// the exported directory's logits against transformers'; the errors.

#include "models/gpt2/hf_export.h"

#include <cstring>
#include <filesystem>
#include <map>
#include <string>

#include "engine/io/file_io.h"
#include "engine/io/safetensors.h"
#include "models/evaluate.h"
#include "models/gpt2/hf_checkpoint.h"
#include "nlohmann/json.hpp"
#include "tests/support/cli_runner.h"
#include "tests/support/gpt_fixtures.h"
#include "tests/support/test_util.h"

namespace dagrad::models {
namespace {

using ::dagrad::testing::FreshDir;
using ::dagrad::testing::HfGpt2Tiny;
using ::dagrad::testing::SameBits;
using json = nlohmann::json;

// Exported: the fixture read by ReadHfGpt2 and written by WriteHfGpt2.
std::string Exported(const std::string& name) {
  const std::string out = FreshDir(name) + "/hf";
  absl::StatusOr<HfGpt2Files> files = ReadHfGpt2(HfGpt2Tiny());
  EXPECT_TRUE(files.ok()) << files.status();
  if (files.ok()) {
    absl::Status written = WriteHfGpt2(files->weights, HfGpt2Tiny(), HfGpt2Tiny(), out);
    EXPECT_TRUE(written.ok()) << written;
  }
  return out;
}

json ReadExportedJson(const std::string& path) {
  absl::StatusOr<std::string> text = ReadFile(path);
  EXPECT_TRUE(text.ok()) << text.status();
  return text.ok() ? json::parse(*text) : json();
}

TEST(Gpt2Export, ReadsBackWithTheSameConfigAndEveryTensorBitForBit) {
  const std::string out = Exported("roundtrip");
  ASSERT_OK_AND_ASSIGN(HfGpt2Files original, ReadHfGpt2(HfGpt2Tiny()));
  ASSERT_OK_AND_ASSIGN(HfGpt2Files back, ReadHfGpt2(out));
  EXPECT_EQ(back.config.vocab, original.config.vocab);
  EXPECT_EQ(back.config.positions, original.config.positions);
  EXPECT_EQ(back.config.dim, original.config.dim);
  EXPECT_EQ(back.config.heads, original.config.heads);
  EXPECT_EQ(back.config.layers, original.config.layers);
  EXPECT_EQ(back.config.inner, original.config.inner);
  EXPECT_EQ(back.config.layer_norm_epsilon, original.config.layer_norm_epsilon);
  EXPECT_EQ(back.config.activation, original.config.activation);
  EXPECT_EQ(back.config.attn_pdrop, original.config.attn_pdrop);
  EXPECT_EQ(back.config.embd_pdrop, original.config.embd_pdrop);
  EXPECT_EQ(back.config.resid_pdrop, original.config.resid_pdrop);
  EXPECT_EQ(back.weights.metadata, original.weights.metadata);
}

// The exported model.safetensors against the one transformers wrote: the
// same names (no lm_head.weight), dtypes, shapes and bits, and the same
// metadata {"format": "pt"}.
TEST(Gpt2Export, WeightsFileIsTheOneTransformersWrote) {
  const std::string out = Exported("weights");
  ASSERT_OK_AND_ASSIGN(SafetensorsFile want, ReadSafetensors(HfGpt2Tiny() + "/model.safetensors"));
  ASSERT_OK_AND_ASSIGN(SafetensorsFile got, ReadSafetensors(out + "/model.safetensors"));
  EXPECT_EQ(got.metadata, want.metadata);
  ASSERT_EQ(got.tensors.size(), want.tensors.size());
  for (const auto& [name, tensor] : want.tensors) {
    const Tensor* mine = got.Find(name);
    ASSERT_NE(mine, nullptr) << name;
    EXPECT_TRUE(SameBits(*mine, tensor)) << name;
  }
}

// config.json: every key of the fixture's, with its value, but the
// transformers version and the bos/eos ids, which are the tokenizer's
// <|endoftext|> (the fixture's 50256 is GPT2Config's default, outside its
// 512-token vocabulary).
TEST(Gpt2Export, ConfigJsonHasTransformersKeysAndValues) {
  const std::string out = Exported("config");
  const json want = ReadExportedJson(HfGpt2Tiny() + "/config.json");
  const json got = ReadExportedJson(out + "/config.json");
  const json vocab = ReadExportedJson(HfGpt2Tiny() + "/vocab.json");
  for (const auto& [key, value] : want.items()) {
    if (key == "transformers_version") continue;
    ASSERT_TRUE(got.contains(key)) << key;
    if (key == "bos_token_id" || key == "eos_token_id") {
      EXPECT_EQ(got[key], vocab["<|endoftext|>"]) << key;
    } else {
      EXPECT_EQ(got[key], value) << key;
    }
  }
  EXPECT_EQ(got.size(), want.size() - 1);
}

// config.json's dropouts are the model file's (what dagrad trained with),
// and read back as they were written.
TEST(Gpt2Export, ConfigJsonHasTheModelsDropouts) {
  ASSERT_OK_AND_ASSIGN(HfGpt2Files files, ReadHfGpt2(HfGpt2Tiny()));
  Gpt2Config tuned = files.config;
  tuned.attn_pdrop = 0.05;
  tuned.embd_pdrop = 0.2;
  tuned.resid_pdrop = 0.3;
  files.weights.metadata = tuned.ToMetadata();
  const std::string out = FreshDir("dropouts") + "/hf";
  ASSERT_OK(WriteHfGpt2(files.weights, "tuned.safetensors", HfGpt2Tiny(), out));
  const json got = ReadExportedJson(out + "/config.json");
  EXPECT_EQ(got["attn_pdrop"], 0.05);
  EXPECT_EQ(got["embd_pdrop"], 0.2);
  EXPECT_EQ(got["resid_pdrop"], 0.3);
  ASSERT_OK_AND_ASSIGN(HfGpt2Files back, ReadHfGpt2(out));
  EXPECT_EQ(back.config.attn_pdrop, 0.05);
  EXPECT_EQ(back.config.embd_pdrop, 0.2);
  EXPECT_EQ(back.config.resid_pdrop, 0.3);
}

TEST(Gpt2Export, CopiesTheTokenizerFiles) {
  const std::string out = Exported("tokenizer");
  for (const char* file : {"vocab.json", "merges.txt"}) {
    EXPECT_EQ(ReadFile(out + "/" + file).value(), ReadFile(HfGpt2Tiny() + "/" + file).value())
        << file;
  }
}

// The exported directory's logits (EvaluateModel, as `dagrad eval`) equal
// the original directory's, and both are transformers'.
TEST(Gpt2Export, ExportedDirectoryGivesTheOriginalLogits) {
  const std::string out = Exported("logits");
  ASSERT_OK_AND_ASSIGN(SafetensorsFile expected,
                       ReadSafetensors(HfGpt2Tiny() + "/forward_backward.safetensors"));
  SafetensorsFile in;
  in.tensors.emplace_back("tokens", *expected.Find("input_ids"));
  ASSERT_OK_AND_ASSIGN(HfGpt2Files original, ReadHfGpt2(HfGpt2Tiny()));
  ASSERT_OK_AND_ASSIGN(HfGpt2Files exported, ReadHfGpt2(out));
  ASSERT_OK_AND_ASSIGN(SafetensorsFile a, EvaluateModel(original.weights, HfGpt2Tiny(), in, "in"));
  ASSERT_OK_AND_ASSIGN(SafetensorsFile b, EvaluateModel(exported.weights, out, in, "in"));
  EXPECT_TRUE(SameBits(*b.Find("logits"), *a.Find("logits")));
  EXPECT_LE(testing::MaxRelativeError(*b.Find("logits"), *expected.Find("logits")), 1e-5);
}

TEST(Gpt2Export, RefusesAModelFileOfAnotherKind) {
  ASSERT_OK_AND_ASSIGN(HfGpt2Files files, ReadHfGpt2(HfGpt2Tiny()));
  files.weights.metadata["model"] = "gpt";
  EXPECT_STATUS(WriteHfGpt2(files.weights, "runs/x/model.safetensors", HfGpt2Tiny(),
                            FreshDir("kind") + "/hf"),
                absl::StatusCode::kInvalidArgument, "runs/x/model.safetensors: checkpoint metadata: 'model'");
}

TEST(Gpt2Export, RefusesAMissingTokenizerFile) {
  const std::string tokenizer = FreshDir("half_tokenizer");
  std::filesystem::copy_file(HfGpt2Tiny() + "/vocab.json", tokenizer + "/vocab.json");
  ASSERT_OK_AND_ASSIGN(HfGpt2Files files, ReadHfGpt2(HfGpt2Tiny()));
  EXPECT_STATUS(WriteHfGpt2(files.weights, HfGpt2Tiny(), tokenizer, FreshDir("no_merges") + "/hf"),
                absl::StatusCode::kNotFound, tokenizer + "/merges.txt");
}

TEST(Gpt2Export, RefusesAnUnwritableOutputDirectory) {
  const std::string file = FreshDir("unwritable") + "/a_file";
  ASSERT_OK(WriteFileAtomically(file, "not a directory"));
  ASSERT_OK_AND_ASSIGN(HfGpt2Files files, ReadHfGpt2(HfGpt2Tiny()));
  absl::Status s = WriteHfGpt2(files.weights, HfGpt2Tiny(), HfGpt2Tiny(), file + "/hf");
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), ::testing::HasSubstr(file + "/hf"));
}

}  // namespace
}  // namespace dagrad::models
