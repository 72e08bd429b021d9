#include "tools/maps_page.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "tools/maps_code.inc"
#include "tools/maps_common.hpp"

namespace headwise::tools {
namespace {

// Evenly spaced stops from near-white to dark blue (ColorBrewer "Blues"): weight 0 is
// just off white, so a row's zeros stay distinguishable from the masked triangle.
constexpr uint8_t kPalette[][3] = {{247, 251, 255}, {222, 235, 247}, {198, 219, 239},
                                   {158, 202, 225}, {107, 174, 214}, {66, 146, 198},
                                   {33, 113, 181},  {8, 81, 156},    {8, 48, 107}};
constexpr int kStops = sizeof(kPalette) / sizeof(kPalette[0]);

std::string html_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      case '\'': o += "&#39;"; break;
      default: o += c;
    }
  }
  return o;
}

// Line breaks and tabs as visible signs, so each token stays one chip high.
std::string visible(const std::string& s) {
  std::string o;
  for (char c : s) o += c == '\n' ? "\u21b5" : c == '\t' ? "\u21e5" : std::string(1, c);
  return o;
}

// Weights with 4 significant digits (the tooltip shows 4 decimals); exact zeros,
// the whole masked triangle, as "0".
void append_weights(const float* w, size_t n, std::string* o) {
  char buf[24];
  *o += '[';
  for (size_t i = 0; i < n; ++i) {
    if (i) *o += ',';
    if (w[i] == 0.0f) {
      *o += '0';
    } else {
      std::snprintf(buf, sizeof buf, "%.4g", w[i]);
      *o += buf;
    }
  }
  *o += ']';
}

std::string page_data(const MapsPage& p) {
  const int T = p.maps->tokens;
  std::string o = "{\"model\":" + json_string(p.model);
  o += ",\"layers\":" + std::to_string(p.n_layers) + ",\"heads\":" + std::to_string(p.n_heads) +
       ",\"kvHeads\":" + std::to_string(p.n_kv_heads) + ",\"tokens\":[";
  for (int i = 0; i < T; ++i) o += (i ? "," : "") + json_string(p.labels[i]);
  o += "],\"ids\":[";
  for (int i = 0; i < T; ++i) o += (i ? "," : "") + std::to_string(p.ids[i]);
  o += "],\"palette\":[";
  for (int s = 0; s < kStops; ++s)
    o += std::string(s ? "," : "") + "[" + std::to_string(kPalette[s][0]) + "," +
         std::to_string(kPalette[s][1]) + "," + std::to_string(kPalette[s][2]) + "]";
  o += "],\"maps\":[";
  for (int l = 0; l < p.n_layers; ++l) {
    o += l ? ",[" : "[";
    for (int h = 0; h < p.n_heads; ++h) {
      if (h) o += ',';
      append_weights(p.maps->map(l, h), size_t(T) * T, &o);
    }
    o += ']';
  }
  o += "],\"roles\":";
  if (p.roles) {
    o += '[';
    for (size_t i = 0; i < p.roles->heads.size(); ++i) {
      const HeadRole& r = p.roles->heads[i];
      o += std::string(i ? "," : "") + "{\"prev\":" + json_number(r.scores.prev_token, 4) +
           ",\"sink\":" + json_number(r.scores.sink, 4) + ",\"local\":" + json_number(r.scores.local, 4) +
           ",\"entropy\":" + json_number(r.scores.entropy, 4) +
           ",\"induction\":" + json_number(r.scores.induction, 4) + ",\"role\":" + json_string(r.role) + "}";
    }
    o += ']';
  } else {
    o += "null";
  }
  o += ",\"ablation\":";
  if (p.ablation) {
    const Ablation& a = *p.ablation;
    o += "{\"baseline\":" + json_number(a.baseline_loss, 6) + ",\"text\":" + json_string(p.ablation_text) +
         ",\"tokens\":" + std::to_string(p.ablation_tokens) + ",\"head\":[";
    for (size_t l = 0; l < a.head.size(); ++l) {
      o += l ? ",[" : "[";
      for (size_t h = 0; h < a.head[l].size(); ++h) o += (h ? "," : "") + json_number(a.head[l][h], 6);
      o += ']';
    }
    o += "],\"layer\":[";
    for (size_t l = 0; l < a.layer.size(); ++l) o += (l ? "," : "") + json_number(a.layer[l], 6);
    o += "]}";
  } else {
    o += "null";
  }
  return o + "}";
}

}  // namespace

std::array<uint8_t, 3> weight_colour(float w) {
  // The same interpolation as colour() in the page script, so PNGs match the page.
  // NaN compares false with everything, so clamp would pass it through: count it as 0.
  const double x = (std::isnan(w) ? 0.0 : std::clamp(double(w), 0.0, 1.0)) * (kStops - 1);
  const int i = std::min(kStops - 2, static_cast<int>(std::floor(x)));
  const double f = x - i;
  std::array<uint8_t, 3> c;
  for (int k = 0; k < 3; ++k)
    c[k] = static_cast<uint8_t>(std::lround(kPalette[i][k] + (kPalette[i + 1][k] - kPalette[i][k]) * f));
  return c;
}

std::string printable_label(const std::string& bytes) {
  std::string o;
  char buf[8];
  for (size_t i = 0; i < bytes.size();) {
    const size_t n = utf8_len(bytes, i);
    if (n == 0) {
      std::snprintf(buf, sizeof buf, "<0x%02X>", static_cast<unsigned char>(bytes[i]));
      o += buf;
      ++i;
    } else {
      o.append(bytes, i, n);
      i += n;
    }
  }
  return o;
}

std::string maps_html(const MapsPage& p) {
  const int T = p.maps->tokens;
  std::string h =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>headwise maps — ";
  h += html_escape(p.model) + "</title>\n<style>" + kMapsCss + "</style>\n<script>" + kMapsErrorTrap +
       "</script>\n</head>\n<body>\n<header>\n<h1>Attention maps</h1>\n<p class=\"meta\">model " +
       html_escape(p.model) + " · " + std::to_string(T) + " tokens · " + std::to_string(p.n_layers) +
       " layers × " + std::to_string(p.n_heads) + " heads (" + std::to_string(p.n_kv_heads) +
       " kv heads) · weights softmax(q·kᵀ/√d) recomputed in float64 from each layer's q and K cache</p>\n"
       "<p class=\"prompt\">";
  for (int i = 0; i < T; ++i)
    h += "<span class=\"tok\" title=\"position " + std::to_string(i) + ", id " + std::to_string(p.ids[i]) +
         "\">" + html_escape(visible(p.labels[i])) + "</span>";
  h += "</p>\n</header>\n";
  h += kMapsBody;
  h += "<script type=\"application/json\" id=\"data\">" + page_data(p) + "</script>\n<script>";
  h += kMapsScript;
  h += "</script>\n</body>\n</html>\n";
  return h;
}

}  // namespace headwise::tools
