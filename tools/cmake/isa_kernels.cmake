# dagrad's hot kernels (ops/cpu/kernels/*.cc), compiled once per ISA level.
#
# Each level is an object library built from the same sources with its own
# instruction-set flags and DAGRAD_ISA=<level>, which puts everything the
# sources define into namespace dagrad::kernels::<level> (no inline function
# is shared between levels, so the linker cannot pick an AVX-512 copy for
# baseline code). ops/cpu/cpu_isa.cc picks one level's table at run time;
# DAGRAD_HAVE_ISA_<LEVEL> tells it which levels were compiled.
#
#   levels       x86-64: baseline (SSE2), avx2 (AVX2 + FMA), avx512 (F/BW/DQ/VL)
#                aarch64 and others: baseline (NEON on aarch64)
#
# ops/cpu/kernels/*_bf16_kernel.cc are the avx512 level's only, compiled apart
# with -mavx512bf16 as well (the rest of that level must not use the
# instructions: a CPU may have AVX-512 without AVX512_BF16), when the
# compiler takes the flag; DAGRAD_HAVE_BF16_KERNEL then puts them in the
# avx512 table, and ops/cpu/cpu_isa.cc runs them only where CPUID has
# AVX512_BF16.

if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
  set(DAGRAD_ISA_LEVELS baseline avx2 avx512)
else()
  set(DAGRAD_ISA_LEVELS baseline)
endif()
set(DAGRAD_ISA_FLAGS_baseline "")
set(DAGRAD_ISA_FLAGS_avx2 -mavx2 -mfma)
# 512-bit vectors for the compiler's own loops too (some tunings prefer 256).
set(DAGRAD_ISA_FLAGS_avx512 -mavx512f -mavx512bw -mavx512dq -mavx512vl -mavx2 -mfma
    -mprefer-vector-width=512)

include(CheckCXXCompilerFlag)
if("avx512" IN_LIST DAGRAD_ISA_LEVELS)
  check_cxx_compiler_flag(-mavx512bf16 DAGRAD_COMPILER_HAS_AVX512BF16)
endif()

# dagrad_add_bf16_kernels adds the bf16 kernel objects to `target` and
# marks the avx512 level's objects `level_objects` as having them.
function(dagrad_add_bf16_kernels target level_objects)
  file(GLOB bf16_sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/ops/cpu/kernels/*_bf16_kernel.cc)
  set(objects ${target}_kernels_avx512_bf16)
  add_library(${objects} OBJECT ${bf16_sources})
  target_include_directories(${objects} PRIVATE ${PROJECT_SOURCE_DIR})
  target_compile_definitions(${objects} PRIVATE DAGRAD_ISA=avx512)
  target_compile_options(${objects} PRIVATE -Wall -Wextra -Wno-unused-parameter -fno-math-errno
                         ${DAGRAD_ISA_FLAGS_avx512} -mavx512bf16)
  target_sources(${target} PRIVATE $<TARGET_OBJECTS:${objects}>)
  target_compile_definitions(${level_objects} PRIVATE DAGRAD_HAVE_BF16_KERNEL=1)
endfunction()

function(dagrad_add_isa_kernels target)
  file(GLOB kernel_sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/ops/cpu/kernels/*.cc)
  list(FILTER kernel_sources EXCLUDE REGEX "_bf16_kernel\\.cc$")
  foreach(level ${DAGRAD_ISA_LEVELS})
    set(objects ${target}_kernels_${level})
    add_library(${objects} OBJECT ${kernel_sources})
    target_include_directories(${objects} PRIVATE ${PROJECT_SOURCE_DIR})
    target_compile_definitions(${objects} PRIVATE DAGRAD_ISA=${level})
    # -fno-math-errno as for the library: sqrt is one instruction.
    target_compile_options(${objects} PRIVATE -Wall -Wextra -Wno-unused-parameter
                           -fno-math-errno ${DAGRAD_ISA_FLAGS_${level}})
    if(DAGRAD_NATIVE)
      target_compile_options(${objects} PRIVATE -march=native)
    endif()
    target_sources(${target} PRIVATE $<TARGET_OBJECTS:${objects}>)
    string(TOUPPER ${level} upper)
    target_compile_definitions(${target} PRIVATE DAGRAD_HAVE_ISA_${upper}=1)
    if(level STREQUAL "avx512" AND DAGRAD_COMPILER_HAS_AVX512BF16)
      dagrad_add_bf16_kernels(${target} ${objects})
    endif()
  endforeach()
endfunction()
