#include "tests/support/cli_runner.h"

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "engine/io/file_io.h"
#include "gtest/gtest.h"

namespace dagrad::testing {

CliResult RunDagrad(const std::string& args, const std::string& env) {
  static std::atomic<int> counter = 0;
  const std::string base =
      absl::StrCat(::testing::TempDir(), "/cli_", getpid(), "_", counter++);
  const std::string cmd = absl::StrCat(env, " ", DAGRAD_CLI_PATH, " ", args, " > ", base,
                                       ".out 2> ", base, ".err");
  const int status = std::system(cmd.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, ReadFile(base + ".out").value_or(""),
          ReadFile(base + ".err").value_or("")};
}

std::string FreshDir(const std::string& name) {
  const std::string dir = absl::StrCat(::testing::TempDir(), "/", name, "_", getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

std::string MetricsWithoutTime(const std::string& dir) {
  std::string out;
  for (absl::string_view line :
       absl::StrSplit(ReadFile(dir + "/metrics.csv").value_or(""), '\n')) {
    out += std::string(line.substr(0, line.rfind(','))) + "\n";
  }
  return out;
}

}  // namespace dagrad::testing
