#!/usr/bin/env bash
# The library holds AVX instructions only in its dispatched kernels.
#
#   isa_objects_test.sh path/to/libdagrad_engine.a path/to/libdagrad_ops.a ...
#
# How it checks: `objdump -d` disassembles every function of every
# member of the static library, weak (inline, template) copies included,
# since the linker may pick any of those for the whole program. A function
# that uses an AVX-512 register (zmm, or a mask register %k0-%k7) must be
# in namespace dagrad::kernels::avx512; one that uses any VEX or EVEX
# instruction (every AVX, AVX2, FMA and AVX-512 instruction: the mnemonics
# starting with "v", ymm registers) must be in dagrad::kernels::avx2 or
# ::avx512, or have internal linkage inside that level's object file (see
# below). Everything else is the x86-64 baseline, which runs on any x86-64
# CPU. Exit 77 (ctest: skipped) when objdump is missing or the
# machine is not x86-64; run it only on builds without DAGRAD_NATIVE.
set -euo pipefail
libs=("$@")  # every layer's archive
if [[ "$(uname -m)" != x86_64 ]]; then
  echo "SKIP: not an x86-64 machine"; exit 77
fi
if ! command -v objdump > /dev/null; then
  echo "SKIP: objdump (binutils) not found"; exit 77
fi
# Symbols with internal linkage ("t" in nm: static functions of headers
# such as VectorExp, and unoptimised lambdas) cannot be picked by the
# linker for another object, so one with AVX instructions is fine when its
# own object file is a kernel level's (holds that level's functions).
linkage="$(mktemp)"
trap 'rm -f "$linkage"' EXIT
nm --defined-only "${libs[@]}" 2> /dev/null | awk '$2 ~ /^[tTwWuV]$/ { print $2, $3 }' > "$linkage"
# Names stay mangled so that the namespace is the prefix: _ZN6dagrad7kernels6avx512...
# (_ZZN... for a function's local entities, such as a lambda's operator()).
objdump -d --no-show-raw-insn "${libs[@]}" | awk -v linkage="$linkage" '
  BEGIN {
    while ((getline line < linkage) > 0) {
      split(line, field, " ")
      if (field[1] == "t") local_seen[field[2]] = 1; else global_seen[field[2]] = 1
    }
  }
  function level_of(name) {
    if (name ~ /^_ZZ?N6dagrad7kernels6avx512/) return 2
    if (name ~ /^_ZZ?N6dagrad7kernels4avx2/) return 1
    return 0
  }
  # Judges the functions of the object file just read.
  function close_member(   g) {
    for (g in pending) {
      internal = (g in local_seen) && !(g in global_seen)
      if (!internal || member_level < pending[g]) {
        if (!(g in bad)) { bad[g] = pending_insn[g]; nbad++ }
      }
    }
    delete pending; delete pending_insn; member_level = 0
  }
  # An object file of the archive: "name.o:     file format elf64-x86-64".
  /file format/ { close_member(); next }
  # A function: "0000000000000000 <name>:".
  /^[0-9a-f]+ <.*>:$/ {
    fn = substr($0, index($0, "<") + 1); sub(/>:$/, "", fn); functions++
    if (level_of(fn) > member_level) member_level = level_of(fn)
    next
  }
  # An instruction: "   offset:<TAB>mnemonic operands".
  /^ *[0-9a-f]+:\t/ {
    split($0, parts, "\t"); insn = parts[2]; mnemonic = insn; sub(/ .*/, "", mnemonic)
    avx512 = insn ~ /%zmm|%k[0-7]/
    vex = avx512 || mnemonic ~ /^v/ || insn ~ /%ymm/
    if (!vex) next
    need = avx512 ? 2 : 1
    if (level_of(fn) >= need) next
    if (!(fn in pending) || pending[fn] < need) { pending[fn] = need; pending_insn[fn] = insn }
  }
  END {
    close_member()
    for (f in bad) print "outside its kernel level: " f "\n    first such instruction: " bad[f]
    if (functions == 0) { print "no functions disassembled"; exit 1 }
    printf "%d functions checked, %d with AVX instructions outside dagrad::kernels::{avx2,avx512}\n",
           functions, nbad
    exit nbad > 0
  }' | c++filt
