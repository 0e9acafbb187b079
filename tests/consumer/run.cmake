# Installs dagrad from BINARY_DIR into a scratch prefix, then configures,
# builds and runs tests/consumer against it, with the compilers dagrad was
# built with (a sanitizer build's library needs its compiler's runtimes).
# Run by ctest (install_consumer).
set(work "${BINARY_DIR}/consumer_test")
file(REMOVE_RECURSE "${work}")
foreach(step
    "${CMAKE_COMMAND};--install;${BINARY_DIR};--prefix;${work}/prefix"
    "${CMAKE_COMMAND};-S;${SOURCE_DIR}/tests/consumer;-B;${work}/build;-DCMAKE_PREFIX_PATH=${work}/prefix;-DCMAKE_BUILD_TYPE=Release;-DCMAKE_CXX_COMPILER=${CXX_COMPILER};-DCMAKE_C_COMPILER=${C_COMPILER}"
    "${CMAKE_COMMAND};--build;${work}/build"
    "${work}/build/consumer")
  execute_process(COMMAND ${step} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "step failed (${rc}): ${step}\n${out}\n${err}")
  endif()
  message(STATUS "${out}")
endforeach()
