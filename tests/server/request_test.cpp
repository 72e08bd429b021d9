// Request bodies against OpenAI's schemas: what is accepted, and that every rejection
// is a 400 naming the field.
#include <gtest/gtest.h>

#include "server/chat_template.hpp"
#include "server/metrics.hpp"
#include "server/request.hpp"

namespace headwise::server {
namespace {

TEST(Request, CompletionFields) {
  ParsedRequest r;
  ASSERT_FALSE(parse_completion_request(
      R"({"model":"m","prompt":"hi","max_tokens":7,"temperature":0,"top_p":0.5,"seed":-3,"stop":["a","b"],
          "stream":true,"stream_options":{"include_usage":true},"logprobs":2,"n":1,"user":"u","ignore_eos":true})", &r));
  EXPECT_EQ(r.model, "m");
  EXPECT_EQ(r.prompt_text, "hi");
  EXPECT_FALSE(r.prompt_is_tokens);
  EXPECT_EQ(r.sampling.max_tokens, 7);
  EXPECT_EQ(r.sampling.temperature, 0.0f);
  EXPECT_EQ(r.sampling.top_p, 0.5f);
  EXPECT_TRUE(r.sampling.has_seed);
  EXPECT_EQ(r.sampling.seed, static_cast<uint64_t>(-3));
  EXPECT_EQ(r.sampling.stop, (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(r.stream && r.include_usage);
  EXPECT_EQ(r.sampling.logprobs, 2);
  EXPECT_TRUE(r.sampling.ignore_eos);
}

TEST(Request, CompletionDefaultsAndTokenPrompts) {
  ParsedRequest r;
  ASSERT_FALSE(parse_completion_request(R"({"prompt":[1,2,3]})", &r));
  EXPECT_TRUE(r.prompt_is_tokens);
  EXPECT_EQ(r.prompt_tokens, (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(r.sampling.max_tokens, 16);  // OpenAI's default
  EXPECT_EQ(r.sampling.temperature, 1.0f);
  ParsedRequest q;
  ASSERT_FALSE(parse_completion_request(R"({"prompt":[[5,6]], "max_tokens": 2.0})", &q));
  EXPECT_EQ(q.prompt_tokens, (std::vector<int32_t>{5, 6}));
  EXPECT_EQ(q.sampling.max_tokens, 2);
  ParsedRequest s;
  ASSERT_FALSE(parse_completion_request(R"({"prompt":["only one"]})", &s));
  EXPECT_EQ(s.prompt_text, "only one");
  EXPECT_FALSE(s.sampling.ignore_eos);
}

TEST(Request, RejectionsNameTheField) {
  const std::pair<const char*, const char*> cases[] = {
      {"not json", ""},
      {"[1]", ""},
      {R"({})", "prompt"},
      {R"({"prompt":3})", "prompt"},
      {R"({"prompt":["a","b"]})", "prompt"},
      {R"({"prompt":[-1]})", "prompt"},
      {R"({"prompt":"x","max_tokens":0})", "max_tokens"},
      {R"({"prompt":"x","max_tokens":"5"})", "max_tokens"},
      {R"({"prompt":"x","max_tokens":2.5})", "max_tokens"},
      {R"({"prompt":"x","temperature":2.5})", "temperature"},
      {R"({"prompt":"x","top_p":0})", "top_p"},
      {R"({"prompt":"x","n":2})", "n"},
      {R"({"prompt":"x","stop":[1]})", "stop"},
      {R"({"prompt":"x","stop":["a","b","c","d","e"]})", "stop"},
      {R"({"prompt":"x","stream":1})", "stream"},
      {R"({"prompt":"x","ignore_eos":"yes"})", "ignore_eos"},
      {R"({"prompt":"x","logprobs":21})", "logprobs"},
      {R"({"prompt":"x","echo":true})", "echo"},
      {R"({"prompt":"x","model":1})", "model"},
      {R"({"prompt":"x","seed":18446744073709551615})", "seed"},
      // Values the JSON parser itself refuses, named by the key they stand under
      // (nested: the top-level field); an error in a key is not put on the key before.
      {R"({"prompt":"x","temperature":1e999})", "temperature"},
      {R"({"prompt":"x","top_p":NaN})", "top_p"},
      {"{\"prompt\":\"a\xff\"}", "prompt"},
      {R"({"prompt":"x","stream_options":{"include_usage":tru}})", "stream_options"},
      {"{\"prompt\":\"x\",\"k\xff\":1}", ""},
  };
  for (const auto& [body, param] : cases) {
    ParsedRequest r;
    const ApiError e = parse_completion_request(body, &r);
    EXPECT_EQ(e.status, 400) << body;
    EXPECT_EQ(e.param, param) << body << ": " << e.message;
    EXPECT_FALSE(e.message.empty());
  }
}

TEST(Request, Chat) {
  ParsedRequest r;
  ASSERT_FALSE(parse_chat_request(
      R"({"messages":[{"role":"developer","content":"be brief"},{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},
          {"role":"assistant","content":null}],"max_completion_tokens":3,"logprobs":true,"top_logprobs":4})", &r));
  ASSERT_EQ(r.messages.size(), 3u);
  EXPECT_EQ(r.messages[0].role, "system");
  EXPECT_EQ(r.messages[1].content, "ab");
  EXPECT_EQ(r.messages[2].content, "");
  EXPECT_EQ(r.sampling.max_tokens, 3);
  EXPECT_EQ(r.sampling.logprobs, 4);
  EXPECT_EQ(ParsedRequest().sampling.max_tokens, -1);  // chat: until the context is full
  for (const char* body : {R"({"messages":[]})", R"({"messages":[{"role":"tool","content":"x"}]})",
                           R"({"messages":[{"role":"user"}]})", R"({"messages":"hi"})",
                           R"({"messages":[{"role":"user","content":"x"}],"top_logprobs":1})"}) {
    ParsedRequest q;
    EXPECT_EQ(parse_chat_request(body, &q).status, 400) << body;
  }
}

TEST(ChatTemplate, DetectFromJinjaText) {
  EXPECT_EQ(detect_chat_template("{% for m in messages %}<|im_start|>{{ m.role }}"), ChatTemplate::chatml);
  EXPECT_EQ(detect_chat_template("'<|start_header_id|>' + message['role']"), ChatTemplate::llama3);
  EXPECT_EQ(detect_chat_template("{{ bos_token + '[INST] ' + content.strip() }}"), ChatTemplate::llama2);
  EXPECT_EQ(detect_chat_template("{{ messages }}"), ChatTemplate::none);
  EXPECT_EQ(chat_template_from_name("llama3"), ChatTemplate::llama3);
  EXPECT_EQ(chat_template_from_name("jinja"), ChatTemplate::none);
}

// The reference strings follow the published templates (Qwen's ChatML, Meta's Llama 3
// and Llama 2 chat templates, BOS left to the tokenizer); tests/server/
// chat_template_test.mjs checks the same against the real Jinja templates.
TEST(ChatTemplate, Render) {
  const std::vector<ChatMessage> m = {{"system", "Be kind."}, {"user", " Hi! "}, {"assistant", "Hello."}, {"user", "Story?"}};
  EXPECT_EQ(render_chat(ChatTemplate::chatml, m),
            "<|im_start|>system\nBe kind.<|im_end|>\n<|im_start|>user\n Hi! <|im_end|>\n<|im_start|>assistant\nHello.<|im_end|>\n"
            "<|im_start|>user\nStory?<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(render_chat(ChatTemplate::llama3, m),
            "<|start_header_id|>system<|end_header_id|>\n\nBe kind.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi!<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\nHello.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nStory?<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
  EXPECT_EQ(render_chat(ChatTemplate::llama2, m),
            "[INST] <<SYS>>\nBe kind.\n<</SYS>>\n\n Hi! [/INST] Hello. </s><s>[INST] Story? [/INST]");
}

TEST(Metrics, PrometheusText) {
  Metrics m;
  m.count_request("/v1/completions", 200);
  m.count_request("/v1/completions", 429);
  m.count_request("/v1/completions", 429);
  m.add_tokens(5, 7);
  m.observe_ttft(0.02);
  m.observe_ttft(100);
  const std::string t = m.render(3, 2, 4);
  EXPECT_NE(t.find("headwise_requests_total{endpoint=\"/v1/completions\",status=\"429\"} 2\n"), std::string::npos);
  EXPECT_NE(t.find("headwise_completion_tokens_total 7\n"), std::string::npos);
  EXPECT_NE(t.find("headwise_queue_length 3\n"), std::string::npos);
  EXPECT_NE(t.find("headwise_active_sessions 2\n"), std::string::npos);
  // Each family: HELP, TYPE, then its samples.
  EXPECT_NE(t.find("# HELP headwise_queue_length Requests waiting for a session.\n"
                   "# TYPE headwise_queue_length gauge\nheadwise_queue_length 3\n"),
            std::string::npos);
  EXPECT_NE(t.find("# HELP headwise_requests_total HTTP requests answered, by endpoint and status code.\n"
                   "# TYPE headwise_requests_total counter\nheadwise_requests_total{"),
            std::string::npos);
  EXPECT_NE(t.find("# TYPE headwise_decode_batch_size histogram\nheadwise_decode_batch_size_bucket{le=\"1\"} 0\n"),
            std::string::npos);
  // Buckets are cumulative; +Inf holds everything.
  EXPECT_NE(t.find("headwise_time_to_first_token_seconds_bucket{le=\"0.01\"} 0\n"), std::string::npos);
  EXPECT_NE(t.find("headwise_time_to_first_token_seconds_bucket{le=\"0.025\"} 1\n"), std::string::npos);
  EXPECT_NE(t.find("headwise_time_to_first_token_seconds_bucket{le=\"30\"} 1\n"), std::string::npos);
  EXPECT_NE(t.find("headwise_time_to_first_token_seconds_bucket{le=\"+Inf\"} 2\n"), std::string::npos);
  EXPECT_EQ(m.requests(429), 2u);
}

}  // namespace
}  // namespace headwise::server
