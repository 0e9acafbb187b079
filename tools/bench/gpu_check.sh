#!/usr/bin/env bash
# Builds dagrad for a GPU, checks it and times it against PyTorch, in stages
# that fit the lent machine's calls (at most 10 minutes a command, about
# 15 minutes of device time a session). One call's stages together stop
# within DAGRAD_GPU_CHECK_BUDGET seconds (default 470, under the 8 minutes
# a first call may take), each stage leaving the time the stages after it
# in the same call reserve (bench: 210 s, of which PyTorch's compiled cases
# take about 60).
#
# The GPU machine reaches no package registry, so the Debian packages the
# build needs travel with each call as .deb files (about 9 MB, gitignored).
# Here, once:
#   bash tools/bench/gpu_check.sh fetch        # downloads them into .debs/
# Then through the device tool, from the repository root, two calls back
# to back (tools/bench/PERFORMANCE.md gives the exact calls):
#   bash tools/bench/gpu_check.sh build test bench   # build, CUDA tests, timings
#   bash tools/bench/gpu_check.sh sanitize           # compute-sanitizer
# The build folder (build-gpu/, ignored by git) stays on the machine while
# it is warm (30 s after a call); a stage that finds no build builds first.
# On a machine of one's own with no time limit: gpu_check.sh all.
#
# Stages:
#   fetch     (here) apt-get download the packages into .debs/
#   build     unpack .debs/ into /tmp/dagrad-deps (never into /), configure
#             for sm_90 (plus compute_90 PTX) with device line tables
#             (DAGRAD_CUDA_LINEINFO, so the sanitizer names file:line),
#             build the test binaries that hold CUDA tests, cuda_bench and
#             the CLI into build-gpu/
#   test      the CUDA tests and the recorded-run tests, one process per
#             layer's test binary that holds some (dagrad_ops_tests,
#             dagrad_autodiff_tests, dagrad_models_tests, dagrad_cli_tests:
#             one CUDA context each, not one per test): each op and
#             gradient against the CPU on poisoned outputs, dropout bit for
#             bit, 100 trainer steps against the CPU, CUDA-graph replays
#             against kernel-by-kernel runs, `dagrad train` and `dagrad
#             eval` on the GPU (CudaCli.*)
#   sanitize  compute-sanitizer memcheck over the same tests less the
#             largest and longest, binary after binary, until 90 s before
#             the budget; then
#             racecheck over the kernels with shared-memory trees in the
#             time left
#   bench     tools/bench/cuda_bench and tools/bench/torch_cuda_anchor.py
#             (eager, then torch.compile + fused Adam), then
#             tools/bench/gpu_compare.py's table (printed last)
# Logs go to $OUT (the device tool brings them back), else to
# out/gpu_check. $PYTHON (default python3) must have PyTorch with CUDA for
# the bench stage. DAGRAD_GPU_TEST_FILTER and DAGRAD_MEMCHECK_FILTER
# replace the gtest filters (e.g. to leave out a test that crashed).
set -uo pipefail

script=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
start=$SECONDS
budget=${DAGRAD_GPU_CHECK_BUDGET:-470}
out=${OUT:-$root/out/gpu_check}
deps=/tmp/dagrad-deps
build=build-gpu
debs=(libabsl-dev libabsl20220623 libblis-openmp-dev libblis4-openmp libgtest-dev libgmock-dev
      libbenchmark-dev libbenchmark1debian nlohmann-json3-dev)
test_filter=${DAGRAD_GPU_TEST_FILTER:-'*Cuda*:RecordedRuns.*'}
# The test binaries (tests/CMakeLists.txt) that hold CUDA or recorded-run
# tests: CudaTransfers; the op cases and CudaAttention; the composite
# cases, Cuda{Device,Training,...} and RecordedRuns; CudaCli.
test_bins=(dagrad_ops_tests dagrad_autodiff_tests dagrad_models_tests dagrad_cli_tests)
# Under memcheck every kernel runs 10-100 times slower: leave out the
# cases over tens of millions of elements and the training runs (100 and
# 300 steps).
memcheck_filter=${DAGRAD_MEMCHECK_FILTER:-'*Cuda*:RecordedRuns.*:-*past_grid_limit*:*sum_large_f32*:CudaTraining.HundredTrainerSteps*:CudaCli.DefaultTraining*'}
# Kernels whose blocks combine through shared memory (BlockReduce and
# column tiles): reductions, softmax, layer norm, cross-entropy.
racecheck_filter='*MatchesCpu/*_paths_*:*MatchesCpu/*long_rows*:*MatchesCpu/*softmax*:*MatchesCpu/layer_norm*:*MatchesCpu/cross_entropy*'
# The build tree's RPATH names these too; this covers a stage run alone.
export LD_LIBRARY_PATH="$deps/usr/lib/x86_64-linux-gnu:$deps/usr/lib/x86_64-linux-gnu/blis-openmp${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
command -v nvcc >/dev/null || export PATH="/usr/local/cuda/bin:$PATH"

