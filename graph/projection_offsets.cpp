// Q4_1 and Q5_1 projections (projection.hpp, create_offset_blocks): the weights as Q8_0
// rows (Q4_0C: Q4_0 rows, Q8_0C: Q8_0 rows, split off their blocks), made and run as any
// Q8_0 (Q4_0) projection, plus their blocks' offsets as a small f32
// product of their own on the inputs' block sums: in oneDNN's plain layout ([K/32][N]),
// whose GEMV slices at any 16 columns, so decode's groups (run_projections) take these
// projections as slices too — run one after the other, their OpenMP regions and the
// group's thread team took turns spinning, and decode ran at a third of Q8_0's speed —
// and for whole classes of rows (prefill) oneDNN adds the product to y in place (its sum
// post-op), with no pass over a staged copy (measured: ~5% of llama-134m's prefill).
#include <algorithm>
#include <new>
#include <vector>

#include "graph/omp_rows.hpp"
#include "graph/projection.hpp"
#include "graph/weights.hpp"
#include "kernels/quant/blocks.hpp"
#include "kernels/quant/quant.hpp"

namespace headwise::graph {
namespace {

namespace q = kernels::quant;

size_t round64(size_t n) { return (n + 63) / 64 * 64; }

}  // namespace

Status Projection::create_offset_blocks(q::WType type, const void* w, int K, int N, const float* bias,
                                        kernels::Isa isa, std::unique_ptr<Projection>* out, WeightArena* arena) {
  // The base type each is re-encoded or split into, and how.
  struct Way {
    q::WType type;
    const char* name;
    kernels::WeightType base;
    size_t base_block;
    void (*split)(const void*, void*, float*, int64_t);
  };
  static const Way kWays[] = {
      {q::WType::q4_1, "Q4_1", kernels::WeightType::q8_0, sizeof(q::BlockQ8_0), q::q4_1_to_q8_0},
      {q::WType::q5_1, "Q5_1", kernels::WeightType::q8_0, sizeof(q::BlockQ8_0), q::q5_1_to_q8_0},
      {q::WType::q4_0c, "Q4_0C", kernels::WeightType::q4_0, sizeof(q::BlockQ4_0), q::q4_0c_split},
      {q::WType::q8_0c, "Q8_0C", kernels::WeightType::q8_0, sizeof(q::BlockQ8_0), q::q8_0c_split}};
  const Way* way = nullptr;
  for (const Way& x : kWays)
    if (x.type == type) way = &x;
  if (!way) return invalid_argument("create_offset_blocks takes Q4_1, Q5_1, Q4_0C or Q8_0C weights");
  const char* name = way->name;
  if (K < q::kLoadOnlyBlock || K % q::kLoadOnlyBlock != 0 || N < 1)
    return invalid_argument(std::string("a ") + name + " weight needs K a positive multiple of " +
                            std::to_string(q::kLoadOnlyBlock) + ", got K = " + std::to_string(K));
  const int kb = K / q::kLoadOnlyBlock;
  const size_t in_row = size_t(kb) * size_t(q::load_only_block_bytes(type));
  const size_t out_row = size_t(kb) * way->base_block;
  std::vector<uint8_t> rows;
  std::vector<float> offsets;
  try {
    rows.resize(out_row * size_t(N));
    offsets.resize(size_t(kb) * size_t(N));
  } catch (const std::bad_alloc&) {
    return out_of_memory("no memory for the " + std::to_string(K) + "x" + std::to_string(N) + " " + name +
                         " weights re-encoded (" + std::to_string(out_row * size_t(N)) + " bytes)");
  }
  const auto* src = static_cast<const uint8_t*>(w);
#pragma omp parallel for schedule(static)
  for (int64_t n = 0; n < N; ++n)
    way->split(src + size_t(n) * in_row, rows.data() + size_t(n) * out_row, offsets.data() + size_t(n) * kb, kb);
  MappedFile::release_resident(w, in_row * size_t(N));  // read once: the file's pages go
  std::unique_ptr<Projection> p;
  HW_RETURN_IF_ERROR(create_typed(way->base, rows.data(), K, N, bias, isa, &p, arena));
  // A kernel that repacked the rows has its own copy; one that reads them as they are
  // (the scalar one) reads these (moving a vector keeps its buffer).
  if (!p->packed_.repacked) p->reencoded_ = std::move(rows);
  // [N][K/32] storage: element (b, n) at n·kb + b.
  HW_RETURN_IF_ERROR(create_f32_in(offsets.data(), kb, N, 1, kb, nullptr, isa, /*plain=*/true, /*accumulate=*/true,
                                   &p->offsets_, arena));
  p->weight_bytes_ += p->offsets_->weight_bytes();
  *out = std::move(p);
  return Status::Ok();
}

namespace {
// The sums of each block of 32 inputs of `rows` rows into s, kb a row: 8 running sums of
// 4 inputs each (independent, so the compiler keeps them in vectors: a double or a single
// running sum, a dependency chain of 32 adds, took ~3% of a 512-token prefill), then
// their sum. fp32 rounding of 32 terms: ~2⁻²⁴·32·Σ|x|, far below the int8 rounding of
// the inputs of the weights' own product.
void block_sums(const float* x, int64_t ldx, int rows, int kb, float* s, int threads, bool split) {
  for_rows(rows, threads, split, [&](int r) {
    const float* xr = x + r * ldx;
    for (int b = 0; b < kb; ++b) {
      const float* xb = xr + b * q::kLoadOnlyBlock;
      float acc[8];
      for (int i = 0; i < 8; ++i) acc[i] = xb[i] + xb[8 + i] + xb[16 + i] + xb[24 + i];
      s[size_t(r) * kb + b] = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
    }
  });
}
}  // namespace

size_t Projection::offsets_slice_scratch_bytes(int M) const {
  const int kb = K_ / q::kLoadOnlyBlock;
  return round64(size_t(M) * kb * sizeof(float)) + round64(size_t(M) * N_ * sizeof(float)) +
         offsets_->slice_scratch_bytes(M);
}

// run_slice's share of the term: columns [n0, n1) on the calling thread.
void Projection::add_offsets_slice(const float* x, int64_t ldx, float* y, int64_t ldy, int M, int n0, int n1,
                                   void* scratch) const {
  const int kb = K_ / q::kLoadOnlyBlock;
  auto* s = static_cast<float*>(scratch);
  auto* t = reinterpret_cast<float*>(static_cast<char*>(scratch) + round64(size_t(M) * kb * sizeof(float)));
  void* rest = reinterpret_cast<char*>(t) + round64(size_t(M) * N_ * sizeof(float));
  block_sums(x, ldx, M, kb, s, 1, false);
  offsets_->run_slice(s, kb, t, N_, M, n0, n1, rest);
  for (int r = 0; r < M; ++r)
    for (int n = n0; n < n1; ++n) y[r * ldy + n] += t[size_t(r) * N_ + n];
}

// Rows of the offsets' term per pass of oneDNN's classes, which add it to y in place
// (whole classes: multiples of kMinClassRows); the rest of M, fewer rows, through the
// small kernel into staging, then added.
constexpr int kOffsetPassRows = 1024;

size_t Projection::offsets_scratch_bytes(int rows) const {
  const int kb = K_ / q::kLoadOnlyBlock;
  const int big = std::min(rows / kMinClassRows * kMinClassRows, kOffsetPassRows);
  const int rest = std::min(rows, kMinClassRows - 1);
  const size_t sums = round64(size_t(std::max(big, rest)) * kb * sizeof(float));
  return sums + round64(size_t(rest) * N_ * sizeof(float)) +
         round64(std::max(offsets_->scratch_bytes(std::max(big, 1)), offsets_->scratch_bytes(rest)));
}

// y += s(x)·C, s(x) the sums of each block of 32 inputs.
Status Projection::add_offsets(const float* x, int64_t ldx, float* y, int64_t ldy, int M, int threads,
                               void* scratch) const {
  const int kb = K_ / q::kLoadOnlyBlock;
  const int big_rows = M / kMinClassRows * kMinClassRows, rest = M - big_rows;
  const int big = std::min(big_rows, kOffsetPassRows);
  auto* s = static_cast<float*>(scratch);
  const size_t sums = round64(size_t(std::max(big, std::min(M, kMinClassRows - 1))) * kb * sizeof(float));
  auto* t = reinterpret_cast<float*>(static_cast<char*>(scratch) + sums);
  void* rest_scratch = reinterpret_cast<char*>(t) + round64(size_t(std::min(M, kMinClassRows - 1)) * N_ * sizeof(float));
  for (int r0 = 0; r0 < big_rows; r0 += big) {  // oneDNN adds to y
    const int rows = std::min(big, big_rows - r0);
    block_sums(x + r0 * ldx, ldx, rows, kb, s, threads, threads > 1 && int64_t(rows) * K_ >= (int64_t(1) << 16));
    HW_RETURN_IF_ERROR(offsets_->run(s, kb, y + r0 * ldy, ldy, rows, threads, rest_scratch));
  }
  if (rest > 0) {  // the small kernel writes t (zeroed first all the same: a class would add to it)
    block_sums(x + big_rows * ldx, ldx, rest, kb, s, 1, false);
    std::fill(t, t + size_t(rest) * N_, 0.0f);
    HW_RETURN_IF_ERROR(offsets_->run(s, kb, t, N_, rest, threads, rest_scratch));
    for (int r = 0; r < rest; ++r) {
      float* yr = y + (big_rows + r) * ldy;
      const float* tr = t + size_t(r) * N_;
      for (int n = 0; n < N_; ++n) yr[n] += tr[n];
    }
  }
  return Status::Ok();
}

}  // namespace headwise::graph
