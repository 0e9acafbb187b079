// The CLI on GPT checkpoints: `dagrad eval` against the reference's goldens
// (tools/goldens/gpt.py) and `dagrad generate`.

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include "engine/dot/dot.h"
#include "engine/io/checkpoint.h"
#include "engine/io/file_io.h"
#include "engine/io/safetensors.h"
#include "engine/io/utf8.h"
#include "engine/view/viewer_html.h"
#include "tests/support/cli_runner.h"
#include "tests/support/gpt_fixtures.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

const std::string kGoldens = GptGoldens();
using ::testing::HasSubstr;

TEST(CliGpt, EvalMatchesReferenceLogitsLossAndGradients) {
  const std::string out = FreshDir("gpt_eval") + "/out.safetensors";
  const CliResult r = RunDagrad("eval --checkpoint=" + kGoldens +
                                "model.safetensors --input=" + kGoldens +
                                "input.safetensors --output=" + out);
  ASSERT_EQ(r.code, 0) << r.err;
  ASSERT_OK_AND_ASSIGN(SafetensorsFile got, ReadSafetensors(out));
  ASSERT_OK_AND_ASSIGN(SafetensorsFile want,
                       ReadSafetensors(kGoldens + "expected.safetensors"));
  int compared = 0;
  for (const auto& [name, tensor] : want.tensors) {
    if (name == "greedy") continue;
    const Tensor* mine = got.Find(name);
    ASSERT_NE(mine, nullptr) << name;
    EXPECT_LE(MaxRelativeError(*mine, tensor), 1e-4) << name;
    ++compared;
  }
  EXPECT_EQ(compared, static_cast<int>(got.tensors.size()));
  EXPECT_NE(got.Find("grad.transformer.wte.weight"), nullptr);
}

// Under --precision=bf16 the products read bfloat16 casts, as in a run
// trained so: every output stays within bfloat16's rounding of the
// float32 reference, and is not float32's.
TEST(CliGpt, EvalInBf16StaysWithinBFloat16OfTheReference) {
  const std::string dir = FreshDir("gpt_eval_bf16");
  const std::string args = "eval --checkpoint=" + kGoldens + "model.safetensors --input=" +
                           kGoldens + "input.safetensors --output=" + dir;
  ASSERT_EQ(RunDagrad(args + "/fp32.safetensors").code, 0);
  const CliResult r = RunDagrad(args + "/bf16.safetensors --precision=bf16");
  ASSERT_EQ(r.code, 0) << r.err;
  ASSERT_OK_AND_ASSIGN(SafetensorsFile fp32, ReadSafetensors(dir + "/fp32.safetensors"));
  ASSERT_OK_AND_ASSIGN(SafetensorsFile bf16, ReadSafetensors(dir + "/bf16.safetensors"));
  ASSERT_OK_AND_ASSIGN(SafetensorsFile want, ReadSafetensors(kGoldens + "expected.safetensors"));
  EXPECT_EQ(bf16.metadata["precision"], "bf16");
  EXPECT_EQ(fp32.metadata["precision"], "fp32");
  ASSERT_EQ(bf16.tensors.size(), fp32.tensors.size());
  for (const auto& [name, tensor] : bf16.tensors) {
    EXPECT_LE(MaxRelativeError(tensor, *want.Find(name)), 5e-2) << name;
    EXPECT_GT(MaxAbsDifference(tensor, *fp32.Find(name)), 0) << name;
  }
  EXPECT_LE(MaxRelativeError(*bf16.Find("loss"), *want.Find("loss")), 1e-2);
  const CliResult fp16 = RunDagrad(args + "/fp16.safetensors --precision=fp16");
  EXPECT_EQ(fp16.code, 2);
  EXPECT_THAT(fp16.err, HasSubstr("--precision: unknown precision 'fp16'"));
}

// The output records the files it came from as text: a name that is not
// UTF-8 ran the model, then failed to write ("not valid UTF-8"); it is
// recorded with the byte written \xff.
TEST(CliGpt, EvalOfAFileNamedInOtherBytesRecordsTheNameEscaped) {
  const std::string dir = FreshDir("gpt_eval_name");
  const std::string model = dir + "/m\xff.safetensors";
  std::filesystem::copy_file(kGoldens + "model.safetensors", model);
  const CliResult r = RunDagrad("eval --checkpoint='" + model + "' --input=" + kGoldens +
                                "input.safetensors --output=" + dir + "/out.safetensors");
  ASSERT_EQ(r.code, 0) << r.err;
  ASSERT_OK_AND_ASSIGN(SafetensorsFile got, ReadSafetensors(dir + "/out.safetensors"));
  EXPECT_EQ(got.metadata["checkpoint"], dir + "/m\\xff.safetensors");
}

