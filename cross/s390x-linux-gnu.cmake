# CMake toolchain file: programs for s390x-linux-gnu with Debian's gcc-s390x-linux-gnu (cross/linux-gnu.cmake).
#   cmake -S DIR -B build --toolchain cross/s390x-linux-gnu.cmake -DCMAKE_PREFIX_PATH=SIMPLETRACE-PREFIX
set(ST_CROSS_TRIPLET s390x-linux-gnu)
set(CMAKE_SYSTEM_PROCESSOR s390x)
include(${CMAKE_CURRENT_LIST_DIR}/linux-gnu.cmake)
