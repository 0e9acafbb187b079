// `dagrad eval` and `dagrad generate` on a Hugging Face GPT-2 directory
// (--model=DIR): the tiny GPT-2 of tests/data/hf_gpt2_tiny/, against what
// transformers computed for it (forward_backward.safetensors: logits, the
// loss and every gradient; greedy40.json: a greedy continuation).

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "engine/io/checkpoint.h"
#include "engine/io/file_io.h"
#include "engine/io/safetensors.h"
#include "engine/io/utf8.h"
#include "models/gpt/tokenizer.h"
#include "nlohmann/json.hpp"
#include "tests/support/cli_runner.h"
#include "tests/support/gpt_fixtures.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

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
  ASSERT_OK_AND_ASSIGN(SafetensorsFile hf,
                       ReadSafetensors(HfGpt2Tiny() + "/forward_backward.safetensors"));
  const std::string dir = FreshDir("cli_gpt2_eval");
  ASSERT_OK(WriteSafetensors(dir + "/in.safetensors", EvalInput(hf)));
  CliResult r = RunDagrad(absl::StrCat("eval --model=", HfGpt2Tiny(), " --input=", dir,
                                       "/in.safetensors --output=", dir, "/out.safetensors"));
  ASSERT_EQ(r.code, 0) << r.err;
  ASSERT_OK_AND_ASSIGN(SafetensorsFile out, ReadSafetensors(dir + "/out.safetensors"));
  EXPECT_LE(MaxAbsDifference(*out.Find("logits"), *hf.Find("logits")), 1e-5);
  EXPECT_LE(MaxAbsDifference(*out.Find("loss"), *hf.Find("loss")), 1e-6);
  int grads = 0;
  for (const auto& [name, want] : hf.tensors) {
    if (name.rfind("grad.", 0) != 0) continue;
    ++grads;
    const Tensor* got = out.Find(name);
    ASSERT_NE(got, nullptr) << name;
    EXPECT_LE(MaxRelativeError(*got, want), 1e-4) << name;
  }
  EXPECT_EQ(grads, 2 + 2 * 12 + 2);  // wte, wpe; 12 per layer; ln_f
}

TEST(CliGpt2, GenerateContinuesGreedilyAsTransformersDoes) {
  ASSERT_OK_AND_ASSIGN(std::string json, ReadFile(HfGpt2Tiny() + "/greedy40.json"));
  const nlohmann::json greedy = nlohmann::json::parse(json);
  const std::vector<int64_t> prompt = greedy["prompt"], all = greedy["greedy"];
  ASSERT_OK_AND_ASSIGN(models::Gpt2Tokenizer tok,
                       models::Gpt2Tokenizer::LoadDirectory(HfGpt2Tiny()));
  ASSERT_OK_AND_ASSIGN(std::string prompt_text, tok.Decode(prompt));
  ASSERT_EQ(tok.Encode(prompt_text), prompt);  // the text gives back the fixture's prompt
  ASSERT_OK_AND_ASSIGN(std::string want, tok.Decode(all));
  const std::string dir = FreshDir("cli_gpt2_generate");
  ASSERT_OK(WriteFileAtomically(dir + "/prompt.txt", prompt_text));
  CliResult r = RunDagrad(absl::StrCat("generate --model=", HfGpt2Tiny(), " --prompt_file=", dir,
                                       "/prompt.txt --temperature=0 --tokens=",
                                       all.size() - prompt.size()));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, TerminalText(want));
}

// A corpus of a few thousand bytes, and the tokens eval runs on.
void WriteCorpusAndInput(const std::string& dir) {
  std::string text;
  for (int i = 0; i < 60; ++i) text += "It was the best of times, it was the worst of times.\n";
  ASSERT_OK(WriteFileAtomically(dir + "/corpus.txt", text));
  ASSERT_OK_AND_ASSIGN(Tensor tokens, Tensor::FromVector<int64_t>({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8}));
  SafetensorsFile in;
  in.tensors = {{"tokens", tokens}};
  ASSERT_OK(WriteSafetensors(dir + "/in.safetensors", in));
}

