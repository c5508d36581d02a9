# CMake toolchain for a cross build with Debian's gcc-TRIPLET packages; the
# per-target files (cross/TRIPLET.cmake) set ST_CROSS_TRIPLET and
# CMAKE_SYSTEM_PROCESSOR and include this one. A program using simpletrace's
# CMake package (examples/cmake) against a tree installed with
# `make install PREFIX=DIR CROSS=TRIPLET`:
#   cmake -S examples/cmake -B build --toolchain cross/aarch64-linux-gnu.cmake -DCMAKE_PREFIX_PATH=DIR
# simpletrace_generate() then runs this machine's own `simpletrace gen`
# (PATH, or -DSIMPLETRACE_GEN_EXECUTABLE=...), of the same version, else
# the target's command under CMAKE_CROSSCOMPILING_EMULATOR (qemu-user-static).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_C_COMPILER ${ST_CROSS_TRIPLET}-gcc)
set(CMAKE_CXX_COMPILER ${ST_CROSS_TRIPLET}-g++)
set(CMAKE_AR ${ST_CROSS_TRIPLET}-ar CACHE FILEPATH "")
set(CMAKE_RANLIB ${ST_CROSS_TRIPLET}-ranlib CACHE FILEPATH "")
# The target's programs (tests, try_run) run under Debian's qemu-user-static.
find_program(ST_CROSS_EMULATOR qemu-${CMAKE_SYSTEM_PROCESSOR}-static)
if(ST_CROSS_EMULATOR)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${ST_CROSS_EMULATOR})
endif()
# The target's C library and Debian's multiarch libraries of the target;
# programs (compilers, simpletrace gen) are this machine's; packages are
# found in the root and under CMAKE_PREFIX_PATH (the cross install's DIR).
set(CMAKE_FIND_ROOT_PATH /usr/${ST_CROSS_TRIPLET})
set(CMAKE_LIBRARY_ARCHITECTURE ${ST_CROSS_TRIPLET})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
