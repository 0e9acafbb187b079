# `cmake --install` puts the library, its headers, the dagrad program and a
# CMake package config in the prefix, so that another project can write
#   find_package(dagrad REQUIRED)
#   target_link_libraries(app PRIVATE dagrad::dagrad)
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(DAGRAD_CMAKE_DIR "${CMAKE_INSTALL_LIBDIR}/cmake/dagrad")

install(TARGETS dagrad ${DAGRAD_LAYERS} EXPORT dagradTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS dagrad_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
foreach(header ${DAGRAD_HEADERS})
  file(RELATIVE_PATH rel "${PROJECT_SOURCE_DIR}" "${header}")
  get_filename_component(dir "${rel}" DIRECTORY)
  install(FILES "${header}" DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}/dagrad/${dir}")
endforeach()
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
  "${PROJECT_SOURCE_DIR}/tools/cmake/FindBLIS.cmake"
  DESTINATION ${DAGRAD_CMAKE_DIR})
