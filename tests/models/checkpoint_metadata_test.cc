// The metadata lies: every reader of a checkpoint (the library's
// ToyConfig/GptConfig::FromCheckpoint and Generator::Load, `dagrad eval`,
// `generate`, `export` and `train --resume`) refuses a file whose tensors
// are not exactly those of the model its metadata describes, naming the
// file and the tensor, with exit code 2 from the CLI; never a model built
// from the metadata with the rest of the file ignored (`dagrad export`
// wrote a 1-layer model from a 2-layer file saying layers=1, with exit 0).
//
// The lies are told about real models (the PyTorch-written files of
// tests/data) and written by WriteCheckpoint, checksums and all, so only
// the check of the tensors against the metadata can catch them. A lie the
// tensors cannot show is not among them: heads=4 for heads=2 at dim 16
// describes another valid model with the very same tensors.

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/io/checkpoint.h"
#include "models/gpt/gpt.h"
#include "models/generator.h"
#include "models/toy/transformer.h"
#include "tests/support/cli_runner.h"
#include "tests/support/gpt_fixtures.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

using ::testing::HasSubstr;

// Lie: the true file with metadata[key] = value (key empty: the metadata
// kept and the tensor `drop` left out), and what every refusal says.
struct Lie {
  std::string key, value, why;
  std::string drop;
};

std::string Mismatch(const std::string& name, const std::string& has, const std::string& wants) {
  return absl::StrCat(name, ": checkpoint has float32 ", has, ", model expects float32 ", wants);
}

// WriteLie writes the lying file into `dir` and returns its path.
std::string WriteLie(const std::string& truth_path, const Lie& lie, const std::string& dir) {
  SafetensorsFile f = *ReadCheckpoint(truth_path);
  if (lie.key.empty()) {
    std::erase_if(f.tensors, [&](const auto& entry) { return entry.first == lie.drop; });
  } else {
    f.metadata[lie.key] = lie.value;
  }
  const std::string path =
      absl::StrCat(dir, "/", lie.key.empty() ? "no_" + lie.drop : lie.key + "_" + lie.value,
                   ".safetensors");
  EXPECT_TRUE(WriteCheckpoint(path, std::move(f)).ok());
  return path;
}

// ExpectRefused checks a CLI run that read the lying file at `path`.
void ExpectRefused(const CliResult& r, const std::string& path, const Lie& lie,
                   const std::string& command) {
  SCOPED_TRACE(command);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr(path));
  EXPECT_THAT(r.err, HasSubstr(lie.why));
}

// ExpectExportRefused runs `dagrad export` on the lying file: refused and
// no model written (in a build without ONNX, refused for that).
void ExpectExportRefused(const std::string& path, const Lie& lie) {
  const std::string out = path + ".onnx";
  const CliResult r = RunDagrad("export --checkpoint=" + path + " --out=" + out);
#ifdef DAGRAD_HAVE_ONNX
  ExpectRefused(r, path, lie, "export");
#else
  EXPECT_EQ(r.code, 2);
#endif
  EXPECT_FALSE(std::filesystem::exists(out));
}

// ExpectEveryReaderRefuses writes `lie` about the model of `data` (its
// model.safetensors, with input.safetensors to evaluate) and checks that
// Config::FromCheckpoint, `dagrad eval` and `dagrad export` refuse it;
// returns the lying file's path, for the readers of one model only.
template <typename Config>
std::string ExpectEveryReaderRefuses(const std::string& data, const Lie& lie,
                                     const std::string& dir) {
  const std::string path = WriteLie(data + "model.safetensors", lie, dir);
  const absl::StatusOr<SafetensorsFile> file = ReadCheckpoint(path);
  EXPECT_TRUE(file.ok()) << file.status();
  if (!file.ok()) return path;
  EXPECT_STATUS(Config::FromCheckpoint(*file, path).status(), absl::StatusCode::kInvalidArgument,
                lie.why);
  const std::string out = path + ".out.safetensors";
  ExpectRefused(RunDagrad("eval --checkpoint=" + path + " --input=" + data +
                          "input.safetensors --output=" + out),
                path, lie, "eval");
  EXPECT_FALSE(std::filesystem::exists(out));
  ExpectExportRefused(path, lie);
  return path;
}

const std::string kToy = std::string(DAGRAD_TEST_DATA_DIR) + "/toy_eval/";

// The toy model: vocab 11, max_len 6, dim 16, heads 2, layers 2, ffn 24.
const std::vector<Lie> kToyLies = {
    {"layers", "1",
     "12 unexpected (tensors the metadata does not account for): "
     "'encoder.layers.1.linear1.bias'"},
    {"layers", "3", "the metadata says layers=3, but the file holds no tensor encoder.layers.2.*"},
    {"dim", "8", Mismatch("embedding.weight", "(11, 16)", "(11, 8)")},
    {"dim", "32", Mismatch("embedding.weight", "(11, 16)", "(11, 32)")},
    {"vocab", "10", Mismatch("embedding.weight", "(11, 16)", "(10, 16)")},
    {"vocab", "12", Mismatch("head.weight", "(11, 16)", "(12, 16)")},
    {"ffn", "12", Mismatch("encoder.layers.0.linear1.weight", "(24, 16)", "(12, 16)")},
    {"ffn", "48", Mismatch("encoder.layers.1.linear2.weight", "(16, 24)", "(16, 48)")},
    {"heads", "3", "dim 16 is not divisible by heads 3"},
    {"heads", "32", "dim 16 is not divisible by heads 32"},
    {"", "", "1 missing (variables with no tensor): 'head.bias'", "head.bias"},
};

