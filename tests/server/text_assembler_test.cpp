// Streaming text: UTF-8 characters split over tokens are held until complete; stop
// strings are cut before their first occurrence, even when split over tokens, and a
// tail that might start one is held only while it could.
#include <gtest/gtest.h>

#include "server/text_assembler.hpp"
#include "server/utf8.hpp"

namespace headwise::server {
namespace {

TEST(Utf8, CompletePrefix) {
  EXPECT_EQ(utf8_complete_prefix(""), 0u);
  EXPECT_EQ(utf8_complete_prefix("abc"), 3u);
  EXPECT_EQ(utf8_complete_prefix("a\xC3"), 1u);              // é's lead byte alone
  EXPECT_EQ(utf8_complete_prefix("a\xC3\xA9"), 3u);          // é complete
  EXPECT_EQ(utf8_complete_prefix("\xF0\x9F\x98"), 0u);       // 😀 missing its last byte
  EXPECT_EQ(utf8_complete_prefix("\xF0\x9F\x98\x80"), 4u);
  EXPECT_EQ(utf8_complete_prefix("x\xE2\x82"), 1u);          // € missing one byte
  EXPECT_EQ(utf8_complete_prefix("\x80\x80"), 2u);           // stray continuations never complete
  EXPECT_EQ(utf8_complete_prefix("a\xFF"), 2u);              // invalid lead byte: not held
}

// Feeds `pieces` and returns what was sent, chunk by chunk.
std::vector<std::string> feed(TextAssembler* t, const std::vector<std::string>& pieces, bool* stopped) {
  std::vector<std::string> out;
  for (const std::string& p : pieces) {
    out.push_back(t->push(p, stopped));
    if (*stopped) return out;
  }
  out.push_back(t->flush());
  return out;
}

TEST(TextAssembler, NeverSplitsACharacter) {
  TextAssembler t;
  bool stopped = false;
  // "é" and "😀" arrive one byte per token (byte-fallback pieces).
  auto out = feed(&t, {"caf", "\xC3", "\xA9", " ", "\xF0", "\x9F", "\x98", "\x80", "!"}, &stopped);
  EXPECT_FALSE(stopped);
  EXPECT_EQ(out, (std::vector<std::string>{"caf", "", "\xC3\xA9", " ", "", "", "", "\xF0\x9F\x98\x80", "!", ""}));
}

TEST(TextAssembler, StopStringAcrossTokens) {
  TextAssembler t({"The end"});
  bool stopped = false;
  auto out = feed(&t, {"Happy. Th", "e e", "nd of it"}, &stopped);
  EXPECT_TRUE(stopped);
  std::string all;
  for (auto& s : out) all += s;
  EXPECT_EQ(all, "Happy. ");
  EXPECT_EQ(out[0], "Happy. ");  // "Th" held: it may start the stop string
}

TEST(TextAssembler, HeldTailReleasedWhenItDiverges) {
  TextAssembler t({"\n\n"});
  bool stopped = false;
  EXPECT_EQ(t.push("one\n", &stopped), "one");
  EXPECT_EQ(t.push("two", &stopped), "\ntwo");
  EXPECT_FALSE(stopped);
  EXPECT_EQ(t.push("\n", &stopped), "");
  EXPECT_EQ(t.push("\nrest", &stopped), "");
  EXPECT_TRUE(stopped);
}

TEST(TextAssembler, EarliestOfSeveralStops) {
  TextAssembler t({"cat", "a"});
  bool stopped = false;
  EXPECT_EQ(t.push("the cat sat", &stopped), "the ");  // "cat" at 4 comes before "a" at 5
  EXPECT_TRUE(stopped);
}

TEST(TextAssembler, FlushReturnsHeldTail) {
  TextAssembler t({"STOP"});
  bool stopped = false;
  EXPECT_EQ(t.push("abc ST", &stopped), "abc ");
  EXPECT_EQ(t.flush(), "ST");
}

}  // namespace
}  // namespace headwise::server
