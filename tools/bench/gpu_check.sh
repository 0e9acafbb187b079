#!/usr/bin/env bash
# Builds dagrad for the lent H100, checks it and times it against PyTorch,
# in one device call, and prints the comparison table last.
#
# The GPU machine reaches no package registry, so the Debian packages the
# build needs travel with the call as .deb files. Here, once:
#   bash tools/bench/gpu_check.sh fetch           # downloads them into .debs/
# Then through the device tool, from the repository root:
#   run(command="bash tools/bench/gpu_check.sh", carry=[".debs"])
#
# Phases (default: all of them, in this order; name some to run only those):
#   build     unpack .debs/ into /tmp/dagrad-deps (never into /), configure
#             with CUDA for sm_90 (plus compute_90 PTX), build into build-gpu/
#   test      every test whose name mentions CUDA, and the recorded-run tests:
#             each op and gradient against the CPU on poisoned outputs,
#             dropout bit-identity, 100 trainer steps against the CPU, CUDA
#             graph replays against kernel-by-kernel runs
#   sanitize  compute-sanitizer memcheck over the same tests
#   bench     tools/bench/cuda_bench and tools/bench/torch_cuda_anchor.py,
#             then tools/bench/gpu_compare.py's table
# Logs go to $OUT (the device tool brings them back), else to out/gpu_check.
# $PYTHON (default python3) must have PyTorch with CUDA for the bench phase.
set -uo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
out=${OUT:-$root/out/gpu_check}
mkdir -p "$out"
deps=/tmp/dagrad-deps
build=build-gpu
debs=(libabsl-dev libabsl20220623 libblis-openmp-dev libblis4-openmp libgtest-dev libgmock-dev
      libbenchmark-dev libbenchmark1debian nlohmann-json3-dev)
cuda_tests='Cuda|RecordedRuns'
# The build tree's RPATH names these too; this covers a phase run alone.
export LD_LIBRARY_PATH="$deps/usr/lib/x86_64-linux-gnu:$deps/usr/lib/x86_64-linux-gnu/blis-openmp${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
gtest_cuda_filter='*Cuda*:RecordedRuns.*'

phases=("$@")
if ((${#phases[@]} == 0)); then phases=(build test sanitize bench); fi

fail() {
  echo "gpu_check: $*" >&2
  exit 1
}

fetch() {
  mkdir -p .debs
  (cd .debs && apt-get download "${debs[@]}") || fail "apt-get download failed"
  du -sh .debs
}

build() {
  for tool in nvcc cmake g++; do
    command -v "$tool" >/dev/null || fail "$tool is not on PATH"
  done
  ls .debs/*.deb >/dev/null 2>&1 || fail ".debs/ is empty: run 'bash tools/bench/gpu_check.sh fetch' here and carry .debs"
  mkdir -p "$deps"
  for f in .debs/*.deb; do dpkg-deb -x "$f" "$deps" || fail "cannot unpack $f"; done
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
  nvcc --version | tail -1
  local generator=()
  command -v ninja >/dev/null && generator=(-G Ninja)
  cmake -S . -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DDAGRAD_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_PREFIX_PATH="$deps/usr" \
    >"$out/configure.log" 2>&1 || { tail -30 "$out/configure.log"; fail "configure failed"; }
  cmake --build "$build" -j"$(nproc)" >"$out/build.log" 2>&1 ||
    { grep -m20 -A5 "error" "$out/build.log"; fail "build failed (log: build.log)"; }
  echo "built: $("$build/tools/dagrad" info | grep '^cuda')"
}

run_tests() {
  ctest --test-dir "$build" -R "$cuda_tests" -j4 --output-on-failure >"$out/ctest_cuda.log" 2>&1
  local rc=$?
  grep -E "tests passed|tests failed" "$out/ctest_cuda.log"
  echo "skipped: $(grep -c "(Skipped)" "$out/ctest_cuda.log") (log: ctest_cuda.log)"
  grep -E "\(Failed\)|\(Timeout\)" "$out/ctest_cuda.log" | head -20
  return $rc
}

sanitize() {
  command -v compute-sanitizer >/dev/null || fail "compute-sanitizer is not on PATH"
  timeout 420 compute-sanitizer --tool memcheck --error-exitcode 3 \
    "$build/tests/dagrad_tests" --gtest_filter="$gtest_cuda_filter" --gtest_brief=1 \
    >"$out/memcheck.log" 2>&1
  local rc=$?
  tail -5 "$out/memcheck.log"
  case $rc in
    0) echo "memcheck: clean" ;;
    3) echo "memcheck: errors (log: memcheck.log)" ;;
    124) echo "memcheck: stopped after 420 s (log: memcheck.log)" ;;
    *) echo "memcheck: exit $rc (log: memcheck.log)" ;;
  esac
  return $rc
}

bench() {
  "$build/tools/cuda_bench" --iters=50 --warmup=10 | tee "$out/dagrad.jsonl" ||
    fail "cuda_bench failed"
  "${PYTHON:-python3}" tools/bench/torch_cuda_anchor.py --iters 50 --warmup 10 | tee "$out/torch.jsonl" ||
    fail "torch_cuda_anchor.py failed"
  "${PYTHON:-python3}" tools/bench/gpu_compare.py "$out/dagrad.jsonl" "$out/torch.jsonl" | tee "$out/table.txt"
}

status=0
for phase in "${phases[@]}"; do
  echo "== $phase"
  case "$phase" in
    fetch) fetch ;;
    build) build ;;
    test) run_tests || status=1 ;;
    sanitize) sanitize || status=1 ;;
    bench) bench ;;
    *) fail "unknown phase '$phase' (fetch, build, test, sanitize, bench)" ;;
  esac
done
exit $status
