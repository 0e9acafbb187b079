#include "tools/cli/command.h"

#include <algorithm>
#include <iostream>
#include <new>
#include <set>

#include "absl/flags/reflection.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/string_view.h"
#include "engine/blames_input.h"

namespace dagrad::cli {
namespace {

// The flags the last ParseFlags set.
std::set<std::string>& GivenFlags() {
  static auto* given = new std::set<std::string>();
  return *given;
}

}  // namespace

bool FlagGiven(absl::string_view name) { return GivenFlags().count(std::string(name)) > 0; }

absl::Status ParseFlags(const Command& command, int argc, char** argv, int first,
                        bool* help) {
  *help = false;
  GivenFlags().clear();
  for (int i = first; i < argc; ++i) {
    absl::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h" || arg == "--helpfull") {
      *help = true;
      continue;
    }
    if (!absl::StartsWith(arg, "--") || arg.size() == 2) {
      return absl::InvalidArgumentError(absl::StrCat("unexpected argument '", arg,
                                                     "' (flags look like --name=value)"));
    }
    arg.remove_prefix(2);
    const size_t eq = arg.find('=');
    std::string name(arg.substr(0, eq));
    std::string value;
    bool has_value = eq != absl::string_view::npos;
    if (has_value) value = std::string(arg.substr(eq + 1));
    const bool accepted = std::find(command.flags.begin(), command.flags.end(), name) !=
                          command.flags.end();
    absl::CommandLineFlag* flag = accepted ? absl::FindCommandLineFlag(name) : nullptr;
    if (flag == nullptr) {
      // --noflag for booleans.
      if (absl::StartsWith(name, "no") && !has_value) {
        const std::string positive = name.substr(2);
        if (std::find(command.flags.begin(), command.flags.end(), positive) !=
            command.flags.end()) {
          flag = absl::FindCommandLineFlag(positive);
          if (flag != nullptr && flag->IsOfType<bool>()) {
            std::string error;
            flag->ParseFrom("false", &error);
            GivenFlags().insert(positive);
            continue;
          }
        }
      }
      return absl::InvalidArgumentError(absl::StrCat("unknown flag --", name,
                                                     " (see dagrad ", command.name, " --help)"));
    }
    if (!has_value) {
      if (!flag->IsOfType<bool>()) {
        return absl::InvalidArgumentError(absl::StrCat("flag --", name, " needs a value"));
      }
      value = "true";
    }
    std::string error;
    if (!flag->ParseFrom(value, &error)) {
      return absl::InvalidArgumentError(
          absl::StrCat("flag --", name, "='", value, "': ", error));
    }
    GivenFlags().insert(name);
  }
  return absl::OkStatus();
}

absl::Status RefuseFlagsNotFor(const std::vector<std::string>& names,
                               const std::string& applies_to, const std::string& why) {
  for (const std::string& name : names) {
    const absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
    if (flag != nullptr && flag->CurrentValue() != flag->DefaultValue()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", name, " applies to ", applies_to, " only; ", why));
    }
  }
  return absl::OkStatus();
}

void PrintHelp(const Command& command) {
  std::cout << "dagrad " << command.name << ": " << command.summary << "\n\nflags:\n";
  for (const std::string& name : command.flags) {
    const absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
    if (flag == nullptr) continue;
    std::cout << "  --" << name << " (default: " << flag->DefaultValue() << ")\n      "
              << flag->Help() << "\n";
  }
}

std::string InFlagTerms(absl::string_view message) {
  return absl::StrReplaceAll(message, {{"ExecutorOptions::memory_limit_bytes", "--memory_limit_mb"},
                                       {"ExecutorOptions::check_numerics set", "--check_numerics"},
                                       {"RunConfig::lr", "--lr"},
                                       {"FitOptions::resume", "--resume"},
                                       {"FitOptions::overwrite", "--overwrite"},
                                       {"LmTrainConfig::eval_windows", "--eval_windows"}});
}

// std::cerr is unbuffered: a line written a piece at a time interleaves
// with another rank's.
void WriteError(const Command& command, absl::string_view message) {
  std::ostream& errors = command.errors != nullptr ? *command.errors : std::cerr;
  errors << absl::StrCat("dagrad ", command.name, ": ", InFlagTerms(message), "\n");
}

int UsageError(const Command& command, const std::string& message) {
  WriteError(command, message);
  return kExitUsage;
}

int ExitCode(const Command& command, const absl::Status& status) {
  return status.ok() ? kExitOk : Failure(command, status);
}

int RunOrReportOutOfMemory(const Command& command, const std::function<int()>& run) {
  try {
    return run();
  } catch (const std::bad_alloc&) {
    return Failure(command, absl::ResourceExhaustedError(
                                "out of host memory: the model, batch or data is too large for "
                                "this machine or the process's memory limit; lower --batch, "
                                "--seq_len, --dim or --layers (the files written so far are "
                                "whole)"));
  }
}

int Failure(const Command& command, const absl::Status& status) {
  WriteError(command, status.message());
  return BlamesInput(status) ? kExitUsage : kExitFailure;
}

}  // namespace dagrad::cli
