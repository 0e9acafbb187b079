#include "tests/autodiff/support/isa_check.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "engine/executor.h"
#include "engine/io/file_io.h"
#include "engine/io/safetensors.h"
#include "engine/philox.h"
#include "engine/status_macros.h"
#include "gtest/gtest.h"
#include "ops/cpu/internal/cpu_isa.h"
#include "tests/autodiff/support/op_case.h"

namespace dagrad::testing {
namespace {

constexpr char kErrorCode[] = "error_code";
constexpr char kErrorMessage[] = "error_message";

std::string SelfPath() {
  std::error_code ec;
  const std::filesystem::path p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : p.string();
}

// ReadOutputs reads what WriteCaseOutputs wrote.
absl::StatusOr<std::vector<Tensor>> ReadOutputs(const std::string& path) {
  DAGRAD_ASSIGN_OR_RETURN(SafetensorsFile f, ReadSafetensors(path));
  if (auto it = f.metadata.find(kErrorCode); it != f.metadata.end()) {
    int code = 0;
    if (!absl::SimpleAtoi(it->second, &code)) return absl::InternalError("bad error code");
    return absl::Status(static_cast<absl::StatusCode>(code), f.metadata[kErrorMessage]);
  }
  // Named by position: the format keeps no order of its own.
  std::vector<Tensor> out;
  while (const Tensor* t = f.Find(absl::StrCat(out.size()))) out.push_back(*t);
  if (out.size() != f.tensors.size()) return absl::InternalError("outputs not numbered 0..n-1");
  return out;
}

// The file descriptor on which a child answers (its stdin is the same socket).
constexpr int kReplyFd = 3;

// LevelChild is this binary run at another kernel level as a server of
// op-case outputs (ServeCaseOutputs). One per level is started on first use
// and kept until StopIsaChildren: a level then costs one process start per
// test process, not one per case (under ASan a start is about 0.3 s of CPU,
// and a shard compares hundreds of cases).
struct LevelChild {
  pid_t pid = -1;
  int socket = -1;       // requests out, replies in
  std::string log_path;  // the child's stdout and stderr
};

std::map<CpuIsa, LevelChild>& Children() {
  static auto* children = new std::map<CpuIsa, LevelChild>;
  return *children;
}

// LogTail is the end of a child's log, where a sanitizer's report is.
std::string LogTail(const LevelChild& child) {
  const std::string log = ReadFile(child.log_path).value_or("");
  constexpr size_t kTail = 8000;
  return log.size() > kTail ? log.substr(log.size() - kTail) : log;
}

// EnvironmentAt is this process's environment with DAGRAD_CPU_ISA=<isa>.
std::vector<std::string> EnvironmentAt(CpuIsa isa) {
  constexpr char kIsaVar[] = "DAGRAD_CPU_ISA=";
  std::vector<std::string> env = {absl::StrCat(kIsaVar, CpuIsaName(isa))};
  for (char** e = environ; *e != nullptr; ++e) {
    if (!absl::StartsWith(*e, kIsaVar)) env.push_back(*e);
  }
  return env;
}

absl::StatusOr<LevelChild> StartChild(CpuIsa isa) {
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
    return absl::InternalError(absl::StrCat("socketpair: ", std::strerror(errno)));
  }
  LevelChild child;
  child.log_path =
      absl::StrCat(::testing::TempDir(), "/isa_", getpid(), "_", CpuIsaName(isa), ".log");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 0);  // dup2 clears close-on-exec
  posix_spawn_file_actions_adddup2(&actions, fds[1], kReplyFd);
  posix_spawn_file_actions_addopen(&actions, 1, child.log_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  const std::string self = SelfPath();
  const std::vector<std::string> env = EnvironmentAt(isa);
  std::vector<char*> envp;
  for (const std::string& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  char server_flag[] = "--op_case_server";
  char* argv[] = {const_cast<char*>(self.c_str()), server_flag, nullptr};
  const int rc = posix_spawn(&child.pid, self.c_str(), &actions, nullptr, argv, envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    return absl::InternalError(absl::StrCat("starting '", self, "' at ", CpuIsaName(isa), ": ",
                                            std::strerror(rc)));
  }
  child.socket = fds[0];
  return child;
}

// StopChild closes the child's requests and waits for it to exit: OK when
// it exits 0 (under ASan its leak check runs at that exit).
absl::Status StopChild(CpuIsa isa, LevelChild& child) {
  close(child.socket);
  int status = 0;
  while (waitpid(child.pid, &status, 0) < 0 && errno == EINTR) {}
  const std::string log = LogTail(child);
  std::filesystem::remove(child.log_path);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return absl::OkStatus();
  const std::string how = WIFSIGNALED(status)
                              ? absl::StrCat("was killed by signal ", WTERMSIG(status))
                              : absl::StrCat("exited with status ", WEXITSTATUS(status));
  return absl::InternalError(
      absl::StrCat("the ", CpuIsaName(isa), " child (pid ", child.pid, ") ", how, ": ", log));
}

// Ask sends one request line and returns the reply line.
absl::StatusOr<std::string> Ask(const LevelChild& child, const std::string& request) {
  if (send(child.socket, request.data(), request.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(request.size())) {
    return absl::InternalError(absl::StrCat("sending a request: ", std::strerror(errno)));
  }
  std::string reply;
  char ch;
  while (true) {
    const ssize_t got = read(child.socket, &ch, 1);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return absl::InternalError("the child closed its socket");
    if (ch == '\n') return reply;
    reply.push_back(ch);
  }
}

// OutputsAt runs `c` at `isa`: here when it is this process's level, else
// in that level's child.
absl::StatusOr<absl::StatusOr<std::vector<Tensor>>> OutputsAt(CpuIsa isa, const CrossCase& c) {
  DAGRAD_ASSIGN_OR_RETURN(CpuIsaChoice choice, ChooseCpuIsa());
  if (choice.isa == isa) return CpuOutputs(c);
  auto it = Children().find(isa);
  if (it == Children().end()) {
    DAGRAD_ASSIGN_OR_RETURN(LevelChild started, StartChild(isa));
    it = Children().emplace(isa, std::move(started)).first;
  }
  static std::atomic<int> counter = 0;
  const std::string path =
      absl::StrCat(::testing::TempDir(), "/isa_", getpid(), "_", counter++, ".safetensors");
  const absl::StatusOr<std::string> reply = Ask(it->second, absl::StrCat(c.name, "\t", path, "\n"));
  if (!reply.ok()) {
    // The child died on this case: say how, and start a new one for the next.
    absl::Status ended = StopChild(isa, it->second);
    Children().erase(it);
    std::filesystem::remove(path);
    return absl::InternalError(absl::StrCat("case ", c.name, ": ", reply.status().message(),
                                            "; ", ended.message()));
  }
  absl::StatusOr<std::vector<Tensor>> got = ReadOutputs(path);
  std::filesystem::remove(path);
  if (*reply != "ok") {
    return absl::InternalError(absl::StrCat("the ", CpuIsaName(isa), " child: ", *reply));
  }
  return got;
}

absl::Status Compare(const CrossCase& c, absl::string_view level,
                     const absl::StatusOr<std::vector<Tensor>>& base,
                     const absl::StatusOr<std::vector<Tensor>>& got) {
  if (c.expect_error) {
    if (base.ok() || got.ok() || base.status() != got.status()) {
      return absl::InternalError(
          absl::StrCat("expected the same error; baseline: ", base.status().ToString(), "; ", level,
                       ": ", got.status().ToString()));
    }
    return absl::OkStatus();
  }
  if (!base.ok())
    return absl::Status(base.status().code(), absl::StrCat("baseline: ", base.status().message()));
  if (!got.ok())
    return absl::Status(got.status().code(), absl::StrCat(level, ": ", got.status().message()));
  if (base->size() != got->size()) {
    return absl::InternalError(
        absl::StrCat(level, " gave ", got->size(), " tensors, baseline ", base->size()));
  }
  DAGRAD_ASSIGN_OR_RETURN(BuiltCase b, BuildCase(c));
  const size_t per_run = b.fetches.size();
  for (size_t run = 0; per_run > 0 && run < base->size() / per_run; ++run) {
    const absl::Span<const Tensor> want(base->data() + run * per_run, per_run);
    absl::Status st = CompareFetches(c, b, want, absl::Span<const Tensor>(got->data() + run * per_run, per_run));
    if (!st.ok()) {
      return absl::InternalError(
          absl::StrCat(level, " against baseline, run ", run, ", ", st.message()));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<Tensor>> CpuOutputs(const CrossCase& c) {
  DAGRAD_ASSIGN_OR_RETURN(BuiltCase b, BuildCase(c));
  ExecutorOptions options;
  options.seed = 1234;
  options.poison_arena = true;
  options.plan.fold_constants = c.fold_constants;
  Executor cpu(*b.graph, options);
  DAGRAD_ASSIGN_OR_RETURN(auto plan, cpu.Compile(b.fetches));
  const uint64_t seed = StableHash64(c.name.data(), c.name.size());
  std::vector<Tensor> out;
  for (int run = 0; run < c.runs; ++run) {
    const RunOptions ro{.training = c.training, .step = static_cast<uint64_t>(3 + run)};
    DAGRAD_ASSIGN_OR_RETURN(std::vector<Tensor> got,
                            cpu.Run(*plan, b.builder->MakeFeeds(seed + run), ro));
    for (Tensor& t : got) out.push_back(std::move(t));
  }
  return out;
}

absl::Status WriteCaseOutputs(const std::string& name, const std::string& path) {
  for (const OpCase& c : AllOpCases()) {
    for (const OpConfig& config : c.configs) {
      for (DType d : config.dtypes) {
        if (ConfigTestName(c, config, d) != name) continue;
        const absl::StatusOr<std::vector<Tensor>> got = CpuOutputs(ToCrossCase(c, config, d));
        SafetensorsFile f;
        if (got.ok()) {
          for (size_t i = 0; i < got->size(); ++i)
            f.tensors.push_back({absl::StrCat(i), (*got)[i]});
        } else {
          f.metadata[kErrorCode] = absl::StrCat(static_cast<int>(got.status().code()));
          f.metadata[kErrorMessage] = std::string(got.status().message());
        }
        return WriteSafetensors(path, f);
      }
    }
  }
  return absl::NotFoundError(absl::StrCat("no op-case config test is named '", name, "'"));
}

int ServeCaseOutputs() {
  std::string line;
  while (std::getline(std::cin, line)) {
    const size_t tab = line.find('\t');
    const absl::Status st = tab == std::string::npos
                                ? absl::InvalidArgumentError(absl::StrCat("bad request '", line, "'"))
                                : WriteCaseOutputs(line.substr(0, tab), line.substr(tab + 1));
    std::string reply = st.ok() ? "ok" : st.ToString();
    std::replace(reply.begin(), reply.end(), '\n', ' ');
    reply.push_back('\n');
    if (write(kReplyFd, reply.data(), reply.size()) != static_cast<ssize_t>(reply.size())) return 1;
  }
  return 0;
}

absl::Status StopIsaChildren() {
  absl::Status first;
  for (auto& [isa, child] : Children()) first.Update(StopChild(isa, child));
  Children().clear();
  return first;
}

absl::Status IsaCheck(const CrossCase& c) {
  const std::vector<CpuIsa> runnable = CpuIsaRunnable();
  if (runnable.size() < 2) {
    return absl::UnavailableError("this CPU (or build) runs only the baseline kernel level");
  }
  DAGRAD_ASSIGN_OR_RETURN(auto base, OutputsAt(CpuIsa::kBaseline, c));
  for (size_t i = 1; i < runnable.size(); ++i) {
    DAGRAD_ASSIGN_OR_RETURN(auto got, OutputsAt(runnable[i], c));
    DAGRAD_RETURN_IF_ERROR(Compare(c, CpuIsaName(runnable[i]), base, got));
  }
  return absl::OkStatus();
}

}  // namespace dagrad::testing
