// tools/cli/command.h
//
// The `dagrad` program's subcommands and its strict flag parsing. Every
// subcommand names the flags it accepts; anything else — an unknown flag, a
// flag of another subcommand, a value that does not parse, a positional
// argument — is a usage error: one line on stderr and exit code 2.
//
//   dagrad info
//   dagrad dot --model=mha --out=mha.dot --render=svg --collapse=mha
//   dagrad train --task=reverse --steps=400 --out=runs/reverse

#ifndef DAGRAD_TOOLS_CLI_COMMAND_H_
#define DAGRAD_TOOLS_CLI_COMMAND_H_

#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace dagrad::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;  // the work itself failed
inline constexpr int kExitUsage = 2;    // bad command line or input

struct Command {
  const char* name;
  const char* summary;
  std::vector<std::string> flags;  // names of the absl flags it accepts
  int (*run)();                    // after flags are parsed
  // Where its errors go (WriteError); null is stderr. Each replica of
  // `train --replicas` writes to a buffer of its own, printed once all end.
  std::ostream* errors = nullptr;
};

// The subcommands, defined in their own files.
Command InfoCommand();
Command DotCommand();
Command TrainCommand();
Command EvalCommand();
Command GenerateCommand();
Command ExportCommand();
Command TokenizeCommand();

// ParseFlags sets the command's flags from argv[first...]; on a usage error
// returns InvalidArgument with the one-line message. Sets *help when --help
// was given.
absl::Status ParseFlags(const Command& command, int argc, char** argv, int first,
                        bool* help);

// FlagGiven returns whether the last ParseFlags set flag `name` from the
// command line, to any value, its default included: for a flag whose
// absence means more than its default (--dropout of a fine-tune: without
// it, config.json's dropouts), where "value != default" would miss
// --dropout=0.1.
bool FlagGiven(absl::string_view name);

// RefuseFlagsNotFor returns InvalidArgument naming the first of `names`
// whose value is not its default, "--vocab applies to <applies_to> only",
// then `why`: a flag the run would ignore.
absl::Status RefuseFlagsNotFor(const std::vector<std::string>& names,
                               const std::string& applies_to, const std::string& why);

// PrintHelp writes the command's summary and flags with their defaults.
void PrintHelp(const Command& command);

// InFlagTerms rewrites the library options a message names as the flags
// that set them ("ExecutorOptions::memory_limit_bytes" -> "--memory_limit_mb"):
// the library's errors name its options, the program's users know its flags.
std::string InFlagTerms(absl::string_view message);

// WriteError prints "dagrad <command>: <message>" (in flag terms) on
// `command`'s `errors`, or std::cerr, as one write: two ranks' lines do not
// interleave.
void WriteError(const Command& command, absl::string_view message);

// UsageError prints "dagrad <command>: <message>" (WriteError) and
// returns 2.
int UsageError(const Command& command, const std::string& message);
// Failure prints "dagrad <command>: <status message>" and returns 1, or 2
// when the status is InvalidArgument/NotFound/DataLoss/FailedPrecondition/
// OutOfRange/Unimplemented/PermissionDenied (the user's input was at fault).
int Failure(const Command& command, const absl::Status& status);
// ExitCode returns kExitOk for an OK status, else Failure's code (and
// message): how a command written over absl::Status ends.
int ExitCode(const Command& command, const absl::Status& status);
// RunOrReportOutOfMemory returns run(), or, when it throws std::bad_alloc
// (the host ran out of memory, or out of the process's limit), Failure with
// a message that says so and what to lower: exit 1, not an abort. What was
// written before (checkpoints) is whole: files are written atomically.
int RunOrReportOutOfMemory(const Command& command, const std::function<int()>& run);

}  // namespace dagrad::cli

#endif  // DAGRAD_TOOLS_CLI_COMMAND_H_
