// Hostile input to the graph/ readers (issue 12): limits checked before anything is
// sized from a file, strict JSON (no duplicate keys, bounded nesting), only regular
// files opened. Each case fails with a message naming the culprit.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "graph/description.hpp"
#include "graph/input_file.hpp"
#include "graph/json_strict.hpp"
#include "graph/presets.hpp"
#include "graph/weights.hpp"
#include "tests/graph/small_model.hpp"
#include "tests/test_files.hpp"

namespace headwise::graph {
namespace {

using json = nlohmann::json;
using test::expect_names;
using test::spit;
using test::TempDir;

json valid() {
  return json::parse(
      description_to_json(llama_preset(small_settings(), 24, true, "t").desc, "w.safetensors", ""));
}

Status parse_text(const std::string& text) {
  ModelDesc d;
  return parse_description(text, "/m/model.json", &d);
}

TEST(JsonStrict, DuplicateKeysAreRefusedWithTheirPath) {
  json out;
  const std::string t = R"({"a": 1, "settings": {"n_heads": 8, "n_heads": 16}})";
  expect_names(parse_json_strict(t.data(), t.data() + t.size(), "f.json", &out),
               {"f.json", "duplicate key 'settings.n_heads'"});
  const std::string top = R"({"name": "x", "b": [], "name": "y"})";
  expect_names(parse_json_strict(top.data(), top.data() + top.size(), "f.json", &out),
               {"duplicate key 'name'"});
  // The same key in different objects is fine.
  const std::string ok = R"({"a": {"k": 1}, "b": {"k": 2}, "c": [{"k": 1}, {"k": 2}]})";
  EXPECT_TRUE(parse_json_strict(ok.data(), ok.data() + ok.size(), "f.json", &out).ok());
}

TEST(JsonStrict, ParseErrorsNameTheKeyTheyStandUnder) {
  json out;
  const std::string t = R"({"settings": {"n_heads": 8, "norm_eps": 1e999}})";
  expect_names(parse_json_strict(t.data(), t.data() + t.size(), "f.json", &out),
               {"f.json", "malformed JSON at 'settings.norm_eps'", "1e999"});
  // A broken key after a good value is not reported at the key before it.
  const std::string k = "{\"a\": 1, \"b\xff\": 2}";
  const Status s = parse_json_strict(k.data(), k.data() + k.size(), "f.json", &out);
  expect_names(s, {"malformed JSON"});
  EXPECT_EQ(s.message().find("at 'a'"), std::string::npos) << s.message();
}

TEST(JsonStrict, NestingIsBoundedAndTheLimitItselfParses) {
  json out;
  const std::string at = std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']');
  EXPECT_TRUE(parse_json_strict(at.data(), at.data() + at.size(), "f.json", &out).ok());
  const std::string over = std::string(kMaxJsonDepth + 1, '[') + std::string(kMaxJsonDepth + 1, ']');
  expect_names(parse_json_strict(over.data(), over.data() + over.size(), "f.json", &out),
               {"f.json", "nested deeper than 64"});
  // 200,000 levels (unclosed): refused by the SAX pass, no recursion, no stack overflow.
  const std::string deep(200000, '[');
  expect_names(parse_json_strict(deep.data(), deep.data() + deep.size(), "f.json", &out), {"nested deeper"});
}

TEST(JsonStrict, BriefCutsLongValues) {
  const json big = json(std::vector<int>(100000, 7));
  EXPECT_LE(json_brief(big).size(), 83u);
  EXPECT_EQ(json_brief(json(5)), "5");
}

TEST(HostileDescription, HeadsTimesHeadDimMustNotWrap) {
  json j = valid();
  j["settings"]["n_heads"] = 536870920;  // × head_dim 8 = 2^32 + 64: wrapped to 64 in int
  j["settings"]["n_kv_heads"] = 536870920;
  j["settings"]["head_dim"] = 8;
  expect_names(parse_text(j.dump()), {"n_heads × head_dim", "limit of this build"});
}

TEST(HostileDescription, FloatsMustBeFiniteFloats) {
  for (const char* key : {"norm_eps", "rope_theta"}) {
    json j = valid();
    j["settings"][key] = 1e300;  // a double, inf as a float
    expect_names(parse_text(j.dump()), {"settings", key, "finite"});
  }
  json j = valid();
  j["block"][0]["eps"] = -1e39;
  expect_names(parse_text(j.dump()), {"block[0]", "eps"});
}

TEST(HostileDescription, DuplicateKeysAndDeepValuesAreRefused) {
  std::string t = valid().dump();
  t.replace(t.find("\"n_heads\":"), 0, "\"n_heads\":1,");
  expect_names(parse_text(t), {"/m/model.json", "duplicate key 'settings.n_heads'"});
  std::string deep = valid().dump();
  deep.insert(deep.size() - 1, ",\"comment\":" + std::string(5000, '[') + std::string(5000, ']'));
  expect_names(parse_text(deep), {"/m/model.json", "nested deeper"});
}

TEST(HostileDescription, EmptyWeightsSplitAndNodeLimits) {
  json j = valid();
  j["weights"] = "";
  expect_names(parse_text(j.dump()), {"weights", "empty"});
  j = valid();
  j["settings"]["n_layers"] = 1 << 30;
  expect_names(parse_text(j.dump()), {"n_layers 1073741824", "limit of this build"});
  j = valid();
  j["settings"]["head_dim"] = 512;
  expect_names(parse_text(j.dump()), {"head_dim 512", "limit of this build"});
  j = valid();
  for (json& n : j["block"])
    if (n["op"] == "linear") {
      n["out"] = {"a", "b"};
      n["split"] = {(int64_t(1) << 32) + 8, 8};  // adds up only modulo 2^32
      break;
    }
  expect_names(parse_text(j.dump()), {"split"});
}

TEST(InputFile, OnlyRegularFilesAreOpenedAndAFifoDoesNotBlock) {
  TempDir dir;
  const std::string fifo = dir.file("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  int fd;
  uint64_t size;
  const auto t0 = std::chrono::steady_clock::now();
  expect_names(open_input_file(fifo, "tokenizer file", &fd, &size), {fifo, "FIFO", "tokenizer file"});
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));  // returned at all
  expect_names(open_input_file("/dev/zero", "weights file", &fd, &size), {"/dev/zero", "character device"});
  expect_names(open_input_file(dir.file(""), "model description", &fd, &size), {"a directory"});
  expect_names(open_input_file("", "weights file", &fd, &size), {"weights file path is empty"});
  expect_names(open_input_file(dir.file("absent"), "weights file", &fd, &size), {"absent", "no such file"});
  std::unique_ptr<MappedFile> m;
  expect_names(MappedFile::open(fifo, &m), {fifo, "FIFO"});
  ModelDesc d;
  expect_names(load_description(fifo, &d), {fifo, "FIFO"});
  expect_names(load_description("/dev/zero", &d), {"/dev/zero", "character device"});
  spit(dir.file("big.txt"), std::string(100, 'x'));
  std::string text;
  expect_names(read_input_file(dir.file("big.txt"), "--text file", 99, &text), {"100 bytes", "99"});
  ASSERT_TRUE(read_input_file(dir.file("big.txt"), "--text file", 100, &text).ok());
  EXPECT_EQ(text, std::string(100, 'x'));
}

