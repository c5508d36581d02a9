# CMake toolchain file: programs for riscv64-linux-gnu with Debian's gcc-riscv64-linux-gnu (cross/linux-gnu.cmake).
#   cmake -S DIR -B build --toolchain cross/riscv64-linux-gnu.cmake -DCMAKE_PREFIX_PATH=SIMPLETRACE-PREFIX
set(ST_CROSS_TRIPLET riscv64-linux-gnu)
set(CMAKE_SYSTEM_PROCESSOR riscv64)
include(${CMAKE_CURRENT_LIST_DIR}/linux-gnu.cmake)
