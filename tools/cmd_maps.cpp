// headwise maps — the attention weights of every layer and head for a prompt, as one
// self-contained HTML page (tools/maps_page.hpp) and optionally one PNG per head plus
// an overview PNG. With --text, the page also charts the loss increase when each head
// or layer is zeroed.
#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <string>
#include <vector>

#include "headwise/analysis/attention_maps.hpp"
#include "headwise/analysis/head_roles.hpp"
#include "tools/args.hpp"
#include "tools/commands.hpp"
#include "tools/maps_common.hpp"
#include "tools/maps_page.hpp"
#include "tools/png.hpp"

namespace headwise::tools {
namespace {

void usage(std::FILE* f) {
  std::fprintf(f,
      "usage: headwise maps [MODEL] [options]\n"
      "  MODEL            model.json, a folder with model.json, a GGUF file, a Hugging Face\n"
      "                   folder (config.json + safetensors), or a llama2.c checkpoint .bin\n"
      "                   (default: %s if present, else a built-in random model)\n"
      "  --tokenizer FILE tokenizer.bin (default for the default model: %s)\n"
      "  --prompt TEXT    the text whose attention is shown (default: \"%s\")\n"
      "  -o, --output F   the HTML page to write (default maps.html); self-contained: open it\n"
      "                   offline in any browser. Keys: left/right = head, up/down = layer;\n"
      "                   URL hash #layer=L&head=H selects a head\n"
      "  --png DIR        also write DIR/L{layer}_H{head}.png per head and DIR/overview.png\n"
      "  --text FILE      add bar charts of the next-token loss increase on this text (its\n"
      "                   first context-many tokens) when each head / each layer is zeroed\n"
      "  --threads N      threads (default: all cores)\n",
      kMapsDefaultModel, kMapsDefaultTokenizer, kMapsDefaultPrompt);
}

int fail(const std::string& m) {
  std::fprintf(stderr, "headwise maps: %s\n", m.c_str());
  return 1;
}

// One head's map: `cell` pixels per weight inside a 1-pixel grey frame.
std::vector<uint8_t> head_pixels(const float* w, int T, int cell, int* size) {
  const int n = T * cell + 2;
  *size = n;
  std::vector<uint8_t> rgb(size_t(n) * n * 3, 160);
  for (int y = 1; y < n - 1; ++y)
    for (int x = 1; x < n - 1; ++x) {
      const int i = (y - 1) / cell, j = (x - 1) / cell;
      const std::array<uint8_t, 3> c =
          j > i ? std::array<uint8_t, 3>{255, 255, 255} : weight_colour(w[size_t(i) * T + j]);
      std::copy(c.begin(), c.end(), rgb.begin() + (size_t(y) * n + x) * 3);
    }
  return rgb;
}

bool write_pngs(const std::string& dir, const AttentionMaps& maps, int L, int H, std::string* err) {
  if (mkdir(dir.c_str(), 0777) != 0 && errno != EEXIST) {
    *err = dir + ": cannot create the folder";
    return false;
  }
  const int T = maps.tokens;
  // Stored (uncompressed) PNGs cost 3 bytes a pixel: about 256 pixels a side keeps a
  // head under 200 KiB.
  const int cell = std::clamp(256 / T, 1, 16), thumb_cell = std::clamp(96 / T, 1, 8);
  const int gap = 6;
  int n = 0, tn = 0;
  head_pixels(maps.map(0, 0), T, thumb_cell, &tn);
  const int W = gap + H * (tn + gap), Ht = gap + L * (tn + gap);
  std::vector<uint8_t> overview(size_t(W) * Ht * 3, 255);
  for (int l = 0; l < L; ++l)
    for (int h = 0; h < H; ++h) {
      const std::vector<uint8_t> px = head_pixels(maps.map(l, h), T, cell, &n);
      if (!write_png(dir + "/L" + std::to_string(l) + "_H" + std::to_string(h) + ".png", n, n, px, err))
        return false;
      const std::vector<uint8_t> t = head_pixels(maps.map(l, h), T, thumb_cell, &tn);
      const int x0 = gap + h * (tn + gap), y0 = gap + l * (tn + gap);
      for (int y = 0; y < tn; ++y)
        std::copy(t.begin() + size_t(y) * tn * 3, t.begin() + size_t(y + 1) * tn * 3,
                  overview.begin() + (size_t(y0 + y) * W + x0) * 3);
    }
  return write_png(dir + "/overview.png", W, Ht, overview, err);
}

}  // namespace

int cmd_maps(int argc, char** argv) {
  Args a;
  if (!a.parse(argc, argv, {"help"},
               {"tokenizer", "prompt", "o", "output", "png", "text", "threads", "synthetic"})) {
    std::fprintf(stderr, "headwise maps: %s\n", a.error().c_str());
    usage(stderr);
    return 2;
  }
  if (a.has("help")) {
    usage(stdout);
    return 0;
  }
  const long long threads = a.threads();
  if (!a.ok() || threads < 0 || a.positional().size() > 1 || (a.has("synthetic") && !a.positional().empty()) ||
      (a.has("o") && a.has("output"))) {
    std::fprintf(stderr, "headwise maps: %s\n",
                 !a.ok() ? a.error().c_str() : "need --threads >= 0, one MODEL at most, one -o");
    return 2;
  }
  const std::string out_path = a.has("o") ? a.str("o") : a.str("output", "maps.html");
  std::shared_ptr<const Model> model;
  std::string label;
  if (!load_model_arg("maps", a, &model, &label)) return 1;
  const ModelInfo& info = model->info();
  const Tokenizer* tok = model->tokenizer();
  const std::vector<int32_t> ids = tok->encode(a.str("prompt", kMapsDefaultPrompt), true);
  if (int(ids.size()) > info.max_seq_len)
    return fail("the prompt is " + std::to_string(ids.size()) + " tokens, longer than the context of " +
                std::to_string(info.max_seq_len));

  MapsRequest req;
  req.threads = static_cast<int>(threads);
  AttentionMaps maps;
  if (Status s = attention_maps(*model, ids, req, &maps); !s.ok()) return fail(s.message());
  // NaN or inf in a map means the model's weights or activations are not finite: its
  // pictures would be noise (and a colour can only be looked up for a number).
  for (size_t l = 0; l < maps.w.size(); ++l)
    for (size_t h = 0; h < maps.w[l].size(); ++h)
      for (float x : maps.w[l][h])
        if (!std::isfinite(x))
          return fail(label + ": the attention weights of layer " + std::to_string(l) + ", head " +
                      std::to_string(h) + " are not finite (NaN or inf): the model's weights or "
                      "activations are not finite numbers");
  RoleTable roles;
  const bool have_roles = ids.size() >= 2;
  if (have_roles) {
    RoleOptions ro;
    ro.threads = req.threads;
    if (Status s = head_roles(*model, ids, ro, &roles); !s.ok()) return fail(s.message());
  }
  Ablation ab;
  std::vector<int32_t> text_ids;
  if (a.has("text")) {
    std::string text;
    if (Status s = read_text_file(a.str("text"), &text); !s.ok()) return fail(s.message());
    text_ids = encode_for(*model, text);
    if (Status s = ablation_study(*model, text_ids, req.threads, &ab); !s.ok()) return fail(s.message());
  }

  MapsPage page;
  page.model = label;
  page.n_layers = info.n_layers;
  page.n_heads = info.n_heads;
  page.n_kv_heads = info.n_kv_heads;
  page.ids = ids;
  for (size_t i = 0; i < ids.size(); ++i)
    page.labels.push_back(printable_label(tok->piece_bytes(i ? ids[i - 1] : -1, ids[i])));
  page.maps = &maps;
  page.roles = have_roles ? &roles : nullptr;
  page.ablation = a.has("text") ? &ab : nullptr;
  // The file's name, not its folder: the page may be shared where the path means nothing.
  const std::string text_path = a.str("text");
  page.ablation_text = text_path.substr(text_path.find_last_of('/') + 1);
  page.ablation_tokens = static_cast<int>(text_ids.size());
  const std::string html = maps_html(page);
  std::FILE* f = std::fopen(out_path.c_str(), "wb");
  if (!f) return fail(out_path + ": cannot open for writing");
  const bool wrote = std::fwrite(html.data(), 1, html.size(), f) == html.size();
  if (std::fclose(f) != 0 || !wrote) return fail(out_path + ": write failed");
  std::printf("wrote %s: %d layers x %d heads, %zu tokens, %.1f KiB\n", out_path.c_str(), info.n_layers,
              info.n_heads, ids.size(), html.size() / 1024.0);
  if (a.has("png")) {
    std::string err;
    if (!write_pngs(a.str("png"), maps, info.n_layers, info.n_heads, &err)) return fail(err);
    std::printf("wrote %s/L{0..%d}_H{0..%d}.png and overview.png\n", a.str("png").c_str(), info.n_layers - 1,
                info.n_heads - 1);
  }
  return 0;
}

}  // namespace headwise::tools
