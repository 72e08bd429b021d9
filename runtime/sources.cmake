list(APPEND HEADWISE_SOURCES
  runtime/attention_api.cpp
  runtime/c_api.cpp
  runtime/workspace.cpp
)
