// headwise bench attention — times headwise::attention() on one shape and reports it
// against this machine's measured limits (headwise::measure_peak), with the evidence a
// reader needs to trust the number: min/max next to the median, the CPU/wall ratio of
// the timed loop (well below the thread count means other work shared the cores) and
// the process's peak RSS next to the bytes of Q, K, V and O (the kernel must not
// materialise the T×T scores).
//
// FLOPs: causal prefill 2·B·Hq·Dh·T·(T+1); non-causal 4·B·Hq·Dh·T²;
//        one decode token 4·B·Hq·Dh·Tk.   K/V bytes read (decode): 2·B·Tk·Hkv·Dh·(element
//        size: 4 for an f32 cache, 2 for --kv-type f16 / bf16).
#include <omp.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "headwise/attention.hpp"
#include "bench/probe/peak.hpp"
#include "kernels/attention/attention.hpp"
#include "kernels/convert/kv_convert.hpp"
#include "kernels/dispatch.hpp"
#include "tools/args.hpp"
#include "tools/json_write.hpp"
#include "tools/process_stats.hpp"
#include "tools/random_tensor.hpp"

namespace headwise::tools {
namespace {

constexpr const char* kName = "headwise bench attention";
// --copies bounds: enough for a cold cache on any host, never an unbounded allocation.
constexpr int kMaxCopies = 4096;
constexpr int kMaxCopiesGiB = 8;

void usage(std::FILE* f) {
  std::fprintf(f,
               "usage: headwise bench attention [options]\n"
               "Times one attention shape; tensors are [batch][positions][heads][head_dim].\n"
               "  --batch B       sequences (default 1)\n"
               "  --seq T         query and key positions per sequence (default 2048)\n"
               "  --heads H       query heads (default 32)\n"
               "  --kv-heads Hkv  key/value heads, H %% Hkv == 0 (default: H)\n"
               "  --head-dim D    features per head, 1..256 (default 128)\n"
               "  --no-causal     bidirectional attention (default: causal)\n"
               "  --decode KV     one query per sequence on a cache of KV keys (--seq ignored)\n"
               "  --threads N     OpenMP threads (default: all, %d here)\n"
               "  --repeat R      timed calls; median, min and max are reported (default 10)\n"
               "  --warmup W      untimed calls first (default 2)\n"
               "  --copies N      N copies of K and V, called in turn (default 1): with N ×\n"
               "                  the K/V bytes past the last-level cache, every call reads\n"
               "                  them from memory, as a model's layers do (at most %d,\n"
               "                  and %d GiB of K/V in all)\n"
               "  --kv-type T     K/V element type: f32 | f16 | bf16 (default f32; a 16-bit\n"
               "                  cache is widened in registers, arithmetic stays fp32)\n"
               "  --kv-layout L   plain | tiled: K/V position-major, or in tiles of %d\n"
               "                  positions (each tile every head's K rows, then their V\n"
               "                  rows), the layout of a session's 16-bit cache (default:\n"
               "                  tiled for f16 / bf16, plain for f32, as a session holds them)\n"
               "  --ahead L       l1 | l2: where decode asks for the keys ahead of those it\n"
               "                  reads (a tiled cache's next tile, a plain one's rows 16\n"
               "                  positions on), into L1 or into L2 only (default: this\n"
               "                  CPU's, %s; the results are the same bits either way)\n"
               "  --isa NAME      avx512 | avx2 | scalar (default: the best this CPU has,\n"
               "                  capped by HEADWISE_ISA; here %s)\n"
               "  --no-peak       skip measuring the machine peak (saves ~2 s and 256 MiB)\n"
               "  --json          print one JSON object instead of text\n"
               "  --help          this text\n",
               omp_get_max_threads(), kMaxCopies, kMaxCopiesGiB, kKvTileRows,
               kernels::attn_ahead_name(kernels::cpu_attn_ahead()), headwise::isa_name());
}

int usage_error(const std::string& msg) {
  std::fprintf(stderr, "%s: %s\n('%s --help' lists the options)\n", kName, msg.c_str(), kName);
  return 2;
}

using Buffer = TensorBuffer;

// K and V of `batch` sequences, position-major 16-bit elements (kv_len × heads × D
// each), laid out in a session's tiles (runtime/session_buffers.hpp): per sequence,
// tiles of kKvTileRows positions, each holding every head's K rows (head-major) and then
// their V rows; positions past kv_len in the last tile are zeros, never read.
struct TiledKv {
  int64_t tile = 0, seq = 0;  // elements per tile and per sequence
  size_t elements = 0;
};
TiledKv tiled_kv_shape(int batch, int kv_len, int heads, int D) {
  TiledKv t;
  t.tile = 2 * int64_t(kKvTileRows) * heads * D;
  t.seq = (int64_t(kv_len) + kKvTileRows - 1) / kKvTileRows * t.tile;
  t.elements = size_t(batch) * size_t(t.seq);
  return t;
}
void tile_kv(const uint16_t* k, const uint16_t* v, int batch, int kv_len, int heads, int D, const TiledKv& t,
             uint16_t* out) {
  std::memset(out, 0, t.elements * sizeof(uint16_t));
  const int64_t R = kKvTileRows;
  for (int b = 0; b < batch; ++b)
    for (int pos = 0; pos < kv_len; ++pos)
      for (int h = 0; h < heads; ++h) {
        const int64_t from = ((int64_t(b) * kv_len + pos) * heads + h) * D;
        uint16_t* to = out + b * t.seq + (pos / R) * t.tile + h * R * D + (pos % R) * D;
        std::memcpy(to, k + from, size_t(D) * sizeof(uint16_t));
        std::memcpy(to + R * heads * D, v + from, size_t(D) * sizeof(uint16_t));
      }
}

}  // namespace

int cmd_bench_attention(int argc, char** argv) {
  Args args;
  if (!args.parse(argc, argv, {"no-causal", "no-peak", "json", "help"},
                  {"batch", "seq", "heads", "kv-heads", "head-dim", "decode", "threads",
                   "repeat", "warmup", "isa", "kv-type", "kv-layout", "copies", "ahead"}))
    return usage_error(args.error());
  if (args.has("help")) {
    usage(stdout);
    return 0;
  }
  if (!args.positional().empty())
    return usage_error("unexpected argument '" + args.positional()[0] + "'");

  const long long batch = args.integer("batch", 1);
  const long long seq = args.integer("seq", 2048);
  const long long heads = args.integer("heads", 32);
  const long long kv_heads = args.integer("kv-heads", heads);
  const long long head_dim = args.integer("head-dim", 128);
  const long long decode_kv = args.integer("decode", 0);
  const long long threads = args.integer("threads", omp_get_max_threads());
  const long long repeat = args.integer("repeat", 10);
  const long long warmup = args.integer("warmup", 2);
  const long long copies = args.integer("copies", 1);
  if (!args.ok()) return usage_error(args.error());
  const bool decode = args.has("decode");
  const bool causal = !args.has("no-causal");

  auto positive = [](const char* name, long long v) -> std::string {
    if (v < 1 || v > INT_MAX)
      return std::string("--") + name + " must be in 1.." + std::to_string(INT_MAX) +
             ", got " + std::to_string(v);
    return "";
  };
  for (const std::string& err :
       {positive("batch", batch), positive("seq", seq), positive("heads", heads),
        positive("kv-heads", kv_heads), positive("head-dim", head_dim),
        decode ? positive("decode", decode_kv) : std::string(),
        positive("threads", threads), positive("repeat", repeat), positive("copies", copies)})
    if (!err.empty()) return usage_error(err);
  if (warmup < 0 || warmup > INT_MAX) return usage_error("--warmup must be >= 0");
  if (copies > kMaxCopies) return usage_error("--copies must be at most " + std::to_string(kMaxCopies));
  if (threads > kMaxThreads) return usage_error("--threads must be at most " + std::to_string(kMaxThreads));
  if (heads % kv_heads != 0)
    return usage_error("--heads (" + std::to_string(heads) + ") must be a multiple of --kv-heads (" +
                       std::to_string(kv_heads) + ")");
  if (head_dim > kernels::kMaxHeadDim)
    return usage_error("--head-dim must be in 1.." + std::to_string(kernels::kMaxHeadDim) + ", got " +
                       std::to_string(head_dim));

  if (args.has("isa")) {
    kernels::Isa isa;
    const std::string name = args.str("isa");
    if (!kernels::parse_isa(name, &isa))
      return usage_error("--isa '" + name + "' is not one of avx512, avx2, scalar");
    if (!kernels::set_isa_override(isa))
      return usage_error(std::string("--isa ") + name + ": this CPU only supports up to " +
                         kernels::isa_name(kernels::detected_isa()));
  }

  KvType kv_type = KvType::f32;
  if (args.has("kv-type") && !parse_kv_type(args.str("kv-type"), &kv_type))
    return usage_error("--kv-type '" + args.str("kv-type") + "' is not one of f32, f16, bf16");
  bool tiled = kv_type != KvType::f32;  // as a session holds its cache
  if (args.has("kv-layout")) {
    const std::string layout = args.str("kv-layout");
    if (layout != "plain" && layout != "tiled")
      return usage_error("--kv-layout '" + layout + "' is not one of plain, tiled");
    tiled = layout == "tiled";
    if (tiled && kv_type == KvType::f32)
      return usage_error("--kv-layout tiled needs --kv-type f16 or bf16 (an f32 cache is read position-major)");
  }

  if (args.has("ahead")) {
    const std::string ahead = args.str("ahead");
    if (ahead != "l1" && ahead != "l2") return usage_error("--ahead '" + ahead + "' is not one of l1, l2");
    if (!decode) return usage_error("--ahead applies to --decode only");
    kernels::set_attn_ahead_override(ahead == "l2" ? 1 : 0);
  }
  // Where the decode kernel asks for the keys ahead (null for a prefill).
  const char* ahead = decode ? kernels::attn_ahead_name(kernels::cpu_attn_ahead()) : nullptr;

  AttentionParams a;
  a.kv_type = kv_type;
  a.batch = int(batch);
  a.q_len = decode ? 1 : int(seq);
  a.kv_len = decode ? int(decode_kv) : int(seq);
  a.q_heads = int(heads);
  a.kv_heads = int(kv_heads);
  a.head_dim = int(head_dim);
  a.causal = causal;
  a.threads = int(threads);

  const double flops = kernels::attention_flops(a.batch, a.q_heads, a.head_dim, a.q_len, a.kv_len, causal);
  const double qo_floats = double(batch) * a.q_len * heads * head_dim;
  const double kv_floats = double(batch) * a.kv_len * kv_heads * head_dim;
  const double kv_bytes = 2.0 * kv_floats * double(kv_type_bytes(kv_type));
  const double qkvo_bytes = (2.0 * qo_floats + 2.0 * kv_floats) * sizeof(float);
  if (copies > 1 && double(copies) * kv_bytes > double(kMaxCopiesGiB) * (1 << 30))
    return usage_error("--copies " + std::to_string(copies) + " would hold " +
                       std::to_string(int64_t(double(copies) * kv_bytes / (1 << 20))) + " MiB of K/V (at most " +
                       std::to_string(kMaxCopiesGiB) + " GiB)");

  // Inputs: 64-byte aligned, densely packed, random. O is written too, so its pages
  // exist before the timed calls.
  Buffer q, k, v, o;
  if (qkvo_bytes < 0.5 * double(SIZE_MAX)) {
    q = random_tensor(size_t(qo_floats), 1, a.threads);
    k = random_tensor(size_t(kv_floats), 2, a.threads);
    v = random_tensor(size_t(kv_floats), 3, a.threads);
    o = random_tensor(size_t(qo_floats), 4, a.threads);
  }
  if (!q || !k || !v || !o) {
    std::fprintf(stderr, "%s: cannot allocate %.1f MiB for Q, K, V and O\n", kName,
                 qkvo_bytes / (1 << 20));
    return 1;
  }
  const AttnInput qi = packed_input(q.get(), a.q_len, a.q_heads, a.head_dim);
  AttnKvInput ki = packed_input(k.get(), a.kv_len, a.kv_heads, a.head_dim);
  AttnKvInput vi = packed_input(v.get(), a.kv_len, a.kv_heads, a.head_dim);
  if (kv_type != KvType::f32) {
    // The random K and V rounded into 16-bit elements in place: each buffer's first half
    // (the fp32 values are read before their bytes are overwritten, front to back), with
    // the converters of the ISA attention() will run on.
    const kernels::KvConvert& conv = kernels::kv_convert(kernels::active_isa());
    for (float* t : {k.get(), v.get()}) {
      uint16_t* h = reinterpret_cast<uint16_t*>(t);
      constexpr size_t kBlock = 4096;
      std::vector<float> tmp(kBlock);
      for (size_t i = 0; i < size_t(kv_floats); i += kBlock) {
        const size_t nb = std::min(kBlock, size_t(kv_floats) - i);
        std::copy(t + i, t + i + nb, tmp.begin());
        kernels::store_kv(conv, kv_type, tmp.data(), h + i, int64_t(nb));
      }
    }
  }
  const AttnOutput oo = packed_output(o.get(), a.q_len, a.q_heads, a.head_dim);
  // --kv-layout tiled: K and V moved into one buffer of the session's tiles (the
  // position-major buffers stay allocated, unread).
  std::vector<Buffer> kc, vc;  // copy c ≥ 1 of K and V; tiled: kc[c] holds both, vc is empty
  size_t kv_buf_bytes = size_t(kv_floats) * kv_type_bytes(kv_type);  // K (tiled: K and V) as stored
  if (tiled) {
    const TiledKv t = tiled_kv_shape(a.batch, a.kv_len, a.kv_heads, a.head_dim);
    kv_buf_bytes = t.elements * sizeof(uint16_t);
    kc.emplace_back(static_cast<float*>(alloc_maybe_huge(kv_buf_bytes)));
    if (!kc.back()) {
      std::fprintf(stderr, "%s: cannot allocate %.1f MiB for the tiled K and V\n", kName,
                   double(kv_buf_bytes) / (1 << 20));
      return 1;
    }
    tile_kv(reinterpret_cast<const uint16_t*>(k.get()), reinterpret_cast<const uint16_t*>(v.get()), a.batch,
            a.kv_len, a.kv_heads, a.head_dim, t, reinterpret_cast<uint16_t*>(kc.back().get()));
    const int64_t R = kKvTileRows, D = a.head_dim;
    const auto* base = reinterpret_cast<const uint16_t*>(kc.back().get());
    ki = AttnKvInput(base, t.seq, D, R * D, t.tile);
    vi = AttnKvInput(base + R * a.kv_heads * D, t.seq, D, R * D, t.tile);
  }
  // --copies: copy c of K and V (c ≥ 1) holds the same elements as the first.
  for (long long c = 1; c < copies; ++c) {
    for (auto* list : tiled ? std::vector<std::vector<Buffer>*>{&kc} : std::vector<std::vector<Buffer>*>{&kc, &vc}) {
      list->emplace_back(static_cast<float*>(alloc_maybe_huge(kv_buf_bytes)));
      if (!list->back()) {
        std::fprintf(stderr, "%s: cannot allocate %lld copies of K and V (%.1f MiB)\n", kName, copies,
                     double(copies) * kv_bytes / (1 << 20));
        return 1;
      }
      std::memcpy(list->back().get(), tiled ? kc.front().get() : list == &kc ? k.get() : v.get(), kv_buf_bytes);
    }
  }
  long long call = 0;

  using Clock = std::chrono::steady_clock;
  auto run_once = [&]() -> double {
    const long long c = call++ % copies;
    AttnKvInput kx = ki, vx = vi;
    if (c > 0 && tiled) {  // the same offsets into copy c's buffer
      const auto* from = reinterpret_cast<const char*>(kc.front().get());
      const auto* to = reinterpret_cast<const char*>(kc[size_t(c)].get());
      kx.data = to + (static_cast<const char*>(ki.data) - from);
      vx.data = to + (static_cast<const char*>(vi.data) - from);
    } else if (c > 0) {
      kx.data = kc[size_t(c - 1)].get(), vx.data = vc[size_t(c - 1)].get();
    }
    const auto t0 = Clock::now();
    const Status st = attention(a, qi, kx, vx, oo);
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    if (!st.ok()) {
      std::fprintf(stderr, "%s: %s\n", kName, st.message().c_str());
      return -1.0;
    }
    return ms;
  };
  for (long long i = 0; i < warmup; ++i)
    if (run_once() < 0) return 1;

  std::vector<double> ms;
  const double cpu0 = cpu_seconds();
  const auto wall0 = Clock::now();
  for (long long i = 0; i < repeat; ++i) {
    ms.push_back(run_once());
    if (ms.back() < 0) return 1;
  }
  const double wall = std::chrono::duration<double>(Clock::now() - wall0).count();
  const double cpu_over_wall = wall > 0 ? (cpu_seconds() - cpu0) / wall : 0.0;
  // Read before measure_peak, whose 256 MiB probe buffer would raise the high-water mark.
  const double rss = peak_rss_bytes();

  std::sort(ms.begin(), ms.end());
  const size_t n = ms.size();
  const double median = n % 2 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]);
  const double gflops = flops / (median * 1e-3) / 1e9;
  const double gbps = kv_bytes / (median * 1e-3) / 1e9;
  const std::string isa = headwise::isa_name();
  // The kernel line headwise::attention() picks (attention.inc): the amx ones where AMX
  // is usable (HEADWISE_AMX=0 turns them off).
  const char* line = kernels::attn_kernel(kernels::active_isa(), kv_type).name;

  const bool with_peak = !args.has("no-peak");
  // The read bandwidth first, right after the timed calls: on a shared host it drifts by
  // tens of percent over seconds, and the FMA probes take a few.
  double peak_read = 0;
  if (with_peak) peak_read = ReadProbe(a.threads).gbs();
  MachinePeak peak;
  if (with_peak) peak = measure_peak(a.threads);
  const double peak_gflops = peak.fma_gflops(isa, a.threads);
  const bool have_fma = with_peak && peak_gflops > 0, have_bw = with_peak && peak_read > 0;
  const double pct_peak = have_fma ? 100.0 * gflops / peak_gflops : 0.0;
  const double pct_bw = have_bw ? 100.0 * gbps / peak_read : 0.0;

  if (args.has("json")) {
    std::string j = "{";
    auto add = [&j](const char* key, const std::string& value) {
      if (j.size() > 1) j += ", ";
      j += std::string("\"") + key + "\": " + value;
    };
    add("isa", "\"" + isa + "\"");
    add("kernel", "\"" + std::string(line) + "\"");
    add("threads", std::to_string(a.threads));
    add("batch", std::to_string(a.batch));
    if (!decode) add("seq", std::to_string(a.q_len));
    add("q_len", std::to_string(a.q_len));
    add("kv_len", std::to_string(a.kv_len));
    add("heads", std::to_string(a.q_heads));
    add("kv_heads", std::to_string(a.kv_heads));
    add("head_dim", std::to_string(a.head_dim));
    add("causal", causal ? "true" : "false");
    add("kv_type", std::string("\"") + kv_type_name(kv_type) + "\"");
    add("kv_layout", tiled ? "\"tiled\"" : "\"plain\"");
    add("ahead", ahead ? std::string("\"") + ahead + "\"" : "null");
    add("decode", decode ? "true" : "false");
    add("repeat", std::to_string(repeat));
    add("warmup", std::to_string(warmup));
    add("copies", std::to_string(copies));
    add("median_ms", jnum(median));
    add("min_ms", jnum(ms.front()));
    add("max_ms", jnum(ms.back()));
    add("flops", jnum(flops));
    add("gflops", jnum(gflops));
    add("peak_gflops", jnum(peak_gflops, have_fma));
    add("pct_peak", jnum(pct_peak, have_fma));
    if (decode) {
      add("kv_bytes", std::to_string(int64_t(kv_bytes)));
      add("gbps", jnum(gbps));
      add("peak_read_gbps", jnum(peak_read, have_bw));
      add("pct_bw", jnum(pct_bw, have_bw));
    }
    add("cpu_over_wall", jnum(cpu_over_wall));
    add("peak_rss_bytes", std::to_string(int64_t(rss)));
    add("qkvo_bytes", std::to_string(int64_t(qkvo_bytes)));
    std::printf("%s}\n", j.c_str());
    return 0;
  }

  constexpr double MiB = 1 << 20;
  std::printf("shape     batch %d, q_len %d, kv_len %d, heads %d, kv_heads %d, head_dim %d, %s%s\n",
              a.batch, a.q_len, a.kv_len, a.q_heads, a.kv_heads, a.head_dim,
              causal ? "causal" : "non-causal", decode ? ", decode" : ", prefill");
  std::printf("kernel    %s (%s), %d threads, %s K/V %s", isa.c_str(), line, a.threads, kv_type_name(kv_type),
              tiled ? "in a session's tiles of 16 positions" : "position-major");
  if (ahead) std::printf(", keys ahead asked for into %s", ahead[1] == '2' ? "L2" : "L1");
  std::printf("\n");
  std::printf("time      median %.3f ms (min %.3f, max %.3f) over %lld repeats after %lld warmup",
              median, ms.front(), ms.back(), repeat, warmup);
  if (copies > 1) std::printf(", %lld K/V copies in turn (%.1f MiB)", copies, double(copies) * kv_bytes / MiB);
  std::printf("\n");
  std::printf("compute   %.1f GFLOP/s", gflops);
  if (have_fma)
    std::printf(" = %.1f%% of %.0f GFLOP/s (%s FMA peak, %d threads)", pct_peak, peak_gflops,
                isa == "scalar" ? "avx2" : isa.c_str(), a.threads);
  std::printf("\n");
  if (decode) {
    std::printf("K/V read  %.1f GB/s", gbps);
    if (have_bw) std::printf(" = %.1f%% of %.1f GB/s measured read bandwidth", pct_bw, peak_read);
    std::printf("\n");
  }
  // With the machine to itself this is close to the threads the kernel used; clearly
  // less means other processes had the cores for part of the time.
  std::printf("cpu/wall  %.2f with %d threads on %d cores\n", cpu_over_wall, a.threads,
              omp_get_num_procs());
  std::printf("memory    peak RSS %.1f MiB; Q/K/V/O %.1f MiB\n", rss / MiB, qkvo_bytes / MiB);
  return 0;
}

}  // namespace headwise::tools
