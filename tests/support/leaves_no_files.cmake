# Runs a test binary with TEST_TMPDIR pointed at an empty directory and
# fails when the run left anything there (tests/support/test_main.h: a run
# whose tests pass removes every file they wrote).
#
#   cmake -DBINARY=dagrad_cli_tests -DFILTER='CliTrain.*' -DDIR=build/x -P leaves_no_files.cmake
file(REMOVE_RECURSE ${DIR})
file(MAKE_DIRECTORY ${DIR})
execute_process(COMMAND ${CMAKE_COMMAND} -E env TEST_TMPDIR=${DIR}
                        ${BINARY} --gtest_filter=${FILTER} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${BINARY} --gtest_filter=${FILTER} failed (${rc})")
endif()
file(GLOB left ${DIR}/*)
if(left)
  message(FATAL_ERROR "the tests left files behind: ${left}")
endif()
file(REMOVE_RECURSE ${DIR})