TEST(CliGpt, EvalRejectsTokensBeyondTheBlock) {
  const std::string dir = FreshDir("gpt_eval_bad");
  SafetensorsFile in;
  ASSERT_OK_AND_ASSIGN(Tensor tokens, Tensor::Zeros(DType::kInt64, {1, 9}));
  in.tensors.push_back({"tokens", tokens});
  ASSERT_OK(WriteSafetensors(dir + "/in.safetensors", in));
  const CliResult r = RunDagrad(
      "eval --checkpoint=" + kGoldens + "model.safetensors --input=" + dir +
      "/in.safetensors --output=" + dir + "/out.safetensors");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("block_size 8"));
}

// Greedy generation prints the prompt and the reference's greedy
// continuation, byte for byte, with and without the KV cache.
TEST(CliGpt, GenerateGreedyEqualsReference) {
  ASSERT_OK_AND_ASSIGN(SafetensorsFile in,
                       ReadSafetensors(kGoldens + "input.safetensors"));
  ASSERT_OK_AND_ASSIGN(SafetensorsFile want,
                       ReadSafetensors(kGoldens + "expected.safetensors"));
  const Tensor& tokens = *in.Find("tokens");
  const Tensor& greedy = *want.Find("greedy");
  const int64_t T = tokens.shape()[1], total = greedy.shape()[1];
  std::string prompt, expected;
  for (int64_t t = 0; t < T; ++t)
    prompt += static_cast<char>(tokens.data<int64_t>()[t]);
  for (int64_t t = 0; t < total; ++t)
    expected += static_cast<char>(greedy.data<int64_t>()[t]);
  const std::string file = FreshDir("gpt_generate") + "/prompt.bin";
  WriteBytes(file, prompt);
  for (const char* cache : {"true", "false"}) {
    const CliResult r = RunDagrad("generate --checkpoint=" + kGoldens +
                                  "model.safetensors --prompt_file=" + file +
                                  " --tokens=" + std::to_string(total - T) +
                                  " --temperature=0 --kv_cache=" + cache);
    ASSERT_EQ(r.code, 0) << r.err;
    // Drawn one by one, the bytes print as the whole would (TerminalText).
    EXPECT_EQ(r.out, TerminalText(expected)) << "kv_cache " << cache;
    EXPECT_TRUE(IsValidUtf8(r.out));
  }
}

TEST(CliGpt, GenerateSamplesReproducibly) {
  const std::string args =
      "generate --checkpoint=" + kGoldens +
      "model.safetensors --prompt=Hello --tokens=20 --temperature=0.8 "
      "--top_k=50 --top_p=0.9 --seed=";
  const CliResult a = RunDagrad(args + "3"), b = RunDagrad(args + "3"),
                  c = RunDagrad(args + "4");
  ASSERT_EQ(a.code, 0) << a.err;
  // 20 bytes drawn by an untrained model: each prints as itself, or as the
  // four characters \xNN where it is not part of valid UTF-8.
  EXPECT_TRUE(IsValidUtf8(a.out));
  EXPECT_GE(a.out.size(), 25u);
  EXPECT_LE(a.out.size(), 5u + 20 * 4);
  EXPECT_EQ(a.out.substr(0, 5), "Hello");
  EXPECT_EQ(a.out, b.out);
  EXPECT_NE(a.out, c.out);
}