std::string le64(uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = char(v >> (8 * i));
  return s;
}

TEST(HostileSafetensors, DuplicateTensorNamesAndDeepHeadersAreRefused) {
  TempDir dir;
  const std::string entry = R"({"dtype":"F32","shape":[1],"data_offsets":[0,4]})";
  const std::string dup = "{\"w\":" + entry + ",\"w\":" + entry + "}";
  spit(dir.file("dup.safetensors"), le64(dup.size()) + dup + std::string(4, '\0'));
  std::unique_ptr<SafetensorsFile> f;
  expect_names(SafetensorsFile::open(dir.file("dup.safetensors"), &f), {"dup.safetensors", "duplicate key 'w'"});
  const std::string deep = "{\"w\":{\"dtype\":\"F32\",\"shape\":" + std::string(100000, '[') +
                           std::string(100000, ']') + ",\"data_offsets\":[0,0]}}";
  spit(dir.file("deep.safetensors"), le64(deep.size()) + deep);
  expect_names(SafetensorsFile::open(dir.file("deep.safetensors"), &f), {"deep.safetensors", "nested deeper"});
  // A long shape is reported in a bounded message, not dumped whole.
  std::string shape = "[";
  for (int i = 0; i < 100000; ++i) shape += i ? ",1" : "1";
  shape += ",-1]";
  const std::string longshape = "{\"w\":{\"dtype\":\"F32\",\"shape\":" + shape + ",\"data_offsets\":[0,4]}}";
  spit(dir.file("long.safetensors"), le64(longshape.size()) + longshape + std::string(4, '\0'));
  const Status s = SafetensorsFile::open(dir.file("long.safetensors"), &f);
  expect_names(s, {"tensor 'w'", "shape"});
  EXPECT_LT(s.message().size(), 400u) << s.message().size();
}

}  // namespace
}  // namespace headwise::graph
