# CMake toolchain file: cross-compiles dagrad for aarch64 Linux with
# Debian's cross compiler, against Debian's arm64 libraries (multiarch,
# /usr/lib/aarch64-linux-gnu), and runs what it built (gtest discovery,
# ctest) under qemu-user. tools/cross_aarch64.sh uses it:
#
#   dpkg --add-architecture arm64 && apt-get update
#   apt-get install g++-aarch64-linux-gnu qemu-user-static libabsl-dev:arm64 \
#     libblis-dev:arm64 libgtest-dev:arm64 libgmock-dev:arm64 nlohmann-json3-dev
#   cmake -S . -B build-aarch64 -DCMAKE_TOOLCHAIN_FILE=tools/cmake/aarch64-linux-gnu.cmake

set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
# Debian's multiarch directories: /usr/lib/aarch64-linux-gnu (libraries,
# CMake packages) and /usr/include/aarch64-linux-gnu (blis.h).
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
# The arm64 dynamic loader and libraries live in /lib and /usr/lib's
# multiarch directories, which qemu finds from the root.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64-static -L /)
