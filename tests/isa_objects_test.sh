#!/usr/bin/env bash
# The library holds AVX instructions only in its dispatched kernels.
#
#   isa_objects_test.sh path/to/libdagrad.a
#
# How it checks: `objdump -d` disassembles every function of every
# member of the static library, weak (inline, template) copies included,
# since the linker may pick any of those for the whole program. A function
# that uses an AVX-512 register (zmm, or a mask register %k0-%k7) must be
# in namespace dagrad::kernels::avx512; one that uses any VEX or EVEX
# instruction (every AVX, AVX2, FMA and AVX-512 instruction: the mnemonics
# starting with "v", ymm registers) must be in dagrad::kernels::avx2 or
# ::avx512. Everything else is the x86-64 baseline, which runs on any
# x86-64 CPU. Exit 77 (ctest: skipped) when objdump is missing or the
# machine is not x86-64; run it only on builds without DAGRAD_NATIVE.
set -euo pipefail
lib="$1"
if [[ "$(uname -m)" != x86_64 ]]; then
  echo "SKIP: not an x86-64 machine"; exit 77
fi
if ! command -v objdump > /dev/null; then
  echo "SKIP: objdump (binutils) not found"; exit 77
fi
# Names stay mangled so that the namespace is the prefix: _ZN6dagrad7kernels6avx512...
objdump -d --no-show-raw-insn "$lib" | awk '
  # A function: "0000000000000000 <name>:".
  /^[0-9a-f]+ <.*>:$/ {
    fn = substr($0, index($0, "<") + 1); sub(/>:$/, "", fn); functions++; next
  }
  # An instruction: "   offset:<TAB>mnemonic operands".
  /^ *[0-9a-f]+:\t/ {
    split($0, parts, "\t"); insn = parts[2]; mnemonic = insn; sub(/ .*/, "", mnemonic)
    avx512 = insn ~ /%zmm|%k[0-7]/
    vex = avx512 || mnemonic ~ /^v/ || insn ~ /%ymm/
    if (!vex) next
    if (fn ~ /^_ZN6dagrad7kernels6avx512/) next
    if (!avx512 && fn ~ /^_ZN6dagrad7kernels4avx2/) next
    if (!(fn in bad)) { bad[fn] = insn; nbad++ }
  }
  END {
    for (f in bad) print "outside its kernel level: " f "\n    first such instruction: " bad[f]
    if (functions == 0) { print "no functions disassembled"; exit 1 }
    printf "%d functions checked, %d with AVX instructions outside dagrad::kernels::{avx2,avx512}\n",
           functions, nbad
    exit nbad > 0
  }' | c++filt
