// Row-interleaved panels of Q4_0 / Q8_0 weights: the layout the x86 registry entries
// of these types read (kernels/quant/interleave_x86.hpp), written once at load by their
// LinearKernelImpl::repack (kernels/matmul/linear.hpp). ISA-neutral: plain byte moves.
//
// A panel is kPanelRows = 8 consecutive output rows (the last panel padded with zero
// rows: scale 0, quants 0). For nb = K / 32 blocks a panel is
//   quants: nb × 8·QB bytes   (QB = quant bytes of a block: 16 for Q4_0, 32 for Q8_0)
//   scales: nb × 8 f16        (block b: the 8 rows' d, 16 bytes, one vcvtph2ps)
// and panels follow each other, panel_bytes() apart. Block b's quants are QB / 4 vectors
// of 32 bytes; vector i holds stored bytes 4i..4i+3 of row r in its 32-bit lane r, so
// one vpdpbusd of vector i against the input's 4 bytes broadcast to every lane advances
// the 8 rows' dots at once (Q4_0: the low nibbles are elements 4i..4i+3, the high
// nibbles elements 16+4i..16+4i+3). `flip` is xored into every quant byte of a real row
// (Q8_0 on VNNI stores w + 128 as an unsigned byte: 0x80).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace headwise::kernels::quant {

constexpr int kPanelRows = 8;

// Bytes of one panel of nb blocks whose rows' blocks hold QB quant bytes each.
inline size_t panel_bytes(int64_t nb, int QB) { return size_t(nb) * (kPanelRows * size_t(QB) + 2 * kPanelRows); }

// Stored rows [n0, n1) of N (n0 a multiple of kPanelRows; n1 one too, or N), each nb
// blocks of 2 + QB bytes (f16 d, then the quants) and rb bytes apart, into the panels
// that hold them (panel n0 / 8 on) of dst. The panel of row N − 1 gets its zero rows.
inline void repack_panels(const uint8_t* w, size_t rb, int64_t N, int64_t nb, int QB, uint8_t flip, int64_t n0,
                          int64_t n1, uint8_t* dst) {
  const size_t pb = panel_bytes(nb, QB), bb = 2 + size_t(QB);
  const int64_t p1 = n1 == N ? (N + kPanelRows - 1) / kPanelRows : n1 / kPanelRows;
  for (int64_t p = n0 / kPanelRows; p < p1; ++p) {
    uint8_t* q = dst + size_t(p) * pb;
    uint8_t* s = q + size_t(nb) * kPanelRows * QB;
    for (int r = 0; r < kPanelRows; ++r) {
      const int64_t n = p * kPanelRows + r;
      const uint8_t* row = n < N ? w + size_t(n) * rb : nullptr;
      for (int64_t b = 0; b < nb; ++b) {
        uint8_t* qb = q + size_t(b) * kPanelRows * QB;
        if (row) std::memcpy(s + (size_t(b) * kPanelRows + r) * 2, row + b * bb, 2);
        else std::memset(s + (size_t(b) * kPanelRows + r) * 2, 0, 2);
        for (int i = 0; i < QB / 4; ++i)
          for (int j = 0; j < 4; ++j)
            qb[32 * i + 4 * r + j] = row ? uint8_t(row[b * bb + 2 + 4 * i + j] ^ flip) : 0;
      }
    }
  }
}

}  // namespace headwise::kernels::quant
