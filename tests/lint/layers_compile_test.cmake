# Shows that the compiler itself refuses an upward include: a file compiled
# with a layer's include trees (build/layers/<target>, see
# tools/cmake/layers.cmake and tests/CMakeLists.txt) can include DOWN but
# not UP. Run by ctest (layers_compile_upward, layers_compile_upward_tests) as
#   cmake -DCXX=c++ -DSTAGE=build/layers/dagrad_engine -DWORK=dir -P layers_compile_test.cmake
# STAGE may be several trees, separated by ':'; DOWN and UP default to engine/graph.h and
# ops/registry.h.
if(NOT DOWN)
  set(DOWN engine/graph.h)
endif()
if(NOT UP)
  set(UP ops/registry.h)
endif()
string(REPLACE ":" ";" trees "${STAGE}")
list(TRANSFORM trees PREPEND -I OUTPUT_VARIABLE includes)
file(MAKE_DIRECTORY "${WORK}")
file(WRITE "${WORK}/down.cc" "#include \"${DOWN}\"\n")
file(WRITE "${WORK}/up.cc" "#include \"${DOWN}\"\n#include \"${UP}\"\n")
foreach(name down up)
  execute_process(COMMAND "${CXX}" -std=c++20 -fsyntax-only ${includes} "${WORK}/${name}.cc"
                  RESULT_VARIABLE rc_${name} ERROR_VARIABLE err_${name})
endforeach()
if(NOT rc_down EQUAL 0)
  message(FATAL_ERROR "${DOWN} does not compile against ${STAGE}:\n${err_down}")
endif()
if(rc_up EQUAL 0 OR NOT err_up MATCHES "${UP}")
  message(FATAL_ERROR "an include of ${UP} compiled against ${STAGE} (${rc_up}):\n${err_up}")
endif()
message(STATUS "the include trees ${STAGE} refuse ${UP}")