TEST(CheckpointMetadata, EveryReaderRefusesAToyCheckpointWhoseMetadataLies) {
  const std::string dir = FreshDir("toy_lies");
  for (const Lie& lie : kToyLies) {
    SCOPED_TRACE(lie.key + "=" + lie.value + lie.drop);
    ExpectEveryReaderRefuses<models::ToyConfig>(kToy, lie, dir);
  }
}

// The GPT: vocab 256, block_size 8, dim 16, heads 2, layers 2.
const std::vector<Lie> kGptLies = {
    {"layers", "1",
     "12 unexpected (tensors the metadata does not account for): "
     "'transformer.h.1.attn.c_attn.bias'"},
    {"layers", "3", "the metadata says layers=3, but the file holds no tensor transformer.h.2.*"},
    {"dim", "8", Mismatch("transformer.wte.weight", "(256, 16)", "(256, 8)")},
    {"dim", "32", Mismatch("transformer.wpe.weight", "(8, 16)", "(8, 32)")},
    {"vocab", "255", Mismatch("transformer.wte.weight", "(256, 16)", "(255, 16)")},
    {"vocab", "257", Mismatch("transformer.wte.weight", "(256, 16)", "(257, 16)")},
    {"block_size", "4", Mismatch("transformer.wpe.weight", "(8, 16)", "(4, 16)")},
    {"block_size", "16", Mismatch("transformer.wpe.weight", "(8, 16)", "(16, 16)")},
    {"heads", "3", "dim 16 is not divisible by heads 3"},
    {"heads", "32", "dim 16 is not divisible by heads 32"},
    {"", "", "1 missing (variables with no tensor): 'transformer.ln_f.bias'",
     "transformer.ln_f.bias"},
};

TEST(CheckpointMetadata, EveryReaderRefusesAGptCheckpointWhoseMetadataLies) {
  const std::string dir = FreshDir("gpt_lies");
  for (const Lie& lie : kGptLies) {
    SCOPED_TRACE(lie.key + "=" + lie.value + lie.drop);
    const std::string path = ExpectEveryReaderRefuses<models::GptConfig>(GptGoldens(), lie, dir);
    EXPECT_STATUS(models::Generator::Load(path).status(), absl::StatusCode::kInvalidArgument,
                  lie.why);
    ExpectRefused(RunDagrad("generate --checkpoint=" + path + " --prompt=ab --tokens=1"), path,
                  lie, "generate");
  }
}

// The message says which config the metadata gave, so the reader sees
// what the metadata claims beside what the file holds.
TEST(CheckpointMetadata, TheRefusalNamesTheFileAndTheConfigItsMetadataGives) {
  const std::string dir = FreshDir("gpt_lie_message");
  const std::string path = WriteLie(GptGoldens() + "model.safetensors", kGptLies[0], dir);
  ASSERT_OK_AND_ASSIGN(SafetensorsFile file, ReadCheckpoint(path));
  EXPECT_STATUS(models::GptConfig::FromCheckpoint(file, path).status(),
                absl::StatusCode::kInvalidArgument,
                absl::StrCat("checkpoint '", path,
                             "' does not match the model its metadata describes (block_size=8, "
                             "dim=16, dropout=0.1, heads=2, layers=1, model=gpt, vocab=256); "
                             "nothing was loaded: 12 unexpected"));
}

// A training checkpoint whose metadata and flags agree on a model the
// file's tensors are not: --resume refuses it, naming the tensor.
TEST(CheckpointMetadata, ResumeRefusesATrainingCheckpointWhoseMetadataLies) {
  for (const auto& [key, real, claimed, why] :
       std::vector<std::tuple<std::string, std::string, std::string, std::string>>{
           {"layers", "2", "1", "the metadata does not account for): 'encoder.layers.1."},
           {"dim", "16", "8", Mismatch("embedding.weight", "(8, 16)", "(8, 8)")}}) {
    SCOPED_TRACE(key);
    const std::string dir = FreshDir("resume_lie_" + key);
    const std::string run = absl::StrCat(kTinyTrain, "--out=", dir, " --", key, "=");
    // One save, at step 5: no previous checkpoint to fall back to.
    ASSERT_EQ(RunDagrad(absl::StrCat(run, real, " --stop_after=5")).code, 0);
    const std::string latest = dir + "/checkpoint.safetensors";
    ASSERT_FALSE(std::filesystem::exists(dir + "/checkpoint.prev.safetensors"));
    ASSERT_OK_AND_ASSIGN(SafetensorsFile file, ReadCheckpoint(latest));
    file.metadata[key] = claimed;
    ASSERT_OK(WriteCheckpoint(latest, std::move(file)));
    const CliResult r = RunDagrad(absl::StrCat(run, claimed, " --resume"));
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_THAT(r.err, HasSubstr(absl::StrCat("checkpoint ", latest, " does not match the model "
                                              "its metadata describes (")));
    EXPECT_THAT(r.err, HasSubstr(why));
  }
}

}  // namespace
}  // namespace dagrad::testing
