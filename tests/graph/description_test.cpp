// The description parser: a valid description round-trips through
// description_to_json, and every malformed one fails with a message that names the
// file and the field or node at fault.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "graph/description.hpp"
#include "graph/presets.hpp"
#include "tests/graph/small_model.hpp"
#include "tests/status_assert.hpp"

namespace headwise::graph {
namespace {

using json = nlohmann::json;

json valid() {
  return json::parse(
      description_to_json(llama_preset(small_settings(), 24, true, "t").desc, "w.safetensors", ""));
}

Status parse(const json& j) {
  ModelDesc d;
  return parse_description(j.dump(), "/models/m/model.json", &d);
}

void expect_error(const json& j, std::initializer_list<std::string> words) {
  const Status s = parse(j);
  ASSERT_FALSE(s.ok()) << j.dump();
  EXPECT_EQ(s.code(), StatusCode::format_error);
  EXPECT_NE(s.message().find("/models/m/model.json"), std::string::npos) << s.message();
  for (const std::string& w : words) EXPECT_NE(s.message().find(w), std::string::npos) << s.message();
}

TEST(Description, ValidRoundTrips) {
  ModelDesc d;
  const json j = valid();
  HW_ASSERT_OK(parse_description(j.dump(), "/models/m/model.json", &d));
  EXPECT_EQ(d.weights_file, "/models/m/w.safetensors");
  EXPECT_EQ(d.settings.n_kv_heads, 2);
  EXPECT_EQ(d.block.size(), 15u);
  EXPECT_EQ(d.block[1].where, "block[1] (linear)");
  EXPECT_EQ(json::parse(description_to_json(d, "w.safetensors", "")), j);
}

TEST(Description, MalformedJson) {
  ModelDesc d;
  const Status s = parse_description("{\"format\": ", "/models/m/model.json", &d);
  EXPECT_EQ(s.code(), StatusCode::format_error);
  EXPECT_NE(s.message().find("malformed JSON"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("/models/m/model.json"), std::string::npos);
}

TEST(Description, FieldErrorsNameTheField) {
  json j = valid();
  j["format"] = "gguf";
  expect_error(j, {"format"});
  j = valid();
  j.erase("weights");
  expect_error(j, {"weights"});
  j = valid();
  j["bogus"] = 1;
  expect_error(j, {"unknown field 'bogus'"});
  j = valid();
  j["settings"].erase("vocab_size");
  expect_error(j, {"settings", "vocab_size"});
  j = valid();
  j["settings"]["n_heads"] = -4;
  expect_error(j, {"settings", "n_heads", "positive"});
  j = valid();
  j["settings"]["d_model"] = "16";
  expect_error(j, {"d_model", "integer"});
  j = valid();
  j["settings"]["rope_style"] = "sideways";
  expect_error(j, {"rope_style", "sideways"});
}

TEST(Description, InconsistentSettings) {
  json j = valid();
  j["settings"].erase("head_dim");
  j["settings"]["d_model"] = 18;  // not divisible by 4 heads
  expect_error(j, {"d_model (18)", "n_heads (4)"});
  j = valid();
  j["settings"]["n_kv_heads"] = 3;
  expect_error(j, {"n_heads (4)", "n_kv_heads (3)"});
  j = valid();
  j["settings"]["head_dim"] = 300;
  expect_error(j, {"head_dim 300"});
}

TEST(Description, NodeErrorsNameTheNode) {
  json j = valid();
  j["block"][3]["op"] = "convolution";
  expect_error(j, {"block[3]", "unknown op 'convolution'"});
  j = valid();
  j["block"][6]["in"] = json::array({"q", "k"});
  expect_error(j, {"block[6] (attention)", "3 input(s), got 2"});
  j = valid();
  j["block"][1].erase("weight");
  expect_error(j, {"block[1] (linear)", "weight"});
  j = valid();
  j["block"][1]["wieght"] = "x";
  expect_error(j, {"block[1] (linear)", "unknown field 'wieght'"});
  j = valid();
  j["block"][1]["layout"] = "rows";
  expect_error(j, {"block[1] (linear)", "layout"});
  j = valid();
  j["block"][1]["out"] = json::array({"a", "b"});
  expect_error(j, {"block[1] (linear)", "split"});
  j = valid();
  j["head"][0]["eps"] = -1;
  expect_error(j, {"head[0] (rmsnorm)", "eps"});
  j = valid();
  j["block"][12]["weight"] = "w";
  expect_error(j, {"block[12] (swiglu)", "takes no 'weight'"});
  j = valid();
  j["block"] = "all of them";
  expect_error(j, {"block", "array"});
}

}  // namespace
}  // namespace headwise::graph
