// RenderDot: running Graphviz's dot as a child process (declared in dot.h).

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "engine/dot/dot.h"
#include "engine/io/file_io.h"
#include "engine/io/utf8.h"

extern char** environ;

#ifndef DAGRAD_DOT_PROGRAM
#define DAGRAD_DOT_PROGRAM ""
#endif

namespace dagrad {
namespace {

// WithoutScalingNotice drops the line dot prints when a bitmap is over
// cairo's 32767 pixels and it draws it scaled down to fit: the image is
// whole, not another drawing than was asked.
std::string WithoutScalingNotice(absl::string_view output) {
  std::vector<absl::string_view> kept;
  for (absl::string_view line : absl::StrSplit(output, '\n')) {
    if (!absl::StrContains(line, "graph is too large for cairo-renderer bitmaps")) kept.push_back(line);
  }
  return absl::StrJoin(kept, "\n");
}

// dot's messages are short; a runaway one is cut here.
constexpr size_t kMaxCapturedBytes = 64 * 1024;

struct ChildResult {
  int wait_status = 0;
  std::string output;  // stdout and stderr, interleaved
};

// Run starts `argv` with stdin from /dev/null and stdout and stderr into
// one pipe, reads the pipe to its end (so a chatty child cannot block on a
// full pipe) and waits for it. The error is posix_spawn's errno.
absl::StatusOr<ChildResult> Run(const std::vector<std::string>& argv, int& spawn_errno) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    return absl::ErrnoToStatus(errno, "RenderDot: cannot create a pipe");
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  spawn_errno = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(fds[1]);
  if (spawn_errno != 0) {
    ::close(fds[0]);
    return absl::ErrnoToStatus(spawn_errno, absl::StrCat("cannot run '", argv[0], "'"));
  }
  ChildResult result;
  char buf[4096];
  while (true) {
    const ssize_t n = ::read(fds[0], buf, sizeof(buf));
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      break;  // the child's exit status still tells whether it worked
    }
    const size_t room = kMaxCapturedBytes - std::min(kMaxCapturedBytes, result.output.size());
    result.output.append(buf, std::min(room, static_cast<size_t>(n)));
  }
  ::close(fds[0]);
  while (::waitpid(pid, &result.wait_status, 0) < 0) {
    if (errno != EINTR) return absl::ErrnoToStatus(errno, "RenderDot: waitpid failed");
  }
  return result;
}

}  // namespace

std::string DotProgram() {
  const std::string built = DAGRAD_DOT_PROGRAM;
  if (!built.empty() && ::access(built.c_str(), X_OK) == 0) return built;
  // PATH unset: the default search path, which posix_spawnp uses then too.
  const char* env = std::getenv("PATH");
  char default_path[256] = "";
  if (env == nullptr) ::confstr(_CS_PATH, default_path, sizeof(default_path));
  const std::string path = env != nullptr ? env : default_path;
  for (absl::string_view dir : absl::StrSplit(path, ':')) {
    const std::string candidate = absl::StrCat(dir, "/dot");
    if (!dir.empty() && ::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

absl::Status RenderDot(const std::string& dot_path, const std::string& format,
                       const std::string& out_path, const std::string& dot_program) {
  if (format != "svg" && format != "png") {
    return absl::InvalidArgumentError(absl::StrCat(
        "RenderDot: format ", QuotedText(format), " is not \"svg\" or \"png\""));
  }
  if (const int fd = ::open(dot_path.c_str(), O_RDONLY | O_CLOEXEC); fd < 0) {
    return absl::ErrnoToStatus(errno, absl::StrCat("RenderDot: cannot read '", dot_path, "'"));
  } else {
    ::close(fd);
  }
  std::string program = dot_program.empty() ? DotProgram() : dot_program;
  if (program.empty()) program = "dot";  // absent: spawning it says so
  // Creating the temporary file here reports an unwritable destination
  // against `out_path` (dot would name the temporary file); O_EXCL makes the
  // name ours, and dot's -o then overwrites it.
  const std::string tmp = TemporaryPathFor(out_path);
  if (const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666); fd < 0) {
    return absl::ErrnoToStatus(errno, absl::StrCat("RenderDot: cannot write '", out_path, "'"));
  } else {
    ::close(fd);
  }
  // A path that begins with '-' would read as one of dot's options.
  const std::string input = absl::StartsWith(dot_path, "-") ? "./" + dot_path : dot_path;
  const std::string command = absl::StrCat(program, " -T", format, " '", input, "'");
  int spawn_errno = 0;
  absl::StatusOr<ChildResult> child =
      Run({program, "-T" + format, "-o", tmp, input}, spawn_errno);
  if (!child.ok()) {
    ::unlink(tmp.c_str());
    if (spawn_errno == ENOENT || spawn_errno == EACCES || spawn_errno == ENOEXEC) {
      return absl::UnavailableError(absl::StrCat(
          "RenderDot: Graphviz is not available (", child.status().message(),
          "); install it (apt-get install graphviz) or render '", dot_path, "' elsewhere"));
    }
    return child.status();
  }
  const int ws = child->wait_status;
  const std::string output = PrintableText(
      absl::StripTrailingAsciiWhitespace(WithoutScalingNotice(child->output)));
  absl::Status status;
  if (WIFSIGNALED(ws)) {
    status = absl::InternalError(absl::StrCat("RenderDot: `", command, "` was killed by signal ",
                                              WTERMSIG(ws), ": ", output));
  } else if (WEXITSTATUS(ws) != 0) {
    status = absl::InvalidArgumentError(absl::StrCat(
        "RenderDot: `", command, "` failed (exit status ", WEXITSTATUS(ws), "): ", output));
  } else if (!output.empty()) {
    // dot exits 0 after warnings (an unknown attribute, a bad shape, a
    // label it could not lay out) and draws something else than was asked.
    status = absl::InvalidArgumentError(
        absl::StrCat("RenderDot: `", command, "` printed warnings: ", output));
  } else if (::rename(tmp.c_str(), out_path.c_str()) != 0) {
    status = absl::ErrnoToStatus(
        errno, absl::StrCat("RenderDot: cannot rename '", tmp, "' to '", out_path, "'"));
  }
  if (!status.ok()) ::unlink(tmp.c_str());
  return status;
}

}  // namespace dagrad
