// The `dagrad` command-line program.
//
//   dagrad <command> [--flag=value ...]
//
// `dagrad --help` lists the commands, `dagrad <command> --help` a
// command's flags.

#include <cstring>
#include <iostream>
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

}  // namespace

int main(int argc, char** argv) {
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
    return dagrad::cli::RunOrReportOutOfMemory(command, command.run);
  }
  std::cerr << "dagrad: unknown command '" << argv[1] << "' (try dagrad --help)\n";
  return dagrad::cli::kExitUsage;
}
