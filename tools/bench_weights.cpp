#include "tools/bench_weights.hpp"

#include <cctype>
#include <map>

#include "formats/quantize_gguf.hpp"
#include "graph/projection.hpp"
#include "graph/widened16.hpp"
#include "runtime/synthetic.hpp"

namespace headwise::tools {

namespace {
std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}
}  // namespace

std::string bench_weights_error(const Args& args, bool synthetic) {
  if (!args.has("weights")) return "";
  const std::string mix = args.str("weights");
  if (!synthetic)
    return "--weights applies to --synthetic NAME (a MODEL file keeps the types it was written with; "
           "`headwise convert --weights` makes another)";
  if (!formats::valid_weight_mix(mix))
    return "--weights '" + mix + "' is not one of " + formats::weight_mixes_help();
  return "";
}

std::string stored_weights_mix(const graph::Plan& plan, std::string* types) {
  std::map<std::string, int> count;
  for (const auto& node : plan.linears)
    for (const auto& proj : node) ++count[kernels::weight_type_name(proj->type())];
  types->clear();
  for (const auto& [t, n] : count) *types += (types->empty() ? "" : ", ") + t + " ×" + std::to_string(n);
  auto all = [&](auto pred) {
    for (const auto& [t, n] : count)
      if (!pred(t)) return false;
    return !count.empty();
  };
  if (all([](const std::string& t) { return t == "bf16"; })) return "bf16";
  if (all([](const std::string& t) { return t == "f16"; })) return "f16";
  if (all([](const std::string& t) {
        return t == "q8_0" || t == "q4_0" || t == "q2_k" || t == "q3_k" || t == "q4_k" || t == "q5_k" || t == "q6_k" || t == "iq4_xs";
      }))
    return "q8_0";
  return "";
}

Status load_bench_synthetic(const std::string& mix, const std::string& name, uint64_t seed,
                            std::shared_ptr<const Model>* out, std::string* types) {
  types->clear();
  return synthetic_model(name, seed, lower(mix), out, types);
}

double bench_weights_peak(const std::string& mix_in, const std::string& isa, const MachinePeak& peak, int threads,
                          int rows, std::string* what) {
  const std::string mix = lower(mix_in);
  const bool one = threads <= 1;
  what->clear();
  const bool integer = mix == "q8_0" || mix == "q4_0" || mix == "q2_k" || mix == "q3_k" || mix == "q4_k" || mix == "q5_k" ||
                       mix == "q6_k" || mix == "q3_k_m" || mix == "q4_k_m" || mix == "q5_k_m" || mix == "iq4_xs";
  // The AMX panels (measured only where kernels may use AMX): BF16 and F16 from 16 rows,
  // the integer types from kAmxDequantMinRows; F16 multiplies three bf16 products a value.
  const double tiles = one ? peak.tile_bf16_1t : peak.tile_bf16_nt;
  if (isa == "avx512" && tiles > 0 && rows >= graph::Widened16::kMinRows) {
    if (mix == "bf16" || (integer && rows >= graph::Projection::kAmxDequantMinRows)) {
      *what = "AMX bf16 tile";
      return tiles;
    }
    if (mix == "f16") {
      *what = "a third of the AMX bf16 tile";  // f16 split into bf16 hi + lo
      return tiles / 3;
    }
  }
  if (isa == "avx512") {
    if (mix == "bf16") {
      *what = "bf16 dot";
      return one ? peak.dot_bf16_1t : peak.dot_bf16_nt;
    }
    if (integer) {
      *what = "int8 dot";
      return one ? peak.dot_int8_1t : peak.dot_int8_nt;
    }
  } else if (isa == "avx2" && integer) {
    *what = "int8 dot avx2";
    return one ? peak.dot_int8_avx2_1t : peak.dot_int8_avx2_nt;
  }
  return 0;
}

}  // namespace headwise::tools
