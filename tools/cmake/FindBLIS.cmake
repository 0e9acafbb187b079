# FindBLIS: locates BLIS (Debian's libblis-dev ships no CMake config).
#
# Prefers the OpenMP build (Debian installs it as blis-openmp; dagrad's own
# kernels use OpenMP too, so both share one thread pool). Defines:
#   BLIS_FOUND, BLIS_INCLUDE_DIR, BLIS_LIBRARY and the target BLIS::BLIS.

find_path(BLIS_INCLUDE_DIR blis.h
  PATH_SUFFIXES blis-openmp blis blis-pthread x86_64-linux-gnu/blis-openmp
                x86_64-linux-gnu
  HINTS /usr/include/x86_64-linux-gnu /usr/include)
find_library(BLIS_LIBRARY NAMES blis
  PATH_SUFFIXES blis-openmp
  HINTS /usr/lib/x86_64-linux-gnu/blis-openmp /usr/lib/x86_64-linux-gnu)

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(BLIS REQUIRED_VARS BLIS_LIBRARY BLIS_INCLUDE_DIR)

if(BLIS_FOUND AND NOT TARGET BLIS::BLIS)
  add_library(BLIS::BLIS UNKNOWN IMPORTED)
  set_target_properties(BLIS::BLIS PROPERTIES
    IMPORTED_LOCATION "${BLIS_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${BLIS_INCLUDE_DIR}")
endif()
mark_as_advanced(BLIS_INCLUDE_DIR BLIS_LIBRARY)
