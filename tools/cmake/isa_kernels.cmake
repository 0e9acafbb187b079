# dagrad's hot kernels (ops/kernels/*.cc), compiled once per ISA level.
#
# Each level is an object library built from the same sources with its own
# instruction-set flags and DAGRAD_ISA=<level>, which puts everything the
# sources define into namespace dagrad::kernels::<level> (no inline function
# is shared between levels, so the linker cannot pick an AVX-512 copy for
# baseline code). ops/cpu_isa.cc picks one level's table at run time;
# DAGRAD_HAVE_ISA_<LEVEL> tells it which levels were compiled.
#
#   levels       x86-64: baseline (SSE2), avx2 (AVX2 + FMA), avx512 (F/BW/DQ/VL)
#                aarch64 and others: baseline (NEON on aarch64)

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

function(dagrad_add_isa_kernels target)
  file(GLOB kernel_sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/ops/kernels/*.cc)
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
  endforeach()
endfunction()
