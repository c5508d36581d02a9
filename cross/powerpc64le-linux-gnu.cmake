# CMake toolchain file: programs for powerpc64le-linux-gnu with Debian's gcc-powerpc64le-linux-gnu (cross/linux-gnu.cmake).
#   cmake -S DIR -B build --toolchain cross/powerpc64le-linux-gnu.cmake -DCMAKE_PREFIX_PATH=SIMPLETRACE-PREFIX
set(ST_CROSS_TRIPLET powerpc64le-linux-gnu)
set(CMAKE_SYSTEM_PROCESSOR ppc64le)
include(${CMAKE_CURRENT_LIST_DIR}/linux-gnu.cmake)
