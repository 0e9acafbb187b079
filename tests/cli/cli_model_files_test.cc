// What eval, generate and export take as a model: a training checkpoint
// (a run stopped before its end has no model.safetensors) is its
// parameters; a run's folder is named as such; export refuses the flags its
// format would ignore.

#include <filesystem>
#include <string>

#include "absl/strings/str_cat.h"
#include "engine/io/file_io.h"
#include "engine/io/safetensors.h"
#include "tests/support/cli_runner.h"
#include "tests/support/gpt_fixtures.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

using ::testing::HasSubstr;

// A toy run's inputs: two sequences of 4 tokens, all of them kept.
std::string WriteToyInputs(const std::string& dir) {
  SafetensorsFile in;
  in.tensors.push_back({"tokens", T<int64_t>({2, 4}, {1, 2, 3, 4, 5, 6, 7, 1})});
  in.tensors.push_back({"lengths", T<int64_t>({2}, {4, 4})});
  EXPECT_TRUE(WriteSafetensors(dir + "/in.safetensors", in).ok());
  return dir + "/in.safetensors";
}

// At the end of a run both files hold the same parameters: eval of either
// gives the same bytes.
TEST(CliModelFiles, ATrainingCheckpointEvaluatesAsItsModel) {
  const std::string dir = FreshDir("model_files_ckpt");
  ASSERT_EQ(RunDagrad(absl::StrCat(kTinyTrain, "--steps=5 --out=", dir, "/run")).code, 0);
  const std::string in = WriteToyInputs(dir);
  for (const char* file : {"model", "checkpoint"}) {
    const CliResult r = RunDagrad(absl::StrCat("eval --checkpoint=", dir, "/run/", file,
                                               ".safetensors --input=", in, " --output=", dir,
                                               "/", file, ".out"));
    ASSERT_EQ(r.code, 0) << r.err;
  }
  ASSERT_OK_AND_ASSIGN(SafetensorsFile a, ReadSafetensors(dir + "/model.out"));
  ASSERT_OK_AND_ASSIGN(SafetensorsFile b, ReadSafetensors(dir + "/checkpoint.out"));
  EXPECT_EQ(MaxAbsDifference(*a.Find("logits"), *b.Find("logits")), 0);
#ifdef DAGRAD_HAVE_ONNX
  // A run stopped early has only the checkpoint; export takes it too.
  ASSERT_EQ(RunDagrad(absl::StrCat(kTinyTrain, "--stop_after=2 --out=", dir, "/stopped")).code, 0);
  const CliResult exported = RunDagrad(absl::StrCat(
      "export --checkpoint=", dir, "/stopped/checkpoint.safetensors --out=", dir, "/m.onnx"));
  EXPECT_EQ(exported.code, 0) << exported.err;
#endif
}

TEST(CliModelFiles, ARunsFolderIsNamedWithTheFileToGive) {
  const std::string dir = FreshDir("model_files_run");
  ASSERT_EQ(RunDagrad(absl::StrCat(kTinyTrain, "--stop_after=2 --out=", dir, "/run")).code, 0);
  const std::string want = absl::StrCat(dir, "/run is a dagrad training run's folder, not a model: "
                                        "give ", dir, "/run/model.safetensors");
  CliResult r = RunDagrad(absl::StrCat("eval --checkpoint=", dir, "/run --input=", dir,
                                       "/x --output=", dir, "/y"));
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr(want));
  r = RunDagrad(absl::StrCat("generate --checkpoint=", dir, "/run --prompt=x"));
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr(want));
}

// A fine-tune started from a relative --init records where its tokenizer
// is in the checkpoint too, as in the model file: generate reads it from
// any directory.
TEST(CliModelFiles, AFineTunesCheckpointFindsItsTokenizerFromAnywhere) {
  const std::string dir = FreshDir("model_files_tune");
  std::filesystem::copy(HfGpt2Tiny(), dir + "/hf", std::filesystem::copy_options::recursive);
  std::string text;
  for (int i = 0; i < 60; ++i) text += "It was the best of times, it was the worst of times.\n";
  ASSERT_OK(WriteFileAtomically(dir + "/corpus.txt", text));
  const CliResult tuned = RunDagrad(
      "train --task=text --init=hf --data=corpus.txt --steps=4 --stop_after=2 --batch=4 "
      "--seq_len=16 --out=run",
      "cd " + dir + ";");
  ASSERT_EQ(tuned.code, 0) << tuned.err;
  const CliResult r = RunDagrad(absl::StrCat("generate --checkpoint=", dir,
                                             "/run/checkpoint.safetensors --prompt=It --tokens=2"));
  EXPECT_EQ(r.code, 0) << r.err;
  // And a run's folder as --init is named as such.
  const CliResult init = RunDagrad(absl::StrCat("train --task=text --init=", dir, "/run --data=",
                                                dir, "/corpus.txt --out=", dir, "/again"));
  EXPECT_EQ(init.code, 2);
  EXPECT_THAT(init.err, HasSubstr(absl::StrCat("--init: ", dir,
                                               "/run is a dagrad training run's folder")));
}

TEST(CliModelFiles, ExportRefusesFlagsItsFormatWouldIgnore) {
  const std::string dir = FreshDir("model_files_flags");
  CliResult r = RunDagrad(absl::StrCat("export --checkpoint=", dir, "/m.safetensors --out=", dir,
                                       "/m.onnx --tokenizer=", dir));
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--tokenizer applies to --format=hf only"));
  r = RunDagrad(absl::StrCat("export --format=hf --attention=composed --checkpoint=", dir,
                             "/m.safetensors --out=", dir, "/hf"));
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--attention applies to --format=onnx only"));
}

}  // namespace
}  // namespace dagrad::testing