fail() {
  echo "gpu_check: $*" >&2
  exit 1
}

# reserve: the seconds the stages after the running one keep for
# themselves (set by the loop at the end).
reserve=0

# left prints the seconds of this call's budget that the running stage may
# spend: the unspent budget less `reserve`, at least 1.
left() {
  local s=$((budget - (SECONDS - start) - reserve))
  echo $((s > 1 ? s : 1))
}

# reserved_after I prints the seconds that stages I+1.. of this call keep.
reserved_after() {
  local i s=0
  for ((i = $1 + 1; i < ${#phases[@]}; ++i)); do
    [[ ${phases[i]} == bench ]] && s=$((s + 210))
  done
  echo $s
}

fetch() {
  mkdir -p .debs
  (cd .debs && apt-get download "${debs[@]}") || fail "apt-get download failed"
  check_debs
  du -sh .debs
}

# check_debs fails at once, before the machine does any work, when a
# package is missing from .debs/.
check_debs() {
  local p
  for p in "${debs[@]}"; do
    compgen -G ".debs/${p}_*.deb" >/dev/null ||
      fail ".debs/ lacks $p: run 'bash tools/bench/gpu_check.sh fetch' on the machine without the GPU first, then carry .debs"
  done
}

unpack() {
  [[ -d $deps/usr ]] && return
  mkdir -p "$deps"
  local f
  for f in .debs/*.deb; do dpkg-deb -x "$f" "$deps" || fail "cannot unpack $f"; done
}

build() {
  for tool in nvcc cmake g++; do
    command -v "$tool" >/dev/null || fail "$tool is not on PATH"
  done
  unpack
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null ||
    echo "no GPU visible: the CUDA tests will skip"
  nvcc --version | tail -1
  local generator=()
  command -v ninja >/dev/null && generator=(-G Ninja)
  cmake -S . -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DDAGRAD_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES=90 -DDAGRAD_CUDA_LINEINFO=ON -DCMAKE_PREFIX_PATH="$deps/usr" \
    >"$out/configure.log" 2>&1 || { tail -30 "$out/configure.log"; fail "configure failed"; }
  # Only what the stages run: the tests, the benchmark and the CLI.
  timeout "$(left)" cmake --build "$build" -j"$(nproc)" --target \
    "${test_bins[@]}" cuda_bench dagrad_cli \
    >"$out/build.log" 2>&1 ||
    { grep -m20 -A5 "error" "$out/build.log"; tail -5 "$out/build.log"; fail "build failed or ran past the budget (log: build.log)"; }
  echo "built: $("$build/tools/dagrad" info | grep '^cuda')"
}

# built builds first when no build is there (the machine went back between
# calls, or the stage runs alone).
built() {
  unpack
  local bin
  for bin in "${test_bins[@]/#/tests/}" tools/cuda_bench; do
    [[ -x $build/$bin ]] && continue
    echo "no build in $build/: building first"
    build
    return
  done
}

# gtest_summary prints a gtest log's totals and failures.
gtest_summary() {
  grep -E "^\[  (PASSED  |FAILED  |SKIPPED )\] [0-9]+ test" "$1"
  grep -E "^\[  FAILED  \] [A-Za-z]" "$1" | sort -u | head -30
}

run_tests() {
  built
  local bin rc status=0
  for bin in "${test_bins[@]}"; do
    timeout --kill-after=10 "$(left)" "$build/tests/$bin" --gtest_filter="$test_filter" \
      --gtest_output="xml:$out/$bin.xml" >"$out/$bin.log" 2>&1
    rc=$?
    echo "$bin:"
    gtest_summary "$out/$bin.log"
    if ((rc == 124 || rc == 137)); then
      echo "tests: stopped at the budget; last started: $(grep '^\[ RUN' "$out/$bin.log" | tail -1)"
    elif ((rc > 1)); then
      echo "tests: exit $rc; last started: $(grep '^\[ RUN' "$out/$bin.log" | tail -1)"
    fi
    ((rc == 0)) || status=$rc
  done
  echo "tests: exit $status (logs: <binary>.log, <binary>.xml)"
  return $status
}

# sanitizer TOOL FILTER LOG CAP: compute-sanitizer over each test binary
# in turn (its log LOG less .log, then _<binary>.log), all of them within
# CAP seconds.
sanitizer() {
  local tool=$1 filter=$2 log=${3%.log} cap=$4
  local deadline=$((SECONDS + cap)) bin rc status=0
  for bin in "${test_bins[@]}"; do
    local s=$((deadline - SECONDS))
    ((s > 1)) || { echo "$tool: $bin skipped, the time is spent"; continue; }
    timeout --kill-after=10 "$s" compute-sanitizer --tool "$tool" --error-exitcode 3 \
      --print-limit 50 "$build/tests/$bin" --gtest_filter="$filter" --gtest_brief=1 \
      >"$out/${log}_$bin.log" 2>&1
    rc=$?
    grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$out/${log}_$bin.log" | tail -2
    case $rc in
      0) echo "$tool $bin: clean" ;;
      3) echo "$tool $bin: errors (log: ${log}_$bin.log)"
         grep -m20 -E "^========= +(Invalid|Error|Race|Program hit|at )" "$out/${log}_$bin.log" ;;
      124 | 137) echo "$tool $bin: stopped at the budget (log: ${log}_$bin.log)" ;;
      *) echo "$tool $bin: exit $rc (log: ${log}_$bin.log)" ;;
    esac
    ((rc == 0)) || status=$rc
  done
  return $status
}

sanitize() {
  command -v compute-sanitizer >/dev/null || fail "compute-sanitizer is not on PATH"
  built
  local status=0
  # memcheck first, stopped 90 s before the budget so racecheck gets those.
  sanitizer memcheck "$memcheck_filter" memcheck.log $(($(left) > 120 ? $(left) - 90 : $(left))) ||
    status=1
  if (($(left) > 30)); then
    sanitizer racecheck "$racecheck_filter" racecheck.log "$(left)" || status=1
  else
    echo "racecheck: skipped, $(left) s left"
  fi
  return $status
}

bench() {
  built
  timeout "$(left)" "$build/tools/cuda_bench" --iters=50 --warmup=10 2>&1 | tee "$out/dagrad.jsonl" ||
    fail "cuda_bench failed or ran past the budget"
  timeout "$(left)" "${PYTHON:-python3}" tools/bench/torch_cuda_anchor.py --iters 50 --warmup 10 2>&1 |
    tee "$out/torch.jsonl" || fail "torch_cuda_anchor.py failed or ran past the budget"
  "${PYTHON:-python3}" tools/bench/gpu_compare.py "$out/dagrad.jsonl" "$out/torch.jsonl" |
    tee "$out/table.txt"
}

phases=("$@")
if ((${#phases[@]} == 0)) || [[ ${phases[*]} == -h || ${phases[*]} == --help ]]; then
  sed -n '2,/^set -uo/p' "$script" | sed '$d'
  exit 2
fi
if [[ ${phases[*]} == all ]]; then
  budget=100000
  phases=(build test sanitize bench)
fi
# Every stage is checked before any runs: a misspelt last stage would
# otherwise be found after the others had spent the device's time.
for phase in "${phases[@]}"; do
  case "$phase" in
    fetch | build | test | sanitize | bench) ;;
    all) fail "'all' runs alone (it is build test sanitize bench)" ;;
    *) fail "unknown stage '$phase' (fetch, build, test, sanitize, bench, all)" ;;
  esac
done
mkdir -p "$out"
[[ ${phases[*]} == fetch ]] || check_debs

status=0
for i in "${!phases[@]}"; do
  phase=${phases[i]}
  reserve=$(reserved_after "$i")
  begun=$SECONDS
  echo "== $phase"
  case "$phase" in
    fetch) fetch ;;
    build) build ;;
    test) run_tests || status=1 ;;
    sanitize) sanitize || status=1 ;;
    bench) bench ;;
  esac
  echo "== $phase: $((SECONDS - begun)) s (this call: $((SECONDS - start)) s of $budget)"
done
exit $status
