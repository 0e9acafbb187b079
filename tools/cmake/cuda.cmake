# The optional CUDA backend. DAGRAD_CUDA=AUTO turns it on when nvcc is found.
# Kernels are compiled for sm_90 plus PTX (compute_90) for other GPUs.
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
message(STATUS "dagrad: CUDA backend: ${DAGRAD_HAVE_CUDA}")

function(dagrad_add_cuda_sources target)
  if(NOT DAGRAD_HAVE_CUDA)
    return()
  endif()
  file(GLOB cuda_sources CONFIGURE_DEPENDS
    ${PROJECT_SOURCE_DIR}/ops/cuda/*.cu ${PROJECT_SOURCE_DIR}/engine/cuda/*.cu
    ${PROJECT_SOURCE_DIR}/engine/cuda/*.cc)
  if(NOT cuda_sources)
    return()
  endif()
  target_sources(${target} PRIVATE ${cuda_sources})
  target_compile_definitions(${target} PUBLIC DAGRAD_WITH_CUDA=1)
endfunction()
