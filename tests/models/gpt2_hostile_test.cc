// Hugging Face GPT-2 directories that dagrad must refuse, each with an
// error naming the file and the field or tensor at fault
// (models/gpt2/hf_config.h, models/gpt2/hf_checkpoint.h), and the variants
// of real GPT-2 files it must accept.

#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/io/file_io.h"
#include "engine/io/safetensors.h"
#include "models/gpt2/hf_checkpoint.h"
#include "nlohmann/json.hpp"
#include "tests/support/cli_runner.h"
#include "tests/support/gpt_fixtures.h"
#include "tests/support/test_util.h"

namespace dagrad::models {
namespace {

using ::dagrad::testing::FreshDir;
using ::dagrad::testing::WriteBytes;
using ::dagrad::testing::HfGpt2Tiny;
using ::dagrad::testing::HfGpt2TinyWeights;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;
using json = nlohmann::json;

json FixtureConfig() { return json::parse(ReadFile(HfGpt2Tiny() + "/config.json").value()); }

// Directory writes a GPT-2 directory of `config` and `weights`.
std::string Directory(const std::string& name, const std::string& config,
                      const SafetensorsFile& weights) {
  const std::string dir = FreshDir(name);
  WriteBytes(dir + "/config.json", config);
  EXPECT_TRUE(WriteSafetensors(dir + "/model.safetensors", weights).ok());
  return dir;
}

std::string Refusal(const std::string& dir) {
  absl::StatusOr<HfGpt2Files> files = ReadHfGpt2(dir);
  EXPECT_FALSE(files.ok()) << dir;
  return std::string(files.status().message());
}

TEST(Gpt2Hostile, ConfigFieldsAreRefusedByName) {
  const std::vector<std::pair<json, std::string>> cases = {
      {{{"activation_function", "swish"}}, "field 'activation_function' is 'swish'"},
      {{{"scale_attn_by_inverse_layer_idx", true}}, "field 'scale_attn_by_inverse_layer_idx'"},
      {{{"reorder_and_upcast_attn", true}}, "field 'reorder_and_upcast_attn'"},
      {{{"add_cross_attention", true}}, "field 'add_cross_attention'"},
      {{{"tie_word_embeddings", false}}, "field 'tie_word_embeddings'"},
      {{{"scale_attn_weights", false}}, "field 'scale_attn_weights'"},
      {{{"model_type", "gpt_neo"}}, "field 'model_type'"},
      {{{"n_inner", "wide"}}, "field 'n_inner' must be null or an integer"},
      {{{"n_head", 5}}, "field 'n_embd' 64 is not a multiple of field 'n_head' 5"},
      {{{"n_head", "4"}}, "field 'n_head' is not an integer"},
      {{{"n_layer", 0}}, "field 'n_layer' must be in [1, "},
      {{{"vocab_size", int64_t{1} << 40}}, "field 'vocab_size' must be in [1, "},
      {{{"layer_norm_epsilon", 0}}, "field 'layer_norm_epsilon' must be a finite number > 0"},
      {{{"layer_norm_epsilon", "small"}}, "field 'layer_norm_epsilon' is not a number"},
  };
  for (const auto& [change, want] : cases) {
    json config = FixtureConfig();
    config.update(change);
    const std::string dir = Directory("gpt2_config", config.dump(), HfGpt2TinyWeights());
    EXPECT_THAT(Refusal(dir), AllOf(HasSubstr(dir + "/config.json"), HasSubstr(want)))
        << change.dump();
  }
}

// A value nested a million deep is refused by its type, without recursing
// into it (to print it, say).
TEST(Gpt2Hostile, DeeplyNestedConfigValueIsRefusedByItsType) {
  std::string text = FixtureConfig().dump();
  const std::string field = "\"n_head\":4";
  ASSERT_NE(text.find(field), std::string::npos);
  text.replace(text.find(field), field.size(),
               "\"n_head\":" + std::string(1 << 20, '[') + std::string(1 << 20, ']'));
  const std::string dir = Directory("gpt2_deep", text, HfGpt2TinyWeights());
  EXPECT_THAT(Refusal(dir), HasSubstr("field 'n_head' is not an integer: an array"));
}

TEST(Gpt2Hostile, MissingOrMalformedConfigIsNamed) {
  json config = FixtureConfig();
  config.erase("n_layer");
  std::string dir = Directory("gpt2_no_field", config.dump(), HfGpt2TinyWeights());
  EXPECT_THAT(Refusal(dir), HasSubstr(dir + "/config.json: field 'n_layer' is missing"));
  dir = Directory("gpt2_not_json", "{\"n_embd\": 64,", HfGpt2TinyWeights());
  EXPECT_THAT(Refusal(dir), HasSubstr(dir + "/config.json: not JSON: parse error at line 1, "
                                      "column 15"));
  dir = Directory("gpt2_array", "[1]", HfGpt2TinyWeights());
  EXPECT_THAT(Refusal(dir), HasSubstr(dir + "/config.json: is JSON array, not an object"));
  std::string huge = FixtureConfig().dump();
  huge.replace(huge.find("\"n_embd\":") + 9, 2, "9223372036854775808");
  dir = Directory("gpt2_huge", huge, HfGpt2TinyWeights());
  EXPECT_THAT(Refusal(dir), HasSubstr("field 'n_embd' is 9223372036854775808, too large"));
  dir = FreshDir("gpt2_no_config");
  EXPECT_TRUE(WriteSafetensors(dir + "/model.safetensors", HfGpt2TinyWeights()).ok());
  absl::StatusOr<HfGpt2Files> files = ReadHfGpt2(dir);
  EXPECT_TRUE(absl::IsNotFound(files.status())) << files.status();
  EXPECT_THAT(files.status().message(), HasSubstr(dir + "/config.json"));
}

TEST(Gpt2Hostile, WeightsThatDoNotFitTheConfigNameTheTensor) {
  const std::string weights = "/model.safetensors";
  json config = FixtureConfig();
  config["n_positions"] = 32;
  std::string dir = Directory("gpt2_shape", config.dump(), HfGpt2TinyWeights());
  EXPECT_THAT(Refusal(dir), AllOf(HasSubstr(dir + "/config.json describes another model"),
                                  HasSubstr(dir + weights), HasSubstr("transformer.wpe.weight"),
                                  HasSubstr("(64, 64)"), HasSubstr("(32, 64)")));
  config = FixtureConfig();
  config["n_inner"] = 128;
  dir = Directory("gpt2_inner", config.dump(), HfGpt2TinyWeights());
  EXPECT_THAT(Refusal(dir), HasSubstr("transformer.h.0.mlp.c_fc.weight"));

  SafetensorsFile missing = HfGpt2TinyWeights();
  missing.tensors.pop_back();  // transformer.wte.weight, last in name order
  dir = Directory("gpt2_missing", FixtureConfig().dump(), missing);
  EXPECT_THAT(Refusal(dir), AllOf(HasSubstr(dir + weights), HasSubstr("transformer.wte.weight")));
  SafetensorsFile extra = HfGpt2TinyWeights();
  extra.tensors.emplace_back("transformer.h.0.attn.extra", *Tensor::Zeros(DType::kFloat32, {2}));
  dir = Directory("gpt2_extra", FixtureConfig().dump(), extra);
  EXPECT_THAT(Refusal(dir), HasSubstr("transformer.h.0.attn.extra"));
}

TEST(Gpt2Hostile, ConfigClaimingMoreLayersThanStoredIsRefusedBeforeBuilding) {
  json config = FixtureConfig();
  config["n_layer"] = 1 << 20;
  const std::string dir = Directory("gpt2_layers", config.dump(), HfGpt2TinyWeights());
  EXPECT_THAT(Refusal(dir), HasSubstr(dir + "/model.safetensors"));
}

TEST(Gpt2Hostile, TruncatedOrOversizedWeightsAreNamed) {
  const std::string bytes = ReadFile(HfGpt2Tiny() + "/model.safetensors").value();
  for (const std::string& broken : {bytes.substr(0, bytes.size() - 100), bytes + "trailing",
                                    std::string("\xff\xff\xff\xff\xff\xff\xff\x7f", 8)}) {
    const std::string dir = Directory("gpt2_truncated", FixtureConfig().dump(), {});
    WriteBytes(dir + "/model.safetensors", broken);
    EXPECT_THAT(Refusal(dir), HasSubstr(dir + "/model.safetensors"));
  }
}

TEST(Gpt2Hostile, NoWeightsOrABadIndexIsNamed) {
  std::string dir = FreshDir("gpt2_no_weights");
  WriteBytes(dir + "/config.json", FixtureConfig().dump());
  absl::StatusOr<HfGpt2Files> files = ReadHfGpt2(dir);
  EXPECT_TRUE(absl::IsNotFound(files.status())) << files.status();
  EXPECT_THAT(files.status().message(),
              AllOf(HasSubstr("model.safetensors"), HasSubstr("model.safetensors.index.json")));

  const std::string index = dir + "/model.safetensors.index.json";
  WriteBytes(index, json{{"weight_map", {{"transformer.wte.weight", "../x.safetensors"}}}}.dump());
  EXPECT_THAT(Refusal(dir), AllOf(HasSubstr(index), HasSubstr("field 'weight_map'"),
                                  HasSubstr("transformer.wte.weight")));
  WriteBytes(index, "[]");
  EXPECT_THAT(Refusal(dir), AllOf(HasSubstr(index), HasSubstr("'weight_map'")));
  // The index names a tensor its shard lacks.
  EXPECT_TRUE(WriteSafetensors(dir + "/part.safetensors", HfGpt2TinyWeights()).ok());
  json map = json::object();
  for (const auto& [name, tensor] : HfGpt2TinyWeights().tensors) map[name] = "part.safetensors";
  map["transformer.h.9.ln_1.weight"] = "part.safetensors";
  WriteBytes(index, json{{"weight_map", map}}.dump());
  EXPECT_THAT(Refusal(dir), AllOf(HasSubstr(index), HasSubstr("transformer.h.9.ln_1.weight")));
  map.erase("transformer.ln_f.bias");
  map.erase("transformer.h.9.ln_1.weight");
  WriteBytes(index, json{{"weight_map", map}}.dump());
  EXPECT_THAT(Refusal(dir), AllOf(HasSubstr("part.safetensors"), HasSubstr("transformer.ln_f.bias"),
                                  HasSubstr("not mapped")));
  // A shard that is missing is that, not a missing index.
  map["transformer.ln_f.bias"] = "gone.safetensors";
  WriteBytes(index, json{{"weight_map", map}}.dump());
  EXPECT_THAT(Refusal(dir), AllOf(HasSubstr(index + " names shard gone.safetensors, which is "
                                            "missing (cannot open '" + dir + "/gone.safetensors'"),
                                  Not(HasSubstr("neither"))));
}

// GPT2Model's files (no "transformer." prefix), the mask buffers of older
// files and a tied head stored twice load as GPT2LMHeadModel's; a head of
// its own does not.
TEST(Gpt2Hostile, RealFileVariantsLoadAndAnUntiedHeadIsRefused) {
  const SafetensorsFile fixture = HfGpt2TinyWeights();
  SafetensorsFile variant;
  for (const auto& [name, tensor] : fixture.tensors) {
    variant.tensors.emplace_back(name.substr(std::string("transformer.").size()), tensor);
  }
  variant.tensors.emplace_back("h.0.attn.bias", *Tensor::Zeros(DType::kFloat32, {1, 1, 64, 64}));
  variant.tensors.emplace_back("h.1.attn.masked_bias", Tensor::Scalar(-1e4f));
  variant.tensors.emplace_back("lm_head.weight", *fixture.Find("transformer.wte.weight"));
  std::string dir = Directory("gpt2_variant", FixtureConfig().dump(), variant);
  ASSERT_OK_AND_ASSIGN(HfGpt2Files files, ReadHfGpt2(dir));
  for (const auto& [name, tensor] : files.weights.tensors) {
    const Tensor* want = fixture.Find(name);
    ASSERT_NE(want, nullptr) << name;
    EXPECT_EQ(testing::AsDoubles(tensor), testing::AsDoubles(*want)) << name;
  }
  EXPECT_EQ(files.weights.tensors.size(), fixture.tensors.size());

  variant.tensors.back().second = *Tensor::Zeros(DType::kFloat32, {512, 64});
  dir = Directory("gpt2_untied", FixtureConfig().dump(), variant);
  EXPECT_THAT(Refusal(dir), AllOf(HasSubstr(dir + "/model.safetensors"),
                                  HasSubstr("'lm_head.weight' differs")));
}

}  // namespace
}  // namespace dagrad::models
