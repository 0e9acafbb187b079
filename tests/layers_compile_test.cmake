# Shows that the compiler itself refuses an upward include: a file compiled
# with the engine layer's include tree (build/layers/dagrad_engine, see
# tools/cmake/layers.cmake) can include engine/graph.h but not
# ops/registry.h. Run by ctest (layers_compile_upward) as
#   cmake -DCXX=c++ -DSTAGE=build/layers/dagrad_engine -DWORK=dir -P layers_compile_test.cmake
file(MAKE_DIRECTORY "${WORK}")
file(WRITE "${WORK}/down.cc" "#include \"engine/graph.h\"\n")
file(WRITE "${WORK}/up.cc" "#include \"engine/graph.h\"\n#include \"ops/registry.h\"\n")
foreach(name down up)
  execute_process(COMMAND "${CXX}" -std=c++20 -fsyntax-only -I${STAGE} "${WORK}/${name}.cc"
                  RESULT_VARIABLE rc_${name} ERROR_VARIABLE err_${name})
endforeach()
if(NOT rc_down EQUAL 0)
  message(FATAL_ERROR "engine/graph.h does not compile against ${STAGE}:\n${err_down}")
endif()
if(rc_up EQUAL 0 OR NOT err_up MATCHES "ops/registry.h")
  message(FATAL_ERROR "an include of ops/registry.h compiled against ${STAGE} (${rc_up}):\n${err_up}")
endif()
message(STATUS "the engine's include tree refuses ops/registry.h")
