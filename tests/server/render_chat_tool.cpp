// render_chat_tool chatml|llama3|llama2 < messages.json: prints server/'s rendering of
// a JSON array of {role, content} messages (for the comparison with real Jinja
// templates in chat_template_test.mjs).
#include <iostream>
#include <iterator>
#include <string>

#include <nlohmann/json.hpp>

#include "server/chat_template.hpp"

int main(int argc, char** argv) {
  using namespace headwise::server;
  if (argc != 2 || chat_template_from_name(argv[1]) == ChatTemplate::none) {
    std::cerr << "usage: render_chat_tool chatml|llama3|llama2 < messages.json\n";
    return 2;
  }
  const std::string in((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (!j.is_array()) {
    std::cerr << "render_chat_tool: stdin is not a JSON array of messages\n";
    return 1;
  }
  std::vector<ChatMessage> messages;
  for (const auto& m : j) messages.push_back({m.value("role", ""), m.value("content", "")});
  std::cout << render_chat(chat_template_from_name(argv[1]), messages);
  return 0;
}
