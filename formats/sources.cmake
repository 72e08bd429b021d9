# File readers and writers (GGUF, Hugging Face folders): every .cpp under formats/ is
# part of the library.
file(GLOB_RECURSE HEADWISE_formats_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/formats/*.cpp)
list(APPEND HEADWISE_SOURCES ${HEADWISE_formats_SOURCES})
