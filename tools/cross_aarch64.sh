#!/usr/bin/env bash
# Compiles the dagrad library for aarch64 with Debian's cross compiler, to
# show that it builds for ARM (NEON kernels at the baseline level):
#
#   apt-get install g++-aarch64-linux-gnu
#   bash tools/cross_aarch64.sh [out-dir]      # default build-aarch64/
#
# Every source of the library (engine/, ops/, models/, and ops/kernels/ at
# its one aarch64 level) is compiled, not linked: the third-party headers
# (Abseil, nlohmann_json, BLIS) are the host's, which are the same for every
# architecture for what dagrad uses, while linking and running the suite
# under qemu-user-static would need Debian's arm64 libraries installed
# (dpkg --add-architecture arm64), which this script leaves to the user.
# Exit status: 0 when every file compiled, 1 otherwise (each failure named).
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:-build-aarch64}"
cxx=aarch64-linux-gnu-g++
if ! command -v "$cxx" > /dev/null; then
  echo "$cxx not found: apt-get install g++-aarch64-linux-gnu" >&2
  exit 1
fi
blis_include="$(dirname "$(find /usr/include -name blis.h -print -quit)")"
mkdir -p "$out"
flags=(-std=c++20 -O2 -fPIC -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers
       -ffp-contract=off -fno-math-errno -fopenmp -I. -idirafter /usr/include
       -idirafter "$blis_include" -DDAGRAD_DOT_PROGRAM=\"\")
failed=0
compile() {  # compile SOURCE OBJECT [FLAGS...]
  local src="$1" obj="$2"
  shift 2
  if ! "$cxx" "${flags[@]}" "$@" -c "$src" -o "$obj" 2> "$obj.log"; then
    echo "FAILED: $src (see $obj.log)"
    failed=$((failed + 1))
  fi
}
count=0
for src in engine/*.cc ops/*.cc models/*.cc engine/cuda/no_cuda.cc; do
  compile "$src" "$out/$(echo "$src" | tr / _).o"
  count=$((count + 1))
done
for src in ops/kernels/*.cc; do
  compile "$src" "$out/kernels_$(basename "$src").o" -DDAGRAD_ISA=baseline
  count=$((count + 1))
done
# The kernels must be NEON code, not scalar loops.
neon=$(aarch64-linux-gnu-objdump -d "$out/kernels_small_gemm_kernel.cc.o" 2> /dev/null |
       grep -c 'fmul\s*v[0-9]*\.4s' || true)
echo "$count sources compiled for aarch64 into $out/, $failed failed;" \
     "SmallGemm kernel: $neon NEON fmul .4s instructions"
[[ $failed -eq 0 && $neon -gt 0 ]]