// Fine-tune, then export: the exported directory's logits are the
// checkpoint's, and they moved from the weights fine-tuning started from.
TEST(CliGpt2, FineTunedThenExportedGivesTheCheckpointsLogits) {
  const std::string dir = FreshDir("cli_gpt2_tune");
  WriteCorpusAndInput(dir);
  CliResult r = RunDagrad(absl::StrCat("train --task=text --init=", HfGpt2Tiny(), " --data=", dir,
                                       "/corpus.txt --steps=6 --eval_every=3 --batch=4 "
                                       "--seq_len=16 --out=", dir, "/run"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("validation loss"));
  r = RunDagrad(absl::StrCat("export --format=hf --checkpoint=", dir,
                             "/run/model.safetensors --out=", dir, "/hf"));
  ASSERT_EQ(r.code, 0) << r.err;
  auto logits = [&](const std::string& model_flag, const std::string& out) {
    CliResult e = RunDagrad(absl::StrCat("eval ", model_flag, " --input=", dir,
                                         "/in.safetensors --output=", dir, "/", out));
    EXPECT_EQ(e.code, 0) << e.err;
    absl::StatusOr<SafetensorsFile> f = ReadSafetensors(dir + "/" + out);
    return f.ok() && f->Find("logits") ? *f->Find("logits") : Tensor();
  };
  const Tensor tuned = logits("--checkpoint=" + dir + "/run/model.safetensors", "a.safetensors");
  const Tensor exported = logits("--model=" + dir + "/hf", "b.safetensors");
  const Tensor original = logits("--model=" + HfGpt2Tiny(), "c.safetensors");
  EXPECT_EQ(MaxAbsDifference(exported, tuned), 0);
  EXPECT_GT(MaxAbsDifference(original, tuned), 1e-4);
  for (const char* name : {"config.json", "model.safetensors", "vocab.json", "merges.txt"}) {
    EXPECT_TRUE(ReadFile(dir + "/hf/" + name).ok()) << name;
  }
  // The checkpoint's ids are the tokenizer's, which it records: generate
  // reads the text as the exported directory does.
  const std::string greedy = " --prompt=It --temperature=0 --tokens=12";
  r = RunDagrad(absl::StrCat("generate --model=", dir, "/hf", greedy));
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string exported_text = r.out;
  r = RunDagrad(absl::StrCat("generate --checkpoint=", dir, "/run/model.safetensors", greedy));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, exported_text);
  EXPECT_GT(exported_text.size(), std::string("It").size());
  // No command writes over what it reads: the export into the run's own
  // directory, or into the pretrained one, and eval's output onto its model.
  ASSERT_OK_AND_ASSIGN(const std::string model_bytes, ReadFile(dir + "/run/model.safetensors"));
  r = RunDagrad(absl::StrCat("export --format=hf --checkpoint=", dir,
                             "/run/model.safetensors --out=", dir, "/run"));
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("holds what the export reads"));
  r = RunDagrad(absl::StrCat("export --format=hf --checkpoint=", dir, "/run/model.safetensors",
                             " --tokenizer=", dir, "/hf --out=", dir, "/hf/"));
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("holds what the export reads"));
  r = RunDagrad(absl::StrCat("eval --checkpoint=", dir, "/run/model.safetensors --input=", dir,
                             "/in.safetensors --output=", dir, "/run/../run/model.safetensors"));
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("model.safetensors (--checkpoint), which this command reads"));
  r = RunDagrad(absl::StrCat("eval --model=", dir, "/hf --input=", dir,
                             "/in.safetensors --output=", dir, "/hf/config.json"));
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("(--model), which this command reads"));
  EXPECT_EQ(*ReadFile(dir + "/run/model.safetensors"), model_bytes);
}

