// The row-interleaved panels of Q4_0 / Q8_0 (kernels/quant/interleave.hpp): every byte
// of a panel is read back, from the layout as documented there, to the stored block it
// came from; the last panel's padding rows are zero and nothing past the panels is
// written. (The products on the panels are checked against float64 by the registry
// test, quant_linear_test.cpp.)
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "kernels/quant/blocks.hpp"
#include "kernels/quant/interleave.hpp"

namespace headwise::kernels::quant {
namespace {

// Stored rows of nb blocks of 2 + QB bytes; panels written group by group (rows [0, 8),
// then [8, N), as the plan may split them), then every byte checked.
void check_round_trip(int QB, uint8_t flip, int64_t N, int64_t nb) {
  const size_t bb = 2 + size_t(QB), rb = size_t(nb) * bb;
  std::mt19937 g(uint32_t(N * 131 + nb * 7 + QB + flip));
  std::vector<uint8_t> w(rb * size_t(N));
  for (uint8_t& v : w) v = uint8_t(g());
  const int64_t panels = (N + kPanelRows - 1) / kPanelRows;
  const size_t pb = panel_bytes(nb, QB);
  ASSERT_EQ(pb, size_t(kPanelRows) * rb) << "a panel holds its 8 rows' bytes, no more";
  std::vector<uint8_t> dst(pb * size_t(panels) + 64, 0xA5);
  const int64_t split = std::min<int64_t>(kPanelRows, N);
  repack_panels(w.data(), rb, N, nb, QB, flip, 0, split, dst.data());
  if (split < N) repack_panels(w.data(), rb, N, nb, QB, flip, split, N, dst.data());
  for (int64_t p = 0; p < panels; ++p) {
    const uint8_t* q = dst.data() + size_t(p) * pb;
    const uint8_t* s = q + size_t(nb) * kPanelRows * QB;
    for (int r = 0; r < kPanelRows; ++r) {
      const int64_t n = p * kPanelRows + r;
      for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* blk = n < N ? w.data() + size_t(n) * rb + size_t(b) * bb : nullptr;
        // scale: 16-bit lane r of the block's 16 bytes
        for (int j = 0; j < 2; ++j)
          ASSERT_EQ(s[16 * b + 2 * r + j], blk ? blk[j] : 0) << "scale of row " << n << " block " << b;
        // quant byte k of the row: vector k / 4, 32-bit lane r, byte k % 4
        for (int k = 0; k < QB; ++k)
          ASSERT_EQ(q[size_t(b) * kPanelRows * QB + 32 * (k / 4) + 4 * r + k % 4], blk ? uint8_t(blk[2 + k] ^ flip) : 0)
              << "quant byte " << k << " of row " << n << " block " << b;
      }
    }
  }
  for (size_t i = pb * size_t(panels); i < dst.size(); ++i) ASSERT_EQ(dst[i], 0xA5) << "wrote past the panels";
}

TEST(QuantInterleave, PanelsHoldTheStoredBlocks) {
  for (int64_t N : {1, 8, 17, 131})
    for (int64_t nb : {1, 3, 8}) {
      check_round_trip(int(sizeof(BlockQ4_0::q)), 0, N, nb);
      check_round_trip(int(sizeof(BlockQ8_0::q)), 0, N, nb);
      check_round_trip(int(sizeof(BlockQ8_0::q)), 0x80, N, nb);  // Q8_0 on VNNI: w + 128
    }
}

}  // namespace
}  // namespace headwise::kernels::quant
