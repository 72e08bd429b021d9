// The page `headwise maps` writes: one self-contained HTML file (inline CSS, inline
// script, data as inline JSON; nothing fetched, no fonts or images) with a heatmap per
// head on <canvas>, a head switcher (buttons, arrow keys, overview cells), hover
// tooltips, and ablation bar charts. Also the colour scale, shared with the PNGs.
//
// The page reads its location hash: #layer=L&head=H selects a head (and is kept in
// step with the selection); &selfcheck=1 makes the page exercise itself (draw, press
// arrow keys, compare canvas pixels) and write the results as JSON into
// <pre id="selfcheck">, with any script errors, for headless-browser tests.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "headwise/analysis/attention_maps.hpp"
#include "headwise/analysis/head_roles.hpp"

namespace headwise::tools {

struct MapsPage {
  std::string model;                // label for the header
  int n_layers = 0, n_heads = 0, n_kv_heads = 0;
  std::vector<std::string> labels;  // one per token, valid UTF-8
  std::vector<int32_t> ids;
  const AttentionMaps* maps = nullptr;
  const RoleTable* roles = nullptr;  // may be null (a 1-token prompt)
  const Ablation* ablation = nullptr;  // may be null (no --text)
  std::string ablation_text;         // what the ablation was measured on (a file name)
  int ablation_tokens = 0;
};

std::string maps_html(const MapsPage& page);

// Colour of weight w in [0, 1] (clamped); cells above the causal diagonal are white.
std::array<uint8_t, 3> weight_colour(float w);

// The bytes of a token label made valid UTF-8: bytes that do not form a UTF-8
// character become the text "<0xHH>".
std::string printable_label(const std::string& bytes);

}  // namespace headwise::tools