// A fine-tuned GPT-2's model file that records no tokenizer (moved away
// from its run, written before files recorded it) is generated from with
// --tokenizer, refused without it (printing its ids as bytes gave wrong
// text), and a recorded tokenizer that is gone is named.
TEST(CliGpt2, GenerateFromAFineTunedFileNeedsItsTokenizer) {
  const std::string dir = FreshDir("cli_gpt2_tokenizer");
  WriteCorpusAndInput(dir);
  CliResult r = RunDagrad(absl::StrCat("train --task=text --init=", HfGpt2Tiny(), " --data=", dir,
                                       "/corpus.txt --steps=2 --eval_every=2 --batch=2 "
                                       "--seq_len=16 --out=", dir, "/run"));
  ASSERT_EQ(r.code, 0) << r.err;
  ASSERT_OK_AND_ASSIGN(SafetensorsFile model, ReadCheckpoint(dir + "/run/model.safetensors"));
  EXPECT_EQ(model.metadata["tokenizer"], std::filesystem::absolute(HfGpt2Tiny()).lexically_normal().string());
  model.metadata.erase("tokenizer");
  ASSERT_OK(WriteCheckpoint(dir + "/bare.safetensors", model));
  const std::string greedy = " --prompt=It --temperature=0 --tokens=8";
  r = RunDagrad(absl::StrCat("generate --checkpoint=", dir, "/bare.safetensors", greedy));
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_THAT(r.err, HasSubstr("bare.safetensors records no tokenizer, and its 512 token ids are "
                               "a tokenizer's, not bytes: give --tokenizer=DIR"));
  r = RunDagrad(absl::StrCat("generate --checkpoint=", dir, "/bare.safetensors --tokenizer=",
                             HfGpt2Tiny(), greedy));
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string with_flag = r.out;
  r = RunDagrad(absl::StrCat("generate --checkpoint=", dir, "/run/model.safetensors", greedy));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, with_flag);
  model.metadata["tokenizer"] = dir + "/gone";
  ASSERT_OK(WriteCheckpoint(dir + "/moved.safetensors", model));
  r = RunDagrad(absl::StrCat("generate --checkpoint=", dir, "/moved.safetensors", greedy));
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("records the tokenizer '" + dir + "/gone' (or give --tokenizer=DIR)"));
  // A byte-level GPT read through GPT-2's tokenizer printed the prompt,
  // then failed on an id past its 256 (or printed another text's bytes).
  r = RunDagrad(absl::StrCat("generate --checkpoint=", GptGoldens(),
                             "model.safetensors --tokenizer=", HfGpt2Tiny(), greedy));
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_THAT(r.err, HasSubstr(absl::StrCat("the tokenizer of ", HfGpt2Tiny(), " has 512 ids, more "
                                            "than the 256 of ", GptGoldens(), "model.safetensors")));
}

// --init=DIR trains with config.json's dropouts unless --dropout is given,
// even at the flag's default 0.1, which then sets all three; the export
// writes the ones it trained with.
TEST(CliGpt2, FineTuningTakesTheConfigsDropoutsOrTheFlagsForAllThree) {
  const std::string dir = FreshDir("cli_gpt2_dropout");
  WriteCorpusAndInput(dir);
  const std::string hf = dir + "/hf_in";
  std::filesystem::create_directories(hf);
  for (const char* file : {"model.safetensors", "vocab.json", "merges.txt"}) {
    std::filesystem::copy_file(HfGpt2Tiny() + "/" + file, hf + "/" + file);
  }
  nlohmann::json config = nlohmann::json::parse(ReadFile(HfGpt2Tiny() + "/config.json").value());
  config.update({{"attn_pdrop", 0.05}, {"embd_pdrop", 0.2}, {"resid_pdrop", 0.3}});
  ASSERT_OK(WriteFileAtomically(hf + "/config.json", config.dump()));
  auto tune = [&](const std::string& flags, const std::string& out) {
    return RunDagrad(absl::StrCat("train --task=text --init=", hf, " --data=", dir,
                                  "/corpus.txt --steps=2 --eval_every=2 --batch=2 --seq_len=16 ",
                                  flags, " --out=", dir, "/", out));
  };
  auto dropouts = [&](const std::string& out) {
    absl::StatusOr<SafetensorsFile> model = ReadSafetensors(dir + "/" + out + "/model.safetensors");
    EXPECT_TRUE(model.ok()) << model.status();
    if (!model.ok()) return std::vector<std::string>();
    return std::vector<std::string>{model->metadata["attn_pdrop"], model->metadata["embd_pdrop"],
                                    model->metadata["resid_pdrop"]};
  };
  CliResult r = tune("", "from_config");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(dropouts("from_config"), (std::vector<std::string>{"0.05", "0.2", "0.3"}));
  r = tune("--dropout=0.1", "given");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(dropouts("given"), (std::vector<std::string>{"0.1", "0.1", "0.1"}));
  r = RunDagrad(absl::StrCat("export --format=hf --checkpoint=", dir,
                             "/from_config/model.safetensors --out=", dir, "/hf_out"));
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json exported =
      nlohmann::json::parse(ReadFile(dir + "/hf_out/config.json").value());
  EXPECT_EQ(exported["attn_pdrop"], 0.05);
  EXPECT_EQ(exported["embd_pdrop"], 0.2);
  EXPECT_EQ(exported["resid_pdrop"], 0.3);
  r = tune("--dropout=1.5", "refused");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("dropout must be in [0, 1), got p = 1.5"));
}

