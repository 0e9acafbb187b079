# FindBLIS: locates BLIS (Debian's libblis-dev ships no CMake config).
#
# Prefers the OpenMP build (Debian installs it as blis-openmp; dagrad's own
# kernels use OpenMP too, so both share one thread pool). Defines:
#   BLIS_FOUND, BLIS_INCLUDE_DIR, BLIS_LIBRARY and the target BLIS::BLIS.

# Debian's multiarch directory of the target (x86_64-linux-gnu, or
# aarch64-linux-gnu when cross-compiling, tools/cmake/aarch64-linux-gnu.cmake).
set(_blis_arch "${CMAKE_LIBRARY_ARCHITECTURE}")
if(NOT _blis_arch)
  set(_blis_arch x86_64-linux-gnu)
endif()
find_path(BLIS_INCLUDE_DIR blis.h
  PATH_SUFFIXES blis-openmp blis blis-pthread ${_blis_arch}/blis-openmp ${_blis_arch}
  HINTS /usr/include/${_blis_arch} /usr/include)
find_library(BLIS_LIBRARY NAMES blis
  PATH_SUFFIXES blis-openmp
  HINTS /usr/lib/${_blis_arch}/blis-openmp /usr/lib/${_blis_arch})

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(BLIS REQUIRED_VARS BLIS_LIBRARY BLIS_INCLUDE_DIR)

if(BLIS_FOUND AND NOT TARGET BLIS::BLIS)
  add_library(BLIS::BLIS UNKNOWN IMPORTED)
  set_target_properties(BLIS::BLIS PROPERTIES
    IMPORTED_LOCATION "${BLIS_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${BLIS_INCLUDE_DIR}")
endif()
mark_as_advanced(BLIS_INCLUDE_DIR BLIS_LIBRARY)
