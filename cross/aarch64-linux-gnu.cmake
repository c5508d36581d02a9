# CMake toolchain file: programs for aarch64-linux-gnu with Debian's gcc-aarch64-linux-gnu (cross/linux-gnu.cmake).
#   cmake -S DIR -B build --toolchain cross/aarch64-linux-gnu.cmake -DCMAKE_PREFIX_PATH=SIMPLETRACE-PREFIX
set(ST_CROSS_TRIPLET aarch64-linux-gnu)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
include(${CMAKE_CURRENT_LIST_DIR}/linux-gnu.cmake)
