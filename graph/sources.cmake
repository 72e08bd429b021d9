# Every .cpp under graph/ is part of the library; per-ISA files (*_avx512.cpp, *_avx2.cpp)
# get their ISA's flags from headwise_isa_flags().
file(GLOB_RECURSE HEADWISE_graph_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/graph/*.cpp)
list(APPEND HEADWISE_SOURCES ${HEADWISE_graph_SOURCES})
