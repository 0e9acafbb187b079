# Installs dagrad from BINARY_DIR into a scratch prefix, then builds a
# project outside dagrad against it and runs its programs, as a user would.
# Run by ctest (tests/CMakeLists.txt) with
#   SOURCE_DIR, BINARY_DIR   dagrad's source and build trees
#   CXX_COMPILER, C_COMPILER the compilers dagrad was built with (a
#                            sanitizer build's library needs their runtimes)
#   NAME                     the scratch folder, BINARY_DIR/NAME
#   MODE                     cmake: configure PROJECT_DIR with find_package
#                            and run each program of PROGRAMS;
#                            pkgconfig: compile tests/consumer/main.cc with
#                            `pkg-config --cflags --libs dagrad` and run it;
#                            no_cuda_toolkit: as cmake, with the CUDA
#                            toolkit hidden from the consumer, then check
#                            that neither libdagrad.so nor the programs
#                            need the CUDA runtime library.
#   PROJECT_DIR, PROGRAMS    for cmake and no_cuda_toolkit
set(work "${BINARY_DIR}/${NAME}")
set(prefix "${work}/prefix")
file(REMOVE_RECURSE "${work}")

function(run_step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "step failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  message(STATUS "${out}")
  set(step_output "${out}" PARENT_SCOPE)
endfunction()

# Fails when the ELF file `binary` lists the CUDA runtime as a needed library.
function(check_no_cudart binary)
  run_step(readelf -d "${binary}")
  if(step_output MATCHES "libcudart")
    message(FATAL_ERROR "${binary} needs the CUDA runtime library:\n${step_output}")
  endif()
endfunction()

run_step("${CMAKE_COMMAND}" --install "${BINARY_DIR}" --prefix "${prefix}")

if(MODE STREQUAL "pkgconfig")
  file(GLOB_RECURSE pc_files "${prefix}/*/dagrad.pc")
  get_filename_component(pc_dir "${pc_files}" DIRECTORY)
  set(ENV{PKG_CONFIG_PATH} "${pc_dir}")
  run_step(pkg-config --cflags --libs dagrad)
  string(STRIP "${step_output}" flags)
  separate_arguments(flags UNIX_COMMAND "${flags}")
  run_step(pkg-config --variable=libdir dagrad)
  string(STRIP "${step_output}" libdir)
  run_step("${CXX_COMPILER}" -std=c++20 -O1 "${SOURCE_DIR}/tests/consumer/main.cc"
           -o "${work}/consumer" ${flags} "-Wl,-rpath,${libdir}")
  run_step("${work}/consumer")
  return()
endif()

set(configure_args "")
if(MODE STREQUAL "no_cuda_toolkit")
  set(configure_args -DCMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit=ON)
endif()
run_step("${CMAKE_COMMAND}" -S "${PROJECT_DIR}" -B "${work}/build" -G "Unix Makefiles"
         -DCMAKE_PREFIX_PATH=${prefix}
         -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=${CXX_COMPILER}
         -DCMAKE_C_COMPILER=${C_COMPILER} ${configure_args})
run_step("${CMAKE_COMMAND}" --build "${work}/build")
foreach(program ${PROGRAMS})
  run_step("${work}/build/${program}")
  if(MODE STREQUAL "no_cuda_toolkit")
    check_no_cudart("${work}/build/${program}")
  endif()
endforeach()
if(MODE STREQUAL "no_cuda_toolkit")
  # Nothing of the toolkit on the consumer's link lines either.
  file(GLOB_RECURSE link_lines "${work}/build/*/link.txt")
  if(NOT link_lines)
    message(FATAL_ERROR "no link.txt under ${work}/build: configure the consumer with Makefiles")
  endif()
  foreach(link_line ${link_lines})
    file(READ "${link_line}" text)
    if(text MATCHES "libcud|/cuda[^/]*/")
      message(FATAL_ERROR "the consumer links CUDA (${link_line}):\n${text}")
    endif()
  endforeach()
  file(GLOB_RECURSE libraries "${prefix}/*/libdagrad.so")
  check_no_cudart("${libraries}")
  # The CUDA backend and its runtime are inside: a library built without
  # CUDA has no fat binaries to register.
  run_step(nm "${libraries}")
  if(NOT step_output MATCHES " [tT] __cudaRegisterFatBinary")
    message(FATAL_ERROR "libdagrad.so holds no CUDA backend with its runtime")
  endif()
endif()
