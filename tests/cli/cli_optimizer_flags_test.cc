// `dagrad train`'s optimizer and schedule flags (tools/cli/run_config_flags.cc)
// reach the optimizer: one Adam step, worked by hand from the initial
// weights and the checkpoint's moments; and their errors.

#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_split.h"
#include "engine/io/file_io.h"
#include "engine/io/safetensors.h"
#include "tests/support/cli_runner.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

using ::testing::HasSubstr;

// One step of torch.optim.Adam from zero moments: m = (1 - b1) g, v = (1 -
// b2) g^2, and, bias-corrected, p1 = p0 - lr g / (|g| + eps). The gradient
// g is read back from m.
TEST(CliOptimizerFlags, BetasEpsAndTheDecayReachTheAdamStep) {
  const double lr = 0.01, b1 = 0.5, b2 = 0.75, eps = 0.01;
  // --lr_decay=constant: the one step's rate is --lr (cosine would give it
  // --final_lr_fraction x --lr, the last step's).
  const std::string args = absl::StrCat(
      kTinyTrain, "--dropout=0 --clip=0 --warmup=0 --optimizer=adam --lr_decay=constant --lr=",
      lr, " --beta1=", b1, " --beta2=", b2, " --eps=", eps, " --eval_every=1 --out=");
  const std::string initial = FreshDir("adam_flags_0"), stepped = FreshDir("adam_flags_1");
  ASSERT_EQ(RunDagrad(args + initial + " --steps=0").code, 0);
  const CliResult r = RunDagrad(args + stepped + " --steps=1");
  ASSERT_EQ(r.code, 0) << r.err;
  ASSERT_OK_AND_ASSIGN(SafetensorsFile p0, ReadSafetensors(initial + "/model.safetensors"));
  ASSERT_OK_AND_ASSIGN(SafetensorsFile ckpt, ReadSafetensors(stepped + "/checkpoint.safetensors"));
  EXPECT_EQ(ckpt.metadata["beta2"], "0.75");
  int64_t checked = 0, eps_matters = 0;
  for (const auto& [name, before] : p0.tensors) {
    const Tensor* after = ckpt.Find(name);
    const Tensor* m = ckpt.Find("optimizer." + name + ".exp_avg");
    const Tensor* v = ckpt.Find("optimizer." + name + ".exp_avg_sq");
    ASSERT_TRUE(after && m && v) << name;
    for (int64_t i = 0; i < before.num_elements(); ++i) {
      const double g = m->data<float>()[i] / (1 - b1);
      EXPECT_NEAR(v->data<float>()[i], (1 - b2) * g * g, 1e-6 * (1 + g * g)) << name << i;
      const double want = before.data<float>()[i] - lr * g / (std::abs(g) + eps);
      EXPECT_NEAR(after->data<float>()[i], want, 2e-6) << name << " " << i;
      eps_matters += std::abs(g) < 10 * eps && std::abs(g) > eps / 10;
      ++checked;
    }
  }
  EXPECT_GT(checked, 1000);
  EXPECT_GT(eps_matters, 10);  // where eps changes the step by 10% or more
}

// The last step's rate is --final_lr_fraction x --lr in a short run too:
// --warmup, when not given, is 30 or a tenth of --steps, whichever is fewer
// (a 20-step run under the old default 30 ramped for all 20 and ended at
// 20/30 of --lr). Given, it is taken as it is.
TEST(CliOptimizerFlags, AShortRunWarmsUpAndDecaysToTheFinalRate) {
  const std::string args =
      "train --vocab=8 --seq_len=8 --dim=16 --heads=2 --layers=1 --ffn=32 --batch=4 --steps=20 "
      "--eval_every=10 --threads=1 --lr=0.01 --final_lr_fraction=0.1 --out=";
  for (const auto& [extra, warmup, last_lr] : {std::tuple{"", "2", 0.001},
                                               std::tuple{" --warmup=30", "30", 0.01 * 20 / 30}}) {
    const std::string dir = FreshDir("short_run_lr");
    const CliResult r = RunDagrad(args + dir + extra);
    ASSERT_EQ(r.code, 0) << r.err;
    ASSERT_OK_AND_ASSIGN(SafetensorsFile ckpt, ReadSafetensors(dir + "/checkpoint.safetensors"));
    EXPECT_EQ(ckpt.metadata["warmup"], warmup) << extra;
    ASSERT_OK_AND_ASSIGN(const std::string metrics, ReadFile(dir + "/metrics.csv"));
    const std::string last = metrics.substr(metrics.rfind("\n20,") + 1);
    const std::vector<std::string> fields = absl::StrSplit(last, ',');
    ASSERT_GE(fields.size(), 6u) << metrics;
    EXPECT_NEAR(std::stod(fields[5]), last_lr, 1e-9) << extra << ": " << last;
  }
}

// A short run stopped under the old default (--warmup 30 at any --steps)
// resumes with --warmup=30, which the refusal names.
TEST(CliOptimizerFlags, AResumeUnderTheOldWarmupDefaultNamesTheFlagToGive) {
  const std::string dir = FreshDir("old_warmup");
  const std::string args =
      "train --vocab=8 --seq_len=8 --dim=16 --heads=2 --layers=1 --ffn=32 --batch=4 --steps=20 "
      "--eval_every=5 --threads=1 --out=" + dir;
  ASSERT_EQ(RunDagrad(args + " --warmup=30 --stop_after=10").code, 0);
  const CliResult r = RunDagrad(args + " --resume");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("warmup: checkpoint 30, this run 2 (dagrad train's --warmup, when "
                               "not given, is 30 or --steps / 10, whichever is fewer, since "
                               "2026-11-29: give --warmup=30 to continue)"));
  const CliResult again = RunDagrad(args + " --resume --warmup=30");
  EXPECT_EQ(again.code, 0) << again.err;
}

TEST(CliOptimizerFlags, BadValuesNameTheFlag) {
  const struct {
    std::string args, message;
  } cases[] = {
      {"--beta1=1", "beta1 must be in [0, 1), got 1"},
      {"--beta2=-0.5", "beta2 must be in [0, 1), got -0.5"},
      {"--optimizer=adamw --beta2=nan", "beta2 must be in [0, 1), got nan"},
      {"--eps=0", "eps must be finite and > 0, got 0"},
      {"--label_smoothing=1.5", "label_smoothing must be in [0, 1], got 1.5"},
      {"--eps=inf", "eps must be finite and > 0, got inf"},
      {"--optimizer=sgd --beta2=0.99",
       "--beta2 applies to --optimizer=adam and adamw only; sgd keeps no moments"},
      {"--lr_decay=step", "--lr_decay: unknown learning-rate decay 'step' (cosine, linear, "
                          "constant)"},
      {"--final_lr_fraction=2", "final_lr_fraction must be in [0, 1], got 2"},
      {"--eps=1e-50", "eps 1e-50 rounds to 0 in float32, the parameters' type"},
  };
  for (const auto& c : cases) {
    const CliResult r = RunDagrad(absl::StrCat(kTinyTrain, "--out=", FreshDir("bad_opt"), " ", c.args));
    EXPECT_EQ(r.code, 2) << c.args << "\n" << r.err;
    EXPECT_THAT(r.err, HasSubstr(c.message)) << c.args;
  }
}

}  // namespace
}  // namespace dagrad::testing