TEST(CliGpt, GenerateErrors) {
  const std::string ckpt = " --checkpoint=" + kGoldens + "model.safetensors";
  EXPECT_EQ(RunDagrad("generate --prompt=a").code, 2);  // no checkpoint
  EXPECT_EQ(RunDagrad("generate" + ckpt).code, 2);      // no prompt
  EXPECT_EQ(RunDagrad("generate --prompt=a --temperature=-1" + ckpt).code, 2);
  const CliResult top_p = RunDagrad("generate --prompt=a --top_p=0" + ckpt);
  EXPECT_EQ(top_p.code, 2);
  EXPECT_THAT(top_p.err, ::testing::HasSubstr("top_p must be in (0, 1], got 0"));
  // Bad options are refused before the prompt is printed, and said once.
  const CliResult tokens = RunDagrad("generate --prompt=abc --tokens=-1" + ckpt);
  EXPECT_EQ(tokens.code, 2);
  EXPECT_EQ(tokens.out, "");
  EXPECT_THAT(tokens.err, ::testing::HasSubstr("dagrad generate: tokens must be >= 0, got -1"));
  EXPECT_EQ(top_p.out, "");
  EXPECT_EQ(RunDagrad("generate --prompt=a --checkpoint=" + kGoldens +
                      "input.safetensors")
                .code,
            2);  // not a GPT
  const CliResult missing =
      RunDagrad("generate --prompt=a --checkpoint=/nonexistent.safetensors");
  EXPECT_EQ(missing.code, 2);
  EXPECT_EQ(missing.out, "");
}

constexpr char kTextTrain[] =
    "train --task=text --seq_len=16 --dim=16 --heads=2 --layers=1 --dropout=0 "
    "--batch=8 "
    "--steps=6 --eval_every=3 --warmup=0 --optimizer=adamw --weight_decay=0.1 "
    "--lr=3e-3 "
    "--threads=1 ";

TEST(CliGpt, TrainOnTextWritesEveryOutputAndResumes) {
  const std::string dir = FreshDir("gpt_text");
  const std::string data = WriteCorpus("gpt_text_data", 60);
  const CliResult r =
      RunDagrad(std::string(kTextTrain) + "--data=" + data + " --out=" + dir);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("sample:\n"));
  // 60 x 86 bytes: a validation split of 516, (516 - 1) / 16 windows.
  EXPECT_THAT(r.out, HasSubstr(" (next byte) over the whole split (32 windows) after 6 steps"));
  EXPECT_THAT(r.out, ::testing::ContainsRegex("validation loss [0-9.]+ nats/byte and accuracy [0-9.]+ "));
  for (const char* file :
       {"model.safetensors", "checkpoint.safetensors", "metrics.csv",
        "loss.svg", "attention.svg", "forward.dot", "train_step.dot"}) {
    EXPECT_TRUE(std::ifstream(dir + "/" + file).good()) << file;
  }
  EXPECT_EQ(std::ifstream(dir + "/graph.html").good(), ViewerAvailable().ok());
  if (DotProgram().empty()) {  // Graphviz is found at run time, as the CLI finds it
    EXPECT_THAT(r.out, HasSubstr("forward.svg is not drawn: "));
  } else {
    EXPECT_THAT(r.out, HasSubstr(" forward.svg"));
    EXPECT_TRUE(std::ifstream(dir + "/forward.svg").good());
  }
  EXPECT_TRUE(IsValidUtf8(r.out));
  const std::string metrics = MetricsWithoutTime(dir);
  EXPECT_THAT(metrics, HasSubstr("step,loss,train_accuracy,eval_loss,eval_accuracy,lr"));
  EXPECT_THAT(metrics, HasSubstr("\n3,"));  // rows at steps 3 and 6
  EXPECT_THAT(metrics, HasSubstr("\n6,"));
  // The model file is a GPT checkpoint: generate reads it.
  const CliResult g =
      RunDagrad("generate --checkpoint=" + dir +
                "/model.safetensors --prompt=It --tokens=10 --temperature=0");
  ASSERT_EQ(g.code, 0) << g.err;
  EXPECT_EQ(g.out.size(), 12u);
  // Stopped at step 3 and resumed, naming the data by another path to the
  // same file: the metrics of the uninterrupted run.
  const std::string part = FreshDir("gpt_text_resume");
  std::string args =
      std::string(kTextTrain) + "--data=" + data + " --out=" + part;
  ASSERT_EQ(RunDagrad(args + " --steps=6 --eval_every=3 --stop_after=3").code,
            0);
  const std::filesystem::path spelled = std::filesystem::path(data);
  const std::string same_file = (spelled.parent_path() / "." / spelled.filename()).string();
  const CliResult resumed = RunDagrad(std::string(kTextTrain) + "--data=" + same_file +
                                      " --out=" + part + " --resume");
  ASSERT_EQ(resumed.code, 0) << resumed.err;
  EXPECT_EQ(MetricsWithoutTime(part), metrics);
}

