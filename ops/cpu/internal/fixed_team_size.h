// ops/cpu/internal/fixed_team_size.h
//
// FixedTeamSize: while it lives, this thread's OpenMP teams are never
// dynamic (OMP_DYNAMIC=true lets libgomp give a team fewer threads than
// asked, and BLIS aborts on that); the caller's own setting is back after.
// For the .cc files that start OpenMP teams (ParallelFor, BLIS products):
// installed headers do not include <omp.h>.
//
//   const int threads = 4;  // NumThreads()
//   const FixedTeamSize fixed;
//   #pragma omp parallel num_threads(threads)  // exactly 4, at most OMP_THREAD_LIMIT
//   { }

#ifndef DAGRAD_OPS_CPU_INTERNAL_FIXED_TEAM_SIZE_H_
#define DAGRAD_OPS_CPU_INTERNAL_FIXED_TEAM_SIZE_H_

#include <omp.h>

namespace dagrad {

class FixedTeamSize {
 public:
  FixedTeamSize() : saved_(omp_get_dynamic()) { omp_set_dynamic(0); }
  ~FixedTeamSize() { omp_set_dynamic(saved_); }
  FixedTeamSize(const FixedTeamSize&) = delete;
  FixedTeamSize& operator=(const FixedTeamSize&) = delete;

 private:
  const int saved_;
};

}  // namespace dagrad

#endif  // DAGRAD_OPS_CPU_INTERNAL_FIXED_TEAM_SIZE_H_
