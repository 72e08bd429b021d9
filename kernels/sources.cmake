# Every .cpp under kernels/ is part of the library; per-ISA files (*_avx512.cpp, *_avx2.cpp)
# get their ISA's flags from headwise_isa_flags().
file(GLOB_RECURSE HEADWISE_kernels_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/kernels/*.cpp)
list(APPEND HEADWISE_SOURCES ${HEADWISE_kernels_SOURCES})