// --attention reaches a fine-tuned GPT-2 (it was dropped, and an unknown
// value trained): composed runs softmax where fused runs attention, with
// the same losses to float rounding.
TEST(CliGpt2, FineTuningTakesTheAttentionPath) {
  const std::string dir = FreshDir("cli_gpt2_attention");
  WriteCorpusAndInput(dir);
  auto tune = [&](const std::string& path) {
    return RunDagrad(absl::StrCat("train --task=text --init=", HfGpt2Tiny(), " --data=", dir,
                                  "/corpus.txt --steps=2 --eval_every=2 --batch=2 --seq_len=16 "
                                  "--dropout=0 --profile --attention=", path, " --out=", dir, "/",
                                  path));
  };
  const CliResult fused = tune("fused"), composed = tune("composed");
  ASSERT_EQ(fused.code, 0) << fused.err;
  ASSERT_EQ(composed.code, 0) << composed.err;
  EXPECT_THAT(fused.out, HasSubstr("attention_grad"));
  EXPECT_THAT(fused.out, Not(HasSubstr("softmax_grad")));
  EXPECT_THAT(composed.out, HasSubstr("softmax_grad"));
  EXPECT_THAT(composed.out, Not(HasSubstr("attention_grad")));
  const std::string a = MetricsWithoutTime(dir + "/fused"), b = MetricsWithoutTime(dir + "/composed");
  const std::vector<std::string> fa = absl::StrSplit(a, absl::ByAnyChar(",\n")),
                                 fb = absl::StrSplit(b, absl::ByAnyChar(",\n"));
  ASSERT_EQ(fa.size(), fb.size()) << a << b;
  for (size_t i = 0; i < fa.size(); ++i) {
    double x = 0, y = 0;
    if (absl::SimpleAtod(fa[i], &x) && absl::SimpleAtod(fb[i], &y)) {
      EXPECT_NEAR(x, y, 1e-4 * (1 + std::abs(x))) << i << "\n" << a << b;
    }
  }
  const CliResult bogus = tune("bogus");
  EXPECT_EQ(bogus.code, 2);
  EXPECT_THAT(bogus.err, HasSubstr("--attention must be fused or composed"));
}

TEST(CliGpt2, FineTuningAndExportRefuseWhatDoesNotFit) {
  const std::string dir = FreshDir("cli_gpt2_refuse");
  WriteCorpusAndInput(dir);
  CliResult r = RunDagrad(absl::StrCat("train --task=text --init=", HfGpt2Tiny(),
                                       " --dim=64 --data=", dir, "/corpus.txt"));
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--dim applies to a new model only"));
  r = RunDagrad(absl::StrCat("train --task=text --init=", dir, " --data=", dir, "/corpus.txt"));
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr(dir + "/config.json"));
  // Fine-tuning a directory into itself wrote over its model.safetensors.
  std::filesystem::copy(HfGpt2Tiny(), dir + "/hf_copy", std::filesystem::copy_options::recursive);
  ASSERT_OK_AND_ASSIGN(const std::string weights, ReadFile(dir + "/hf_copy/model.safetensors"));
  r = RunDagrad(absl::StrCat("train --task=text --init=", dir, "/hf_copy --data=", dir,
                             "/corpus.txt --steps=2 --seq_len=16 --batch=2 --out=", dir, "/hf_copy"));
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr(absl::StrCat("--out=", dir, "/hf_copy/model.safetensors would write over ",
                                            dir, "/hf_copy/model.safetensors (--init)")));
  EXPECT_EQ(*ReadFile(dir + "/hf_copy/model.safetensors"), weights);
  // A NaN in the weights stopped at step 1 blaming the learning rate.
  ASSERT_OK_AND_ASSIGN(SafetensorsFile hf, ReadSafetensors(dir + "/hf_copy/model.safetensors"));
  Tensor& first = hf.tensors[0].second;
  ASSERT_EQ(first.dtype(), DType::kFloat32);
  first.data<float>()[1] = std::nanf("");
  ASSERT_OK(WriteSafetensors(dir + "/hf_copy/model.safetensors", hf));
  r = RunDagrad(absl::StrCat("train --task=text --init=", dir, "/hf_copy --data=", dir,
                             "/corpus.txt --steps=2 --seq_len=16 --batch=2 --out=", dir, "/nan_run"));
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr(absl::StrCat("tensor '", hf.tensors[0].first,
                                            "' holds nan at element 1; training needs finite weights")));
  r = RunDagrad(absl::StrCat("export --format=tf --checkpoint=x --out=y"));
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--format must be onnx or hf, got 'tf'"));
  // A toy model is not a GPT-2.
  r = RunDagrad(absl::StrCat("train --steps=1 --eval_every=1 --dim=8 --heads=2 --ffn=8 --out=",
                             dir, "/toy"));
  ASSERT_EQ(r.code, 0) << r.err;
  r = RunDagrad(absl::StrCat("export --format=hf --tokenizer=", HfGpt2Tiny(), " --checkpoint=", dir,
                             "/toy/model.safetensors --out=", dir, "/hf"));
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("expected gpt2"));
  // Without --tokenizer too: named as no GPT-2 (it asked for the tokenizer).
  r = RunDagrad(absl::StrCat("export --format=hf --checkpoint=", dir,
                             "/toy/model.safetensors --out=", dir, "/hf"));
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr(absl::StrCat("--format=hf writes a GPT-2, and ", dir,
                                            "/toy/model.safetensors is none")));
}

