// `headwise heads` and `headwise maps`, run as programs on the tiny synthetic model
// (always available): the JSON table is the library's head_roles() verbatim, the page
// is self-contained with escaped labels and complete data, the PNGs decode with
// Python's zlib (independent of tools/png.cpp) to the expected picture, and bad usage
// exits 2, runtime failures 1. The browser side is tests/tools/maps_browser_test.py.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/tools/run_cli.hpp"

#include "headwise/analysis/head_roles.hpp"
#include "tools/maps_common.hpp"

namespace headwise::test {
namespace {


using Result = CliResult;

Result sh(const std::string& cmd) { return run_shell(cmd); }
Result headwise(const std::string& args) { return run_headwise(args); }

std::string temp_dir() {
  std::string d = ::testing::TempDir() + "maps_cli_XXXXXX";
  EXPECT_NE(mkdtemp(d.data()), nullptr);
  return d;
}

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

TEST(HeadsCli, JsonIsTheLibrarysRoleTable) {
  const Result r = headwise("heads --synthetic tiny --json --threads 1 --seed 9");
  ASSERT_EQ(r.code, 0) << r.out;
  const nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.out;
  EXPECT_FALSE(j.contains("ablation"));
  std::shared_ptr<const Model> m;
  ASSERT_TRUE(Model::synthetic("tiny", 20261129, &m).ok());  // the seed --synthetic uses
  RoleOptions ro;
  ro.threads = 1;
  ro.seed = 9;
  RoleTable t;
  ASSERT_TRUE(head_roles(*m, tools::encode_for(*m, tools::kHeadsDefaultText), ro, &t).ok());
  ASSERT_EQ(j["layers"], 2);
  ASSERT_EQ(j["heads_per_layer"], 4);
  EXPECT_EQ(j["text_tokens"], t.text_tokens);
  EXPECT_EQ(j["induction_length"], 32);
  ASSERT_EQ(j["heads"].size(), 8u);
  for (size_t i = 0; i < 8; ++i) {
    const nlohmann::json& h = j["heads"][i];
    const HeadRole& w = t.heads[i];
    EXPECT_EQ(h["layer"], w.layer);
    EXPECT_EQ(h["head"], w.head);
    // printed with 17 significant digits: the same doubles
    EXPECT_EQ(h["prev_token"].get<double>(), w.scores.prev_token);
    EXPECT_EQ(h["sink"].get<double>(), w.scores.sink);
    EXPECT_EQ(h["local"].get<double>(), w.scores.local);
    EXPECT_EQ(h["entropy"].get<double>(), w.scores.entropy);
    EXPECT_EQ(h["induction"].get<double>(), w.scores.induction);
    EXPECT_EQ(h["role"], w.role);
    EXPECT_FALSE(h.contains("loss_increase"));
  }
}

TEST(HeadsCli, TextAddsAblation) {
  const std::string dir = temp_dir(), text = dir + "/t.txt";
  std::ofstream(text) << "the cat sat on the mat and the dog sat on the log";
  const Result r = headwise("heads --synthetic tiny --json --threads 1 --text '" + text + "'");
  ASSERT_EQ(r.code, 0) << r.out;
  const nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.contains("ablation")) << r.out;
  std::shared_ptr<const Model> m;
  ASSERT_TRUE(Model::synthetic("tiny", 20261129, &m).ok());
  Ablation a;
  ASSERT_TRUE(ablation_study(*m, tools::encode_for(*m, slurp(text)), 1, &a).ok());
  EXPECT_EQ(j["ablation"]["baseline_loss"].get<double>(), a.baseline_loss);
  ASSERT_EQ(j["ablation"]["layer_loss_increase"].size(), 2u);
  EXPECT_EQ(j["ablation"]["layer_loss_increase"][1].get<double>(), a.layer[1]);
  EXPECT_EQ(j["heads"][6]["loss_increase"].get<double>(), a.head[1][2]);
  // The table form carries the same numbers.
  const Result t = headwise("heads --synthetic tiny --threads 1 --text '" + text + "'");
  ASSERT_EQ(t.code, 0);
  EXPECT_NE(t.out.find("zeroing a whole layer"), std::string::npos) << t.out;
  EXPECT_EQ(std::count(t.out.begin(), t.out.end(), '\n'), 1 + 1 + 8 + 1 + 1 + 2) << t.out;
}

TEST(MapsCli, PageIsSelfContainedEscapedAndComplete) {
  const std::string dir = temp_dir(), page = dir + "/m.html";
  const Result r = headwise("maps --synthetic tiny --threads 1 --prompt '<b>x & \"y\"</b>' -o '" + page + "'");
  ASSERT_EQ(r.code, 0) << r.out;
  const std::string html = slurp(page);
  for (const char* bad : {"http:", "https:", "src=", "<link", "url(", "@import", "<b>"})
    EXPECT_EQ(html.find(bad), std::string::npos) << bad;
  EXPECT_NE(html.find("&lt;"), std::string::npos);  // the prompt's chips, escaped
  const std::string open = "<script type=\"application/json\" id=\"data\">";
  const size_t a = html.find(open), b = html.find("</script>", a);
  ASSERT_NE(a, std::string::npos);
  const nlohmann::json d =
      nlohmann::json::parse(html.substr(a + open.size(), b - a - open.size()), nullptr, false);
  ASSERT_TRUE(d.is_object());
  std::shared_ptr<const Model> m;
  ASSERT_TRUE(Model::synthetic("tiny", 20261129, &m).ok());
  const std::vector<int32_t> ids = m->tokenizer()->encode("<b>x & \"y\"</b>", true);
  const size_t T = ids.size();
  ASSERT_EQ(d["tokens"].size(), T);
  EXPECT_EQ(d["ids"].get<std::vector<int32_t>>(), ids);
  std::string joined;
  for (size_t i = 1; i < T; ++i) joined += d["tokens"][i].get<std::string>();
  EXPECT_EQ(joined, "<b>x & \"y\"</b>");  // labels are the piece bytes, spaces and all
  ASSERT_EQ(d["maps"].size(), 2u);
  ASSERT_EQ(d["maps"][1].size(), 4u);
  for (const auto& layer : d["maps"])
    for (const auto& head : layer) {
      ASSERT_EQ(head.size(), T * T);
      for (size_t i = 0; i < T; ++i) {
        double sum = 0;
        for (size_t j = 0; j < T; ++j) {
          if (j > i) {
            ASSERT_EQ(head[i * T + j].get<double>(), 0.0);
          }
          sum += head[i * T + j].get<double>();
        }
        EXPECT_NEAR(sum, 1.0, 1e-3);  // 4 significant digits per weight
      }
    }
  EXPECT_TRUE(d["ablation"].is_null());
  EXPECT_EQ(d["roles"].size(), 8u);
}

TEST(MapsCli, PngsDecodeWithZlib) {
  const std::string dir = temp_dir();
  const Result r = headwise("maps --synthetic tiny --threads 1 --prompt abcdefgh -o '" + dir +
                            "/m.html' --png '" + dir + "/png'");
  ASSERT_EQ(r.code, 0) << r.out;
  // Decodes with zlib, checks every chunk's CRC, prints width, height and 4 pixels:
  // the frame corner, cell (0,1) above the diagonal, cells (0,0) and (T-1,0).
  const std::string py = R"PY(
import struct, sys, zlib
d = open(sys.argv[1], 'rb').read()
assert d[:8] == b'\x89PNG\r\n\x1a\n'
i, idat = 8, b''
while i < len(d):
    n, kind = struct.unpack('>I4s', d[i:i+8]); body = d[i+8:i+8+n]
    assert struct.unpack('>I', d[i+8+n:i+12+n])[0] == zlib.crc32(kind + body), kind
    if kind == b'IHDR': w, h, depth, ctype = struct.unpack('>IIBB', body[:10])
    if kind == b'IDAT': idat += body
    i += 12 + n
assert (depth, ctype) == (8, 2)
raw = zlib.decompress(idat)
assert len(raw) == h * (1 + 3 * w) and all(raw[y * (1 + 3 * w)] == 0 for y in range(h))
px = lambda x, y: tuple(raw[y * (1 + 3 * w) + 1 + 3 * x: y * (1 + 3 * w) + 4 + 3 * x])
T = int(sys.argv[2]); c = (w - 2) // T
m = c // 2
print(w, h, px(0, 0), px(1 + c + m, 1 + m), px(1 + m, 1 + m), px(1 + m, 1 + (T - 1) * c + m))
)PY";
  std::ofstream(dir + "/check.py") << py;
  std::shared_ptr<const Model> m;
  ASSERT_TRUE(Model::synthetic("tiny", 20261129, &m).ok());
  const int T = static_cast<int>(m->tokenizer()->encode("abcdefgh", true).size());
  const int cell = std::min(16, 256 / T), n = T * cell + 2;
  const Result p = sh(std::string(HEADWISE_PYTHON) + " '" + dir + "/check.py' '" + dir + "/png/L1_H3.png' " +
                      std::to_string(T));
  ASSERT_EQ(p.code, 0) << p.out;
  std::printf("L1_H3.png: %s", p.out.c_str());
  // Row 0 attends only to itself: weight 1, the darkest colour; masked cells are white.
  EXPECT_EQ(p.out.substr(0, p.out.find(" (")), std::to_string(n) + " " + std::to_string(n));
  EXPECT_NE(p.out.find("(160, 160, 160) (255, 255, 255) (8, 48, 107) ("), std::string::npos) << p.out;
  EXPECT_EQ(p.out.find("(255, 255, 255)\n"), std::string::npos) << "cell (T-1, 0) is not drawn: " << p.out;
  const Result o =
      sh(std::string(HEADWISE_PYTHON) + " '" + dir + "/check.py' '" + dir + "/png/overview.png' 1");
  EXPECT_EQ(o.code, 0) << o.out;
  for (int l = 0; l < 2; ++l)
    for (int h = 0; h < 4; ++h)
      EXPECT_EQ(access((dir + "/png/L" + std::to_string(l) + "_H" + std::to_string(h) + ".png").c_str(), R_OK),
                0);
}

TEST(MapsCli, ExitCodes) {
  EXPECT_EQ(headwise("maps --bogus 2>/dev/null").code, 2);
  EXPECT_EQ(headwise("maps --synthetic tiny --threads -1 2>/dev/null").code, 2);
  EXPECT_EQ(headwise("maps a.bin b.bin 2>/dev/null").code, 2);
  EXPECT_EQ(headwise("heads --seed x 2>/dev/null").code, 2);
  EXPECT_EQ(headwise("heads --synthetic tiny --text /nonexistent/text.txt 2>/dev/null").code, 1);
  EXPECT_EQ(headwise("heads /nonexistent/model.bin --tokenizer /nonexistent/t.bin 2>/dev/null").code, 1);
  EXPECT_EQ(headwise("maps --synthetic tiny -o /nonexistent/dir/m.html 2>/dev/null").code, 1);
  EXPECT_EQ(headwise("maps --synthetic nosuch 2>/dev/null").code, 1);
  EXPECT_EQ(headwise("maps --help").code, 0);
  EXPECT_EQ(headwise("heads --help").code, 0);
}

}  // namespace
}  // namespace headwise::test