TEST(CliGpt, GenerateHelpSaysWhatTheSeedSeeds) {
  const CliResult r = RunDagrad("generate --help");
  EXPECT_THAT(r.out, HasSubstr("generate: seed for sampling"));
}

TEST(CliGpt, EvalWindowsCapsTheValidationAndSaysSo) {
  const std::string data = WriteCorpus("gpt_eval_windows_data", 60);
  const std::string args = std::string(kTextTrain) + "--data=" + data + " --steps=1 --out=";
  const CliResult r = RunDagrad(args + FreshDir("gpt_eval_windows") + " --eval_windows=5");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr(" (next byte) over 5 of the split's 32 windows (--eval_windows)"));
  const CliResult negative = RunDagrad(args + FreshDir("gpt_eval_neg") + " --eval_windows=-1");
  EXPECT_EQ(negative.code, 2);
  EXPECT_THAT(negative.err, HasSubstr("--eval_windows must be >= 0 (0: the whole split), got -1"));
  const CliResult toy = RunDagrad("train --task=copy --eval_windows=5 --out=" + FreshDir("toy_ew"));
  EXPECT_EQ(toy.code, 2);
  EXPECT_THAT(toy.err, HasSubstr("--eval_windows applies to --task=text only"));
}

// --task=text trains in the loop every task shares (tools/cli/train_run.h):
// a stop signal saves and exits 128+signal, --resume continues exactly, the
// previous checkpoint is kept, and a non-finite step is never saved.
TEST(CliGpt, TrainOnTextStopsOnASignalAndResumesBitIdentical) {
  const std::string data = WriteCorpus("gpt_signal_data", 60);
  const std::string full = FreshDir("gpt_signal_full");
  ASSERT_EQ(RunDagrad(std::string(kTextTrain) + "--data=" + data + " --out=" + full).code, 0);
  ASSERT_OK_AND_ASSIGN(SafetensorsFile previous,
                       ReadSafetensors(full + "/checkpoint.prev.safetensors"));
  EXPECT_EQ(previous.metadata["dagrad.step"], "3");  // saved at 3 and 6
  const std::string dir = FreshDir("gpt_signal");
  const std::string args = std::string(kTextTrain) + "--data=" + data + " --out=" + dir;
  const CliResult r = RunDagrad(args, "env DAGRAD_TEST_RAISE=INT@step:4");
  EXPECT_EQ(r.code, 130) << r.err;
  EXPECT_THAT(r.err, HasSubstr("SIGINT: stopped at step 4; resume with --resume"));
  const CliResult resumed = RunDagrad(args + " --resume");
  ASSERT_EQ(resumed.code, 0) << resumed.err;
  EXPECT_THAT(resumed.out, HasSubstr("at step 4"));
  EXPECT_EQ(MetricsWithoutTime(dir), MetricsWithoutTime(full));
  EXPECT_EQ(*ReadFile(dir + "/model.safetensors"), *ReadFile(full + "/model.safetensors"));
}

// A --data whose bytes changed at the same path resumed: the split moved,
// and held-out bytes became training bytes. Its size and CRC-32C are in the
// checkpoint now.
TEST(CliGpt, ResumeRefusesADataFileWhoseBytesChanged) {
  const std::string data = WriteCorpus("gpt_changed_data", 60);
  const std::string dir = FreshDir("gpt_changed");
  const std::string args = std::string(kTextTrain) + "--data=" + data + " --out=" + dir;
  ASSERT_EQ(RunDagrad(args + " --stop_after=3").code, 0);
  ASSERT_OK_AND_ASSIGN(const std::string text, ReadFile(data));
  WriteBytes(data, text + text);
  const CliResult r = RunDagrad(args + " --resume");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr(absl::StrCat("data_checksum: checkpoint ", text.size(),
                                            " bytes, crc32c ")));
  EXPECT_THAT(r.err, HasSubstr(absl::StrCat("this run ", 2 * text.size(), " bytes, crc32c ")));
  WriteBytes(data, text);  // the same bytes again: it resumes
  const CliResult same = RunDagrad(args + " --resume");
  EXPECT_EQ(same.code, 0) << same.err;
}

