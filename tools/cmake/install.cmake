# `cmake --install` puts in the prefix:
#   lib/libdagrad.so        every layer in one shared library; BLIS, OpenMP,
#                           nlohmann-json and (when built) the CUDA runtime
#                           are private to it
#   include/dagrad/...      the public headers, reached as <dagrad/...>
#                           (<dagrad/dagrad.h> brings in the whole API)
#   lib/cmake/dagrad/       the CMake package:
#                             find_package(dagrad REQUIRED)
#                             target_link_libraries(app PRIVATE dagrad::dagrad)
#   lib/pkgconfig/dagrad.pc for pkg-config: pkg-config --cflags --libs dagrad
#   bin/dagrad              the command-line program
# A consumer needs Abseil (dagrad's API speaks absl::Status) and nothing
# else: not BLIS, not OpenMP, not the CUDA toolkit.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(DAGRAD_CMAKE_DIR "${CMAKE_INSTALL_LIBDIR}/cmake/dagrad")

# The installed headers, with their includes spelled <dagrad/...>
# (tools/cmake/stage_headers.cmake), staged in the build tree.
set(staged_headers ${PROJECT_BINARY_DIR}/install_include)
set(header_list "")
foreach(header ${DAGRAD_HEADERS})
  file(RELATIVE_PATH rel "${PROJECT_SOURCE_DIR}" "${header}")
  string(APPEND header_list "${rel}\n")
endforeach()
file(CONFIGURE OUTPUT ${staged_headers}.list CONTENT "${header_list}")
add_custom_command(OUTPUT ${staged_headers}.stamp
  COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${PROJECT_SOURCE_DIR} -DOUT_DIR=${staged_headers}
          -DHEADER_LIST=${staged_headers}.list -P ${PROJECT_SOURCE_DIR}/tools/cmake/stage_headers.cmake
  COMMAND ${CMAKE_COMMAND} -E touch ${staged_headers}.stamp
  DEPENDS ${DAGRAD_HEADERS} ${staged_headers}.list ${PROJECT_SOURCE_DIR}/tools/cmake/stage_headers.cmake
  VERBATIM)
add_custom_target(dagrad_install_headers ALL DEPENDS ${staged_headers}.stamp)

# libdagrad.so: the layers' archives linked whole (a shared library keeps
# only what something references otherwise). The CUDA runtime goes in
# statically (DAGRAD_STATIC_CUDA_RUNTIME, read by tools/cmake/cuda.cmake),
# so neither a consumer's build nor its run needs the CUDA toolkit; cuBLAS
# is loaded at run time as in every dagrad program.
file(CONFIGURE OUTPUT ${PROJECT_BINARY_DIR}/dagrad_shared.cc
     CONTENT "// libdagrad.so's code is its layers' archives (tools/cmake/install.cmake).\n")
add_library(dagrad_shared SHARED ${PROJECT_BINARY_DIR}/dagrad_shared.cc)
set_target_properties(dagrad_shared PROPERTIES
  OUTPUT_NAME dagrad EXPORT_NAME dagrad
  VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR}
  DAGRAD_STATIC_CUDA_RUNTIME ON CUDA_RUNTIME_LIBRARY Static)
# (dagrad_ops and dagrad_ops_cuda are linked whole already, by the layers
# that link them.)
set(layer_archives "")
foreach(layer dagrad_engine dagrad_autodiff dagrad_models)
  list(APPEND layer_archives $<TARGET_FILE:${layer}>)
endforeach()
# The MPI communicator goes in too, MPI linked privately (after it, below):
# its users load Open MPI's library with dagrad's but build against no MPI
# header.
if(TARGET dagrad_mpi)
  list(APPEND layer_archives $<TARGET_FILE:dagrad_mpi>)
endif()
target_link_libraries(dagrad_shared
  PRIVATE -Wl,--whole-archive ${layer_archives} -Wl,--no-whole-archive dagrad_models
  PUBLIC absl::status absl::statusor absl::strings absl::str_format
         absl::flat_hash_map absl::inlined_vector absl::span absl::base)
if(TARGET dagrad_mpi)
  target_link_libraries(dagrad_shared PRIVATE MPI::MPI_CXX)
endif()
target_include_directories(dagrad_shared INTERFACE $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
target_compile_features(dagrad_shared INTERFACE cxx_std_20)
add_dependencies(dagrad_shared dagrad_install_headers)
# An instrumented library needs the sanitizer runtimes in its users too.
if(DAGRAD_SANITIZE)
  target_link_options(dagrad_shared INTERFACE -fsanitize=address,undefined)
endif()

install(TARGETS dagrad_shared EXPORT dagradTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS dagrad_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${staged_headers}/dagrad DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT dagradTargets NAMESPACE dagrad:: DESTINATION ${DAGRAD_CMAKE_DIR})
configure_package_config_file(
  "${PROJECT_SOURCE_DIR}/tools/cmake/dagradConfig.cmake.in"
  "${PROJECT_BINARY_DIR}/dagradConfig.cmake"
  INSTALL_DESTINATION ${DAGRAD_CMAKE_DIR})
write_basic_package_version_file(
  "${PROJECT_BINARY_DIR}/dagradConfigVersion.cmake"
  COMPATIBILITY SameMajorVersion)
install(FILES
  "${PROJECT_BINARY_DIR}/dagradConfig.cmake"
  "${PROJECT_BINARY_DIR}/dagradConfigVersion.cmake"
  DESTINATION ${DAGRAD_CMAKE_DIR})

# dagrad.pc finds the prefix from its own place (${pcfiledir}), so the
# installed tree can be moved.
file(RELATIVE_PATH DAGRAD_PC_TO_PREFIX "/prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/prefix")
# A sanitizer build's library needs the sanitizer runtimes at link time, as
# the CMake package's link options say too.
set(DAGRAD_PC_EXTRA_LIBS "")
if(DAGRAD_SANITIZE)
  set(DAGRAD_PC_EXTRA_LIBS " -fsanitize=address,undefined")
endif()
configure_file("${PROJECT_SOURCE_DIR}/tools/cmake/dagrad.pc.in"
               "${PROJECT_BINARY_DIR}/dagrad.pc" @ONLY)
install(FILES "${PROJECT_BINARY_DIR}/dagrad.pc" DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
