# The optional MPI communicator (engine/mpi/), for data-parallel training
# over processes and machines. DAGRAD_MPI=AUTO builds it when Debian's Open
# MPI (libopenmpi-dev) is found, ON requires it, OFF leaves it out. MPI is
# private to libdagrad.so: no MPI header is public, and a consumer links
# nothing of it. DAGRAD_MPIEXEC runs the MPI tests (tests/CMakeLists.txt).
set(DAGRAD_MPI AUTO CACHE STRING "Build the MPI communicator: AUTO (when Open MPI is found), ON, OFF")
set_property(CACHE DAGRAD_MPI PROPERTY STRINGS AUTO ON OFF)
set(DAGRAD_HAVE_MPI OFF)
if(NOT DAGRAD_MPI STREQUAL "OFF")
  find_package(MPI QUIET COMPONENTS CXX)
  if(MPI_CXX_FOUND AND MPIEXEC_EXECUTABLE)
    set(DAGRAD_HAVE_MPI ON)
  elseif(DAGRAD_MPI STREQUAL "ON")
    message(FATAL_ERROR "DAGRAD_MPI=ON but Open MPI (libopenmpi-dev, openmpi-bin) was not found "
                        "(bash tools/setup.sh installs it)")
  endif()
endif()
message(STATUS "dagrad: MPI data parallelism: ${DAGRAD_HAVE_MPI} ${MPIEXEC_EXECUTABLE}")
