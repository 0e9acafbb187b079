#!/usr/bin/env bash
# Builds dagrad for aarch64 with Debian's cross compiler and runs its test
# suite under qemu-user (NEON kernels at the baseline level, BLIS's own
# aarch64 kernel set):
#
#   dpkg --add-architecture arm64 && apt-get update
#   apt-get install g++-aarch64-linux-gnu qemu-user-static libabsl-dev:arm64 \
#     libblis-dev:arm64 libgtest-dev:arm64 libgmock-dev:arm64 nlohmann-json3-dev
#   bash tools/cross_aarch64.sh [gtest filter]     # build-aarch64/, the suite (below)
#
# The build uses tools/cmake/aarch64-linux-gnu.cmake, whose emulator runs
# gtest's test discovery and the tests that start the `dagrad` CLI. The
# suite runs as one process per layer's test binary (dagrad_engine_tests,
# dagrad_ops_tests, ...: a qemu start each instead of one per test, about
# 35 s on 2 cores), less one test that cannot pass under qemu-user (see
# `filter`); a gtest filter such as 'CpuIsa.*:Softmax*' replaces that
# default in every binary. Without the arm64 libraries (a mirror that serves
# no arm64, or no dpkg), the script only compiles every library source for
# aarch64 against the host's headers, as a check that the code builds for
# ARM. Not part of .ci/run: too slow for every run.
# Exit status: 0 when everything built and every test run passed.
set -uo pipefail
cd "$(dirname "$0")/.."
out=build-aarch64
# Left out by default: DotRender.MissingGraphvizIsUnavailable expects
# posix_spawnp to report a missing program as ENOENT, which glibc learns
# from its vfork-like child; qemu-user runs that child as a plain fork, so
# the error arrives as exit status 127 instead (a qemu-user limitation).
filter="${1:-*-DotRender.MissingGraphvizIsUnavailable}"
cxx=aarch64-linux-gnu-g++
if ! command -v "$cxx" > /dev/null; then
  echo "$cxx not found: apt-get install g++-aarch64-linux-gnu" >&2
  exit 1
fi

have_arm64_libs() {
  [[ -d /usr/lib/aarch64-linux-gnu/cmake/absl && -d /usr/lib/aarch64-linux-gnu/cmake/GTest &&
     -f /usr/include/aarch64-linux-gnu/blis-openmp/blis.h ]] &&
    command -v qemu-aarch64-static > /dev/null
}

# compile_only: every library source compiled (not linked) for aarch64.
compile_only() {
  echo "arm64 libraries or qemu-aarch64-static missing: compiling only (see the header)"
  local blis_include failed=0 count=0
  blis_include="$(dirname "$(find /usr/include -name blis.h -print -quit)")"
  mkdir -p "$out/compile-only"
  local flags=(-std=c++20 -O2 -fPIC -Wall -Wextra -Wno-unused-parameter
               -Wno-missing-field-initializers -ffp-contract=off -fno-math-errno -fopenmp -I.
               -idirafter /usr/include -idirafter "$blis_include" -DDAGRAD_DOT_PROGRAM=\"\")
  compile() {  # compile SOURCE OBJECT [FLAGS...]
    local src="$1" obj="$2"
    shift 2
    if ! "$cxx" "${flags[@]}" "$@" -c "$src" -o "$obj" 2> "$obj.log"; then
      echo "FAILED: $src (see $obj.log)"
      failed=$((failed + 1))
    fi
    count=$((count + 1))
  }
  # Every layer's sources, in every folder, but the optional parts (CUDA,
  # MPI, ONNX: each needs its own headers) and the kernels, compiled below
  # per level.
  local sources
  mapfile -t sources < <(find engine ops models -name '*.cc' | sort |
    grep -v -E '^(engine/mpi|engine/cuda|ops/cuda|ops/onnx)/|^ops/cpu/kernels/')
  for src in "${sources[@]}" engine/cuda/no_cuda.cc; do
    compile "$src" "$out/compile-only/$(echo "$src" | tr / _).o"
  done
  for src in ops/cpu/kernels/*.cc; do
    [[ $src == *_bf16_kernel.cc ]] && continue  # the x86 avx512 level's alone (isa_kernels.cmake)
    compile "$src" "$out/compile-only/kernels_$(basename "$src").o" -DDAGRAD_ISA=baseline
  done
  echo "$count sources compiled for aarch64, $failed failed"
  [[ $failed -eq 0 ]]
}

if ! have_arm64_libs; then
  compile_only
  exit $?
fi

mkdir -p "$out"
cmake -S . -B "$out" -DCMAKE_TOOLCHAIN_FILE=tools/cmake/aarch64-linux-gnu.cmake \
  -DCMAKE_BUILD_TYPE=Release -DDAGRAD_CUDA=OFF -DDAGRAD_BUILD_BENCHMARKS=OFF > "$out/configure.log" 2>&1 ||
  { echo "configure failed: see $out/configure.log"; exit 1; }
cmake --build "$out" -j"$(nproc)" --target dagrad_test_binaries dagrad_cli ||
  { echo "build failed"; exit 1; }
# The kernels must be NEON code, not scalar loops.
neon=$(aarch64-linux-gnu-objdump -d "$out"/CMakeFiles/dagrad_kernels_baseline.dir/ops/cpu/kernels/small_gemm_kernel.cc.o |
       grep -c 'fmul\s*v[0-9]*\.4s' || true)
echo "SmallGemm kernel: $neon NEON fmul .4s instructions"
[[ $neon -gt 0 ]] || { echo "the aarch64 kernels are not NEON code"; exit 1; }
qemu-aarch64-static -L / "$out/tools/dagrad" info
start=$SECONDS
status=0
for bin in "$out"/tests/dagrad_*_tests; do
  echo "== ${bin##*/}"
  (cd "$out/tests" && qemu-aarch64-static -L / "./${bin##*/}" --gtest_brief=1 --gtest_filter="$filter") ||
    status=1
done
echo "aarch64 suite under qemu: exit $status after $((SECONDS - start)) s (filter '$filter')"
exit $status
