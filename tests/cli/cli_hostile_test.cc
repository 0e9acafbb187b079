// The dagrad program given what a hostile user gives it: values that
// made it hang or replace what it should have refused.

#include <sys/stat.h>
#include <sys/wait.h>

#include <cstdlib>

#include <filesystem>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/io/file_io.h"
#include "tests/support/cli_runner.h"
#include "tests/support/test_util.h"

namespace dagrad::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

// `train --layers=100` trained, saved, then waited over 10 minutes for
// Graphviz to draw forward.svg; a deep model now keeps forward.dot only.
TEST(CliHostile, ADeepModelIsNotDrawnAfterTraining) {
  const std::string dir = FreshDir("deep");
  const CliResult r = RunDagrad(absl::StrCat(kTinyTrain, "--layers=13 --steps=0 --out=", dir));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("forward.svg is not drawn for more than 12 layers (Graphviz would "
                               "take minutes for 13); forward.dot holds the graph"));
  EXPECT_TRUE(fs::exists(dir + "/forward.dot"));
  EXPECT_FALSE(fs::exists(dir + "/forward.svg"));
}

// A model too large for the memory a process may take aborted on
// std::bad_alloc; it is exit 1 and a message. (Its plan, about 2.6 GB, is
// under MemAvailable, so the allocation itself meets the 1.5 GB limit.)
TEST(CliHostile, RunningOutOfMemoryIsAFailureNotAnAbort) {
  const std::string limit = "ulimit -v 1500000;";  // 1.5 GB of address space
  if (RunDagrad("info", limit).code != 0) {
    GTEST_SKIP() << "dagrad cannot start under a 1.5 GB address-space limit (a sanitizer build "
                    "reserves more)";
  }
  const CliResult r = RunDagrad(
      absl::StrCat("train --layers=16 --dim=512 --heads=1 --ffn=4096 --steps=1 --out=",
                   FreshDir("oom")),
      limit);
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("dagrad train: out of host memory"));
}

// Flags the chosen task would ignore are refused, naming the task they
// apply to (--task=text used to train with --vocab=100 silently ignored).
TEST(CliHostile, AFlagTheTaskIgnoresIsAUsageError) {
  CliResult r = RunDagrad("train --task=text --data=/nonexistent --vocab=100 --out=" +
                          FreshDir("ignored_vocab"));
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--vocab applies to the toy tasks (reverse, copy, sort) only"));
  r = RunDagrad("train --task=copy --data=/nonexistent --out=" + FreshDir("ignored_data"));
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--data applies to --task=text only"));
}

// A learning rate so large that the first update overflows the parameters
// (from finite loss and gradients) is the non-finite stop, exit 1, not a
// checkpoint refused as if the file were at fault (exit 2).
TEST(CliHostile, AnUpdateThatOverflowsTheParametersIsANonFiniteStop) {
  const CliResult r = RunDagrad(
      absl::StrCat(kTinyTrain, "--lr=1e300 --eval_every=1 --steps=3 --out=", FreshDir("huge_lr")));
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("step 1: not writing"));
  EXPECT_THAT(r.err, HasSubstr("a non-finite value is never saved (an update too large for "
                               "this model: lower --lr)"));
  EXPECT_THAT(r.err, HasSubstr("no checkpoint was written"));
}

// `eval --output=/dev/full` as root renamed the logits over the device.
TEST(CliHostile, AnOutputThatIsAFifoIsRefusedAndKept) {
  const std::string dir = FreshDir("fifo_out");
  const std::string model = FreshDir("fifo_model");
  ASSERT_EQ(RunDagrad(absl::StrCat(kTinyTrain, "--steps=1 --out=", model)).code, 0);
  const std::string fifo = dir + "/out.onnx";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const CliResult r =
      RunDagrad(absl::StrCat("export --checkpoint=", model, "/model.safetensors --out=", fifo));
  if (absl::StrContains(r.err, "built without ONNX")) GTEST_SKIP() << "built without ONNX";
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr(absl::StrCat("cannot write '", fifo, "': it is a FIFO")));
  EXPECT_TRUE(fs::is_fifo(fifo));
}

// A name that is no kernel set ran BLIS's skx (id 0, where a failed
// SimpleAtoi leaves its int) as if chosen.
// A write past the file-size limit (ulimit -f) killed the program by
// SIGXFSZ: exit 153, no message, the temporary file left behind.
TEST(CliHostile, AFileSizeLimitIsAnErrorNamingTheFile) {
  const std::string dir = FreshDir("file_size_limit");
  const CliResult r = RunDagrad(absl::StrCat(kTinyTrain, "--steps=2 --out=", dir), "ulimit -f 2;");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr(absl::StrCat("cannot write '", dir, "/checkpoint.safetensors.tmp.")));
  EXPECT_THAT(r.err, HasSubstr("File too large"));
  for (const auto& entry : fs::directory_iterator(dir)) {
    EXPECT_EQ(entry.path().string().find(".tmp."), std::string::npos) << entry.path();
  }
}

// Output that never reached stdout (here /dev/full) exited 0.
TEST(CliHostile, AnOutputThatCannotBeWrittenFailsTheCommand) {
  const std::string err = FreshDir("stdout_full") + "/err";
  const int status = std::system(absl::StrCat(DAGRAD_CLI_PATH, " info > /dev/full 2> ", err).c_str());
  EXPECT_EQ(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 1);
  EXPECT_THAT(ReadFile(err).value_or(""),
              HasSubstr("dagrad info: cannot write to standard output: No space left on device"));
}

// A symlink loop (or a name too long) given as a model or checkpoint
// aborted export, eval, generate and fine-tuning: std::filesystem's
// is_directory threw. Each is now refused, naming the path.
TEST(CliHostile, ASymlinkLoopIsRefusedNotAnAbort) {
  const std::string dir = FreshDir("symlink_loop");
  fs::create_symlink(dir + "/b", dir + "/a");
  fs::create_symlink(dir + "/a", dir + "/b");
  const std::string loop = dir + "/a", long_name = dir + "/" + std::string(5000, 'n');
  for (const std::string& path : {loop, long_name}) {
    for (const std::string& args :
         {"export --out=" + dir + "/x.onnx --checkpoint=" + path, "eval --checkpoint=" + path,
          "eval --model=" + path, "generate --checkpoint=" + path, "generate --model=" + path,
          "train --task=text --data=" + dir + "/none --init=" + path}) {
      const CliResult r = RunDagrad(args);
      EXPECT_TRUE(r.code == 1 || r.code == 2) << args << ": " << r.code << " " << r.err;
      EXPECT_THAT(r.err, Not(HasSubstr("terminate"))) << args;
    }
  }
}

TEST(CliHostile, AnUnknownBlisKernelSetIsAUsageError) {
  for (const char* value : {"garbage", "''"}) {
    const CliResult r = RunDagrad("info", absl::StrCat("env BLIS_ARCH_TYPE=", value));
    EXPECT_EQ(r.code, 2) << value << ": " << r.out;
    EXPECT_THAT(r.err, HasSubstr("is not a BLIS kernel set this CPU can run; valid: ")) << value;
  }
}

}  // namespace
}  // namespace dagrad::testing
