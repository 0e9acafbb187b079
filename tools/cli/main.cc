// The `dagrad` command-line program.
//
//   dagrad <command> [--flag=value ...]
//
// `dagrad --help` lists the commands, `dagrad <command> --help` a
// command's flags.

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "tools/cli/command.h"

namespace {

std::vector<dagrad::cli::Command> Commands() {
  return {dagrad::cli::InfoCommand(), dagrad::cli::DotCommand(), dagrad::cli::TrainCommand(),
          dagrad::cli::EvalCommand(), dagrad::cli::GenerateCommand(),
          dagrad::cli::ExportCommand(), dagrad::cli::TokenizeCommand()};
}

int PrintUsage(std::ostream& out) {
  out << "usage: dagrad <command> [--flag=value ...]\n\ncommands:\n";
  for (const auto& c : Commands()) out << "  " << c.name << "\t" << c.summary << "\n";
  out << "\n`dagrad <command> --help` lists a command's flags.\n";
  return 0;
}

// FinishOutput fails a command whose output never reached stdout (a full
// disk, /dev/full), as coreutils' commands do: it had exited 0.
int FinishOutput(const std::string& name, int rc) {
  errno = 0;
  std::cout.flush();
  const bool flushed = std::fflush(stdout) == 0;
  const int error = errno;
  if (flushed && !std::ferror(stdout) && std::cout.good()) return rc;
  std::cerr << "dagrad " << name << ": cannot write to standard output"
            << (error != 0 ? std::string(": ") + std::strerror(error) : "") << "\n";
  return rc == dagrad::cli::kExitOk ? 1 : rc;
}

}  // namespace

int main(int argc, char** argv) {
  // A write past the file-size limit (ulimit -f) fails with EFBIG, which
  // the writers report, naming the file, and whose temporary file they
  // remove: SIGXFSZ would kill the process silently, the temporary kept.
  std::signal(SIGXFSZ, SIG_IGN);
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "help") == 0) {
    PrintUsage(argc < 2 ? std::cerr : std::cout);
    return argc < 2 ? dagrad::cli::kExitUsage : dagrad::cli::kExitOk;
  }
  for (const auto& command : Commands()) {
    if (command.name != std::string(argv[1])) continue;
    bool help = false;
    absl::Status st = dagrad::cli::ParseFlags(command, argc, argv, 2, &help);
    if (!st.ok()) return dagrad::cli::UsageError(command, std::string(st.message()));
    if (help) {
      dagrad::cli::PrintHelp(command);
      return dagrad::cli::kExitOk;
    }
    return FinishOutput(command.name, dagrad::cli::RunOrReportOutOfMemory(command, command.run));
  }
  std::cerr << "dagrad: unknown command '" << argv[1] << "' (try dagrad --help)\n";
  return dagrad::cli::kExitUsage;
}
