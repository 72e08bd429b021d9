#include "graph/json_strict.hpp"

#include <set>
#include <vector>

namespace headwise::graph {
namespace {

using json = nlohmann::json;

// Checks nesting and keys while nlohmann's SAX parser walks the text; stops at the
// first problem (returning false ends the parse).
class Checker : public nlohmann::json_sax<json> {
 public:
  explicit Checker(int max_depth) : max_depth_(max_depth) {}
  std::string error;

  bool null() override { return value_done(); }
  bool boolean(bool) override { return value_done(); }
  bool number_integer(number_integer_t) override { return value_done(); }
  bool number_unsigned(number_unsigned_t) override { return value_done(); }
  bool number_float(number_float_t, const string_t&) override { return value_done(); }
  bool string(string_t&) override { return value_done(); }
  bool binary(binary_t&) override { return value_done(); }
  bool start_object(std::size_t) override { return open('{'); }
  bool end_object() override { return close(); }
  bool start_array(std::size_t) override { return open('['); }
  bool end_array() override { return close(); }
  bool key(string_t& k) override {
    Level& l = levels_.back();
    if (!l.keys.insert(k).second) {
      error = "duplicate key '" + path(k) + "'";
      return false;
    }
    l.key = k;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    // Where it failed, when inside an object ("at 'temperature'": a number that
    // overflows a double, an invalid literal, a bad string there).
    const std::string at = levels_.empty() ? "" : path(levels_.back().key);
    error = std::string("malformed JSON") + (at.empty() ? "" : " at '" + at + "'") + ": " + e.what();
    return false;
  }

 private:
  struct Level {
    char kind;
    std::string key;  // the current key of an object
    std::set<std::string> keys;
  };
  bool open(char kind) {
    if (static_cast<int>(levels_.size()) >= max_depth_) {
      error = "JSON nested deeper than " + std::to_string(max_depth_) + " levels (at '" + path("") +
              "'), the limit of this reader";
      return false;
    }
    levels_.push_back(Level{kind, {}, {}});
    return true;
  }
  bool close() {
    levels_.pop_back();
    return value_done();
  }
  // A value ended: its key is no longer where the parser is (an error in the next key
  // must not be reported at this one).
  bool value_done() {
    if (!levels_.empty()) levels_.back().key.clear();
    return true;
  }
  // "settings.n_heads", "block[].op": where a key sits, for messages.
  std::string path(const std::string& last) const {
    std::string p;
    for (size_t i = 0; i < levels_.size(); ++i) {
      const Level& l = levels_[i];
      const bool innermost = i + 1 == levels_.size();
      if (l.kind == '[') {
        p += "[]";
      } else {
        const std::string& k = innermost ? last : l.key;
        if (k.empty() && innermost) continue;
        if (!p.empty()) p += '.';
        p += k;
      }
    }
    return p;
  }
  int max_depth_;
  std::vector<Level> levels_;
};

}  // namespace

Status parse_json_strict(const char* begin, const char* end, const std::string& where,
                         json* out, int max_depth) {
  Checker checker(max_depth);
  bool ok = false;
  try {
    ok = json::sax_parse(begin, end, &checker);
  } catch (const std::exception& e) {  // the SAX parser reports through parse_error; a backstop
    return format_error(where + ": malformed JSON: " + e.what());
  }
  if (!ok) return format_error(where + ": " + (checker.error.empty() ? "malformed JSON" : checker.error));
  try {
    *out = json::parse(begin, end);
  } catch (const std::exception& e) {
    return format_error(where + ": malformed JSON: " + e.what());
  }
  return Status::Ok();
}

std::string json_brief(const json& v, size_t max_chars) {
  std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
  if (s.size() > max_chars) s = s.substr(0, max_chars) + "...";
  return s;
}

}  // namespace headwise::graph
