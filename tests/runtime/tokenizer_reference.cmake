# headwise's tokenizers against llama.cpp and Hugging Face tokenizers (issue 9): the
# corpus script writes the strings, the node script asks the references (npm test peers
# in tests/node/node_modules: a missing package fails the test), the checker compares.
add_executable(tokenizer_reference_check ${CMAKE_CURRENT_SOURCE_DIR}/runtime/tokenizer_reference_check.cpp)
target_link_libraries(tokenizer_reference_check PRIVATE headwise nlohmann_json::nlohmann_json)
target_include_directories(tokenizer_reference_check PRIVATE ${PROJECT_SOURCE_DIR})
target_compile_options(tokenizer_reference_check PRIVATE ${HEADWISE_WARNINGS})

set(HEADWISE_NODE node CACHE STRING "Node.js for the npm reference peers")
set(_tokref ${PROJECT_BINARY_DIR}/tokenizer_reference)
set(_lenml ${PROJECT_SOURCE_DIR}/tests/node/node_modules/@lenml)
# The variants (tokenizer_variants.py) cover the pre-tokenizers and normalizers the three
# real files do not use.
add_test(NAME tokenizer_reference_node
  COMMAND sh -c "set -e; rm -rf '${_tokref}'; mkdir -p '${_tokref}/variants'; '${HEADWISE_PYTHON}' '${CMAKE_CURRENT_SOURCE_DIR}/runtime/tokenizer_corpus.py' '${_tokref}/corpus.json'; '${HEADWISE_PYTHON}' '${CMAKE_CURRENT_SOURCE_DIR}/runtime/tokenizer_variants.py' '${_lenml}' '${_tokref}/variants' > /dev/null; cd '${PROJECT_SOURCE_DIR}/tests/node'; '${HEADWISE_NODE}' tokenizer_reference.js '${_tokref}/corpus.json' '${_tokref}/reference.json' '${PROJECT_SOURCE_DIR}/../shared/vocab/ggml-vocab-llama-spm.gguf' '${PROJECT_SOURCE_DIR}/../shared/vocab/ggml-vocab-gpt-2.gguf' -- '${_lenml}/tokenizer-llama2/models/tokenizer.json' '${_lenml}/tokenizer-llama3/models/tokenizer.json' '${_lenml}/tokenizer-qwen3/models/tokenizer.json' '${_tokref}'/variants/*.json")
set_tests_properties(tokenizer_reference_node PROPERTIES FIXTURES_SETUP tokenizer_reference TIMEOUT 300)
add_test(NAME tokenizer_vs_llamacpp_and_hf
  COMMAND tokenizer_reference_check ${_tokref}/corpus.json ${_tokref}/reference.json)
set_tests_properties(tokenizer_vs_llamacpp_and_hf PROPERTIES FIXTURES_REQUIRED tokenizer_reference TIMEOUT 300)
