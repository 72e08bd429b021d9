# CTest entries for the fuzz targets (included from tests/CMakeLists.txt): one test
# builds them in a second build (clang-14, libFuzzer, ASan+UBSan; fuzz/build_fuzz.sh),
# then one test per fuzz/<reader>_fuzz.cpp replays its regression inputs and fuzzes
# it for HEADWISE_FUZZ_SECONDS (fuzz/run_fuzz.sh). tools/setup.sh --test enables it.
option(HEADWISE_TEST_FUZZ "ctest also builds the libFuzzer targets (clang-14) and fuzzes each" OFF)
# 20 s a target keeps the ten targets' CI time near what eight took at 30 s; the long
# runs are local (fuzz/README.md).
set(HEADWISE_FUZZ_SECONDS 20 CACHE STRING "Seconds ctest fuzzes each target")
if(HEADWISE_TEST_FUZZ)
  set(fuzz_build ${PROJECT_BINARY_DIR}/fuzz-build)
  add_test(NAME fuzz_build COMMAND ${PROJECT_SOURCE_DIR}/fuzz/build_fuzz.sh ${PROJECT_SOURCE_DIR} ${fuzz_build})
  set_tests_properties(fuzz_build PROPERTIES FIXTURES_SETUP headwise_fuzz LABELS fuzz TIMEOUT 3600)
  file(GLOB fuzz_sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/fuzz/*_fuzz.cpp)
  foreach(src ${fuzz_sources})
    get_filename_component(name ${src} NAME_WE)
    string(REGEX REPLACE "_fuzz$" "" reader ${name})
    add_test(NAME fuzz_${reader}
             COMMAND ${PROJECT_SOURCE_DIR}/fuzz/run_fuzz.sh ${reader} ${fuzz_build}/fuzz
                     ${HEADWISE_FUZZ_SECONDS} ${PROJECT_SOURCE_DIR}/../shared)
    math(EXPR limit "${HEADWISE_FUZZ_SECONDS} * 3 + 120")
    set_tests_properties(fuzz_${reader} PROPERTIES FIXTURES_REQUIRED headwise_fuzz LABELS fuzz TIMEOUT ${limit})
  endforeach()
endif()
