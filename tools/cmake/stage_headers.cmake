# Copies dagrad's public headers into the tree that `cmake --install` puts
# under <prefix>/include, so that every one is reached as <dagrad/...>:
#   engine/graph.h  -> OUT_DIR/dagrad/engine/graph.h
#   models/dagrad.h -> OUT_DIR/dagrad/dagrad.h
# Inside the library a header includes another as "engine/tensor.h"; the
# copy includes it as "dagrad/engine/tensor.h", so a consumer's include
# path holds only <prefix>/include and nothing generic such as engine/.
# Run as: cmake -DSOURCE_DIR=... -DOUT_DIR=... -DHEADER_LIST=file -P this,
# where HEADER_LIST names one source-relative header a line.
file(REMOVE_RECURSE "${OUT_DIR}")
file(STRINGS "${HEADER_LIST}" headers)
foreach(rel ${headers})
  file(READ "${SOURCE_DIR}/${rel}" text)
  string(REGEX REPLACE "#include \"(engine|ops|models)/" "#include \"dagrad/\\1/" text "${text}")
  if(rel STREQUAL "models/dagrad.h")  # the umbrella header
    file(WRITE "${OUT_DIR}/dagrad/dagrad.h" "${text}")
  else()
    file(WRITE "${OUT_DIR}/dagrad/${rel}" "${text}")
  endif()
endforeach()