TEST(CliGpt2, ABrokenDirectoryIsAUsageErrorNamingTheFile) {
  const std::string dir = FreshDir("cli_gpt2_broken");
  CliResult r = RunDagrad(absl::StrCat("eval --model=", dir, " --input=a --output=b"));
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr(dir + "/config.json"));
  r = RunDagrad(absl::StrCat("generate --model=", dir, " --prompt=x"));
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr(dir + "/config.json"));  // the model is read first
  r = RunDagrad(absl::StrCat("generate --model=", HfGpt2Tiny(), " --checkpoint=x --prompt=x"));
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("give --checkpoint or --model, not both"));
}

// A model with more ids than its tokenizer may draw one the tokenizer
// lacks: the error named "token 0" (of a one-token decode) and neither the
// drawn token nor the tokenizer.
TEST(CliGpt2, AnIdTheTokenizerLacksNamesTheDrawnTokenAndTheTokenizer) {
  const std::string dir = FreshDir("cli_gpt2_small_vocab");
  for (const char* file : {"config.json", "model.safetensors"}) {
    std::filesystem::copy_file(HfGpt2Tiny() + "/" + file, dir + "/" + file);
  }
  nlohmann::json vocab = nlohmann::json::parse(*ReadFile(HfGpt2Tiny() + "/vocab.json"));
  for (auto it = vocab.begin(); it != vocab.end();) it = it.value() >= 500 ? vocab.erase(it) : ++it;
  WriteBytes(dir + "/vocab.json", vocab.dump());
  std::string merges;  // those whose tokens are left
  for (absl::string_view line : absl::StrSplit(*ReadFile(HfGpt2Tiny() + "/merges.txt"), '\n')) {
    const std::vector<std::string> pair = absl::StrSplit(line, ' ');
    if (absl::StartsWith(line, "#") ||
        (pair.size() == 2 && vocab.contains(pair[0]) && vocab.contains(pair[1]) &&
         vocab.contains(pair[0] + pair[1]))) {
      absl::StrAppend(&merges, line, "\n");
    }
  }
  WriteBytes(dir + "/merges.txt", merges);
  const CliResult r = RunDagrad(absl::StrCat("generate --model=", dir,
                                             " --prompt=\"Hello world the\" --tokens=60 "
                                             "--temperature=5 --seed=3"));
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr(absl::StrCat(", which the tokenizer of ", dir,
                                            " does not have: the model has 512 ids")));
  EXPECT_THAT(r.err, HasSubstr("generated token "));
}

TEST(CliGpt2, AnEmptyPromptFileIsNamed) {
  const std::string file = FreshDir("cli_gpt2_empty_prompt") + "/prompt.txt";
  WriteBytes(file, "");
  const CliResult r = RunDagrad(absl::StrCat("generate --model=", HfGpt2Tiny(), " --prompt_file=", file));
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr(absl::StrCat("the prompt is empty (--prompt_file=", file, ")")));
}

}  // namespace
}  // namespace dagrad::testing
