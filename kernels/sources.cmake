# Every .cpp under kernels/ is part of the library; per-ISA files (*_avx512.cpp, *_avx2.cpp)
# get their ISA's flags from headwise_isa_flags().
file(GLOB_RECURSE HEADWISE_kernels_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/kernels/*.cpp)
list(APPEND HEADWISE_SOURCES ${HEADWISE_kernels_SOURCES})
# The weight-type kernels' avx512 files also use AVX512-VNNI (vpdpbusd) and AVX512-BF16
# (vdpbf16ps); kernels/quant/quant.cpp hands them out only on CPUs that have both.
# (COMPILE_FLAGS, not COMPILE_OPTIONS: headwise_isa_flags() sets the latter.)
file(GLOB HEADWISE_quant_avx512_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/kernels/quant/*_avx512.cpp)
set_source_files_properties(${HEADWISE_quant_avx512_SOURCES} PROPERTIES COMPILE_FLAGS "-mavx512vnni -mavx512bf16")
