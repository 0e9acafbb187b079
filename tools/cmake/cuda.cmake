# The optional CUDA backend. DAGRAD_CUDA=AUTO turns it on when nvcc is found,
# ON requires it, OFF leaves it out (CudaDevice() then returns Unavailable).
#
# Kernels are compiled for sm_90 (H100) as machine code plus compute_90 PTX,
# which the driver compiles for newer GPUs; set CMAKE_CUDA_ARCHITECTURES to
# build for others (e.g. -DCMAKE_CUDA_ARCHITECTURES=80-real;90-real).
option(DAGRAD_CUDA_LINEINFO
       "Add line tables to CUDA device code (-lineinfo), so compute-sanitizer and Nsight name file:line"
       OFF)
set(DAGRAD_HAVE_CUDA OFF)
if(NOT DAGRAD_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    set(DAGRAD_HAVE_CUDA ON)
  elseif(DAGRAD_CUDA STREQUAL "ON")
    message(FATAL_ERROR "DAGRAD_CUDA=ON but no CUDA compiler was found")
  endif()
endif()

if(DAGRAD_HAVE_CUDA)
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    # "90" is sm_90 machine code plus compute_90 PTX ("90-real;90-virtual")
    # from one device compilation.
    set(CMAKE_CUDA_ARCHITECTURES "90")
  endif()
  # nvcc compiles host code with the C++ compiler CMake already chose.
  if(NOT DEFINED CMAKE_CUDA_HOST_COMPILER)
    set(CMAKE_CUDA_HOST_COMPILER "${CMAKE_CXX_COMPILER}")
  endif()
  enable_language(CUDA)
  # CMake 3.25 does not know nvcc 13's C++20 flag; tell it.
  if(NOT CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
    set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
  endif()
  set(CMAKE_CUDA_STANDARD 20)
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
  set(CMAKE_CUDA_EXTENSIONS OFF)
  find_package(CUDAToolkit REQUIRED)
endif()
message(STATUS "dagrad: CUDA backend: ${DAGRAD_HAVE_CUDA}")

# dagrad_add_cuda_sources(target dir) adds the CUDA sources of `dir`
# (engine/cuda or ops/cuda) to `target`, with cudart (cuBLAS is loaded at
# run time) and DAGRAD_WITH_CUDA=1 for the target and its users. Without
# the backend it adds engine/cuda/no_cuda.cc to the engine, whose
# CudaDevice() says the backend is missing.
function(dagrad_add_cuda_sources target dir)
  if(NOT DAGRAD_HAVE_CUDA)
    if(dir STREQUAL "engine/cuda")
      target_sources(${target} PRIVATE ${PROJECT_SOURCE_DIR}/engine/cuda/no_cuda.cc)
    endif()
    return()
  endif()
  file(GLOB cuda_sources CONFIGURE_DEPENDS
    ${PROJECT_SOURCE_DIR}/${dir}/*.cu ${PROJECT_SOURCE_DIR}/${dir}/*.cc)
  list(REMOVE_ITEM cuda_sources ${PROJECT_SOURCE_DIR}/engine/cuda/no_cuda.cc)
  target_sources(${target} PRIVATE ${cuda_sources})
  # --fmad=false: nvcc would contract a * b + c into a fused multiply-add;
  # without contraction each kernel computes exactly the expression
  # written, as the CPU's reference (baseline) kernels do (they are
  # compiled with -ffp-contract=off). So where a CUDA kernel and its CPU
  # reference write the same expression (elementwise arithmetic, dropout,
  # the optimizer updates) they give the same bits. ISA-specific CPU
  # kernels may fuse, and are held to the reference within stated
  # tolerances, not bit for bit. For every file rather than some: a kernel
  # added to a contracting file would silently lose the match, and these
  # kernels are memory-bound, so fusing would buy no measurable time.
  # cuBLAS is unaffected.
  # --expt-relaxed-constexpr: device code may call constexpr functions such
  # as std::numeric_limits<T>::lowest() and std::min.
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CUDA>:--fmad=false --expt-relaxed-constexpr -Xcompiler=-Wall,-Wextra,-Wno-unused-parameter,-Wno-missing-field-initializers>)
  # Line tables leave the machine code as it is (optim.cu's sm_90 code was
  # byte for byte the same with and without), so such a build times the same.
  if(DAGRAD_CUDA_LINEINFO)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-lineinfo>)
  endif()
  target_compile_definitions(${target} PUBLIC DAGRAD_WITH_CUDA=1)
  # One CUDA runtime in the process: the shared one, for dagrad's .cu files
  # too (CMake would otherwise add the static one for them).
  set_target_properties(${target} PROPERTIES CUDA_RUNTIME_LIBRARY Shared)
  # cuBLAS is loaded with dlopen when a device is made (engine/cuda/
  # cublas_api.h), not linked: its static initialisers cost every process
  # linking dagrad about 0.3 s. Its headers come with the toolkit's.
  target_compile_definitions(${target} PRIVATE
    DAGRAD_CUDA_LIBRARY_DIR="${CUDAToolkit_LIBRARY_DIR}"
    DAGRAD_CUDA_ARCHITECTURES="${CMAKE_CUDA_ARCHITECTURES}")
  # A target with DAGRAD_STATIC_CUDA_RUNTIME set links the static runtime
  # instead (libdagrad.so, tools/cmake/install.cmake).
  target_link_libraries(${target}
    PUBLIC $<IF:$<BOOL:$<TARGET_PROPERTY:DAGRAD_STATIC_CUDA_RUNTIME>>,CUDA::cudart_static,CUDA::cudart>
    PRIVATE ${CMAKE_DL_LIBS})
endfunction()
