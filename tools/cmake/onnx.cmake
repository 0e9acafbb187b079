# The optional ONNX import and export (ops/onnx/). DAGRAD_ONNX=AUTO builds
# it when Debian's libonnx-dev and protobuf are found, ON requires them, OFF
# leaves it out. Debian's ONNXConfig.cmake links protobuf::libprotobuf, so
# Protobuf is found first.
set(DAGRAD_ONNX AUTO CACHE STRING "Build ONNX import and export: AUTO (when libonnx-dev is found), ON, OFF")
set_property(CACHE DAGRAD_ONNX PROPERTY STRINGS AUTO ON OFF)
set(DAGRAD_HAVE_ONNX OFF)
if(NOT DAGRAD_ONNX STREQUAL "OFF")
  find_package(Protobuf QUIET)
  if(Protobuf_FOUND)
    find_package(ONNX CONFIG QUIET)
  endif()
  if(Protobuf_FOUND AND ONNX_FOUND)
    set(DAGRAD_HAVE_ONNX ON)
  elseif(DAGRAD_ONNX STREQUAL "ON")
    message(FATAL_ERROR "DAGRAD_ONNX=ON but libonnx-dev and libprotobuf-dev were not found "
                        "(bash tools/setup.sh installs them)")
  endif()
endif()
message(STATUS "dagrad: ONNX import/export: ${DAGRAD_HAVE_ONNX}")
