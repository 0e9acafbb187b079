// engine/plan/host_memory.h
//
// How much more host memory this process may take: the least of the
// kernel's MemAvailable (/proc/meminfo) and the room left in the process's
// memory cgroup (v2: memory.max - memory.current; v1: memory.limit_in_bytes
// - memory.usage_in_bytes). The executor compares what a plan needs with it
// before allocating (engine/plan/memory_budget.h). The files are parameters, so
// that tests can point them at fakes.
//
//   std::optional<MemoryLimit> room = HostMemoryAvailable();
//   if (room) std::cout << HumanBytes(room->bytes) << " from " << room->source;

#ifndef DAGRAD_ENGINE_PLAN_HOST_MEMORY_H_
#define DAGRAD_ENGINE_PLAN_HOST_MEMORY_H_

#include <cstdint>
#include <optional>
#include <string>

namespace dagrad {

// MemoryLimit is a number of bytes and where it came from, for messages
// ("MemAvailable in /proc/meminfo", "cgroup memory.max", ...).
struct MemoryLimit {
  int64_t bytes = 0;
  std::string source;
};

// Where HostMemoryAvailable looks.
struct HostMemoryFiles {
  std::string meminfo = "/proc/meminfo";
  std::string self_cgroup = "/proc/self/cgroup";  // "0::/path" (v2), "N:memory:/path" (v1)
  std::string cgroup_root = "/sys/fs/cgroup";     // v2 here, v1 under memory/
};

// HostMemoryAvailable returns the smallest of the limits it can read, or
// nullopt when it can read none (no /proc: another OS). A cgroup without a
// limit ("max", or v1's huge number) adds none. A cgroup directory that is
// not where /proc/self/cgroup says (a container that mounts its own cgroup
// at the root) is looked for at the root too.
std::optional<MemoryLimit> HostMemoryAvailable(const HostMemoryFiles& files = {});

}  // namespace dagrad

#endif  // DAGRAD_ENGINE_PLAN_HOST_MEMORY_H_