TEST(CliGpt, TrainOnTextNeverSavesANonFiniteStep) {
  const std::string data = WriteCorpus("gpt_nonfinite_data", 60);
  for (const char* policy : {"stop", "skip --max_consecutive_skips=3"}) {
    const std::string dir = FreshDir("gpt_nonfinite");
    const CliResult r = RunDagrad(std::string(kTextTrain) + "--data=" + data + " --out=" + dir +
                                  " --eval_every=1 --lr=1e30 --on_nonfinite=" + policy);
    EXPECT_EQ(r.code, 1) << policy << "\n" << r.out << r.err;
    EXPECT_THAT(r.err, HasSubstr("its update was not applied")) << policy;
    EXPECT_FALSE(std::ifstream(dir + "/model.safetensors").good()) << policy;
    ASSERT_OK_AND_ASSIGN(SafetensorsFile checkpoint,
                         ReadSafetensors(dir + "/checkpoint.safetensors"));
    EXPECT_TRUE(RequireFinite(checkpoint).ok()) << policy;
    if (std::string(policy) == "stop") continue;
    // Steps 2 and 3 were skipped (a row each, skipped = 1); step 4, the
    // third in a row, stopped the run.
    EXPECT_THAT(r.err, HasSubstr("3 steps in a row were not finite"));
    const std::string metrics = MetricsWithoutTime(dir);
    EXPECT_THAT(metrics, ::testing::ContainsRegex("\n2,nan,[^\n]*,1\n3,nan,[^\n]*,1\n"))
        << metrics;
  }
}

TEST(CliGpt, TrainOnTextRejectsMissingEmptyAndShortFiles) {
  const std::string dir = FreshDir("gpt_text_bad");
  WriteBytes(dir + "/empty.txt", "");
  WriteBytes(dir + "/short.txt", std::string(100, 'a'));
  const std::string args =
      std::string(kTextTrain) + "--out=" + dir + "/run --data=";
  const CliResult none = RunDagrad(std::string(kTextTrain));
  EXPECT_EQ(none.code, 2);
  EXPECT_THAT(none.err, HasSubstr("--data"));
  const CliResult missing = RunDagrad(args + dir + "/missing.txt");
  EXPECT_EQ(missing.code, 2);
  const CliResult empty = RunDagrad(args + dir + "/empty.txt");
  EXPECT_EQ(empty.code, 2);
  EXPECT_THAT(empty.err, HasSubstr("empty"));
  const CliResult short_file = RunDagrad(args + dir + "/short.txt");
  EXPECT_EQ(short_file.code, 2);
  EXPECT_THAT(short_file.err, HasSubstr("needs at least 161"));
}

// Checkpoints record the data's path as JSON text: a name that is not UTF-8
// is refused before the first step, not at the first save after training.
TEST(CliGpt, TrainOnTextRefusesADataNameThatIsNotUtf8) {
  const std::string dir = FreshDir("gpt_text_name");
  const std::string corpus = WriteCorpus("gpt_text_name_data", 60);
  const std::string data = dir + "/we\xffird.txt";
  std::filesystem::copy_file(corpus, data);
  const CliResult r = RunDagrad(std::string(kTextTrain) + "--out=" + dir + "/run --data='" + data + "'");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("data '" + dir + "/we\\xffird.txt' is not valid UTF-8"));
  EXPECT_FALSE(std::filesystem::exists(dir + "/run/metrics.csv"));
}

// --init=FILE starts a byte-level run from a GPT model file: its sizes are
// the file's, so the flags that would size a new model are refused.
TEST(CliGpt, TrainStartsFromAModelFile) {
  const std::string dir = FreshDir("gpt_text_init");
  const std::string data = WriteCorpus("gpt_text_init_data", 60);
  CliResult r = RunDagrad(std::string(kTextTrain) + "--data=" + data + " --out=" + dir + "/a");
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string init = " --init=" + dir + "/a/model.safetensors";
  r = RunDagrad("train --task=text --steps=2 --eval_every=2 --data=" + data + init +
                " --out=" + dir + "/b");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("after 2 steps"));
  r = RunDagrad("train --task=text --dim=32 --data=" + data + init + " --out=" + dir + "/c");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--dim applies to a new model only; --init's model is its file's"));
  r = RunDagrad("train --task=text --data=" + data + " --init=" + dir + "/none.safetensors");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr(dir + "/none.safetensors"));
}

}  // namespace
}  // namespace dagrad::testing
