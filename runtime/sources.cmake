list(APPEND HEADWISE_SOURCES
  runtime/attention_api.cpp
  runtime/c_api.cpp
  runtime/peak.cpp
  runtime/workspace.cpp
)
