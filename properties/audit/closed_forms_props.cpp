// Oracle O5 (issue 13): the audit's whole-model totals for generated Llama and Qwen2 configs,
// against closed forms written from the models' definitions (transformers' LlamaForCausalLM and
// Qwen2ForCausalLM modules), not from nsverify's family records.
//
// For hidden h, H heads and KV key-value heads of head_dim d (h / H unless given), MLP width I,
// L layers, vocabulary V:
//   Muon matrices of a layer   q [H d, h], k and v [KV d, h], o [h, H d], gate and up [I, h],
//                              down [h, I]:  M = 2 H d h + 2 KV d h + 3 I h
//   other parameters           embeddings V h, lm_head V h unless tied; per layer two RMSNorm
//                              weights (2 h) and the biases: Llama's attention_bias puts one on
//                              q, k, v and o (H d + 2 KV d + h), its mlp_bias on gate, up and down
//                              (2 I + h); Qwen2 always has q/k/v biases and none on o
//                              (H d + 2 KV d); the final norm h
//   total                      L (M + 2 h + biases) + V h (1 or 2) + h
//   NS FLOPs of a step         sum over the layer's matrices (p = min side, q = max side) of
//                              DeepSpeed's default kernel (Gram loop, 5 steps, restart before 2):
//                              two Grams and two applications (2 p^2 q each) and 14 n x n
//                              products (2 p^3 each: 3 + 2 + 3 + 4 + 2 over the five steps, counted
//                              by hand from the loop of SPEC §1.2), i.e. 8 p^2 q + 28 p^3; on a square
//                              matrix the standard loop, 5 (2 p^3 + 2 p^3 + 2 p^3) = 30 p^3; times L
// O5c The gather and shard plans' step totals. Gather all-gathers every matrix in fp32 (4 bytes,
//      DeepSpeed's update dtype) on the byte model communicator.hpp documents: rank r sends its w_r x o
//      block to each of the tp - 1 others, in tp - 1 messages, whatever its width. Summed over
//      ranks a matrix's blocks are the matrix, so the bytes of a step sum to
//      4 (tp - 1) L M with M the Muon parameters of a layer (above), independent of how AutoTP
//      cut them; messages are 7 L (tp - 1) on every rank (seven matrices a layer); every rank
//      orthogonalizes every whole matrix, so its FLOPs are the step's whole-matrix NS FLOPs
//      (the closed form above), and its largest buffer is a matrix and its NS, 8 max(R C) bytes.
//      Shard sends nothing.
// O5b The audit's note on shard-local aspect scales (DeepSpeed under AutoTP scales each shard
//      by its own sqrt(rows/cols) when rows > cols) names exactly the matrices where some
//      non-empty shard's scale is not the whole matrix's, with the least and largest shard
//      scale: recomputed here from each matrix's shape and its shard widths along its split
//      axis (the widths are the sharding's, checked by the sharding properties; the scale rule,
//      the choice of matrices and the extremes are this oracle's).
// What makes it independent: every count is written here from the module definitions; the
// library's side is its family records (architectures.cpp), its config reader and ns_flops'
// step loop. Generated configs cover GQA and MHA, tied and untied embeddings, explicit head_dim
// (Gemma-like, H d != h) and the biases both families can carry.
#include <boost/test/unit_test.hpp>
#include <algorithm>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <cmath>
#include <map>
#include <string>
#include <utility>

#include "check.hpp"
#include "nsv/analysis/audit.hpp"
#include "nsv/analysis/model_config.hpp"

using nlohmann::json;
using namespace nsv;

namespace {

struct Generated {
  bool qwen2 = false;
  std::int64_t h = 0, heads = 0, kv = 0, d = 0, inter = 0, layers = 0, vocab = 0;
  bool explicit_head_dim = false, tied = false, attention_bias = false, mlp_bias = false;
};

json config_json(const Generated& g) {
  json j = {{"architectures", {g.qwen2 ? "Qwen2ForCausalLM" : "LlamaForCausalLM"}},
            {"hidden_size", g.h},
            {"num_attention_heads", g.heads},
            {"num_key_value_heads", g.kv},
            {"intermediate_size", g.inter},
            {"num_hidden_layers", g.layers},
            {"vocab_size", g.vocab},
            {"tie_word_embeddings", g.tied}};
  if (g.explicit_head_dim) j["head_dim"] = g.d;
  if (!g.qwen2) {
    j["attention_bias"] = g.attention_bias;
    j["mlp_bias"] = g.mlp_bias;
  }
  return j;
}

rc::Gen<Generated> generated_configs() {
  return rc::gen::apply(
      [](bool qwen2, int kv, int group, int d_units, bool explicit_head_dim, int h_units, int inter_units, int layers, int vocab,
         bool tied, bool attention_bias, bool mlp_bias) {
        Generated g;
        g.qwen2 = qwen2;
        g.kv = kv;
        g.heads = static_cast<std::int64_t>(kv) * group;
        g.explicit_head_dim = explicit_head_dim;
        g.d = 8 * d_units;
        g.h = explicit_head_dim ? 16 * h_units : g.heads * g.d;  // without head_dim, d = h / H
        g.inter = 16 * inter_units;
        g.layers = layers;
        g.vocab = vocab;
        g.tied = tied;
        g.attention_bias = !qwen2 && attention_bias;
        g.mlp_bias = !qwen2 && mlp_bias;
        return g;
      },
      rc::gen::arbitrary<bool>(), rc::gen::inRange(1, 5), rc::gen::inRange(1, 5), rc::gen::inRange(1, 9),
      rc::gen::arbitrary<bool>(), rc::gen::inRange(1, 33), rc::gen::inRange(1, 65), rc::gen::inRange(1, 5),
      rc::gen::inRange(1, 5000), rc::gen::arbitrary<bool>(), rc::gen::arbitrary<bool>(), rc::gen::arbitrary<bool>());
}

std::int64_t muon_per_layer(const Generated& g) {
  return 2 * g.heads * g.d * g.h + 2 * g.kv * g.d * g.h + 3 * g.inter * g.h;
}

std::int64_t biases_per_layer(const Generated& g) {
  if (g.qwen2) return g.heads * g.d + 2 * g.kv * g.d;
  return (g.attention_bias ? g.heads * g.d + 2 * g.kv * g.d + g.h : 0) + (g.mlp_bias ? 2 * g.inter + g.h : 0);
}

std::uint64_t default_kernel_flops(std::int64_t rows, std::int64_t cols) {
  const auto p = static_cast<std::uint64_t>(std::min(rows, cols)), q = static_cast<std::uint64_t>(std::max(rows, cols));
  return p == q ? 30 * p * p * p : 8 * p * p * q + 28 * p * p * p;
}

std::uint64_t ns_flops_per_layer(const Generated& g) {
  const std::int64_t qw = g.heads * g.d, kvw = g.kv * g.d;
  return default_kernel_flops(qw, g.h) + 2 * default_kernel_flops(kvw, g.h) + default_kernel_flops(g.h, qw) +
         2 * default_kernel_flops(g.inter, g.h) + default_kernel_flops(g.h, g.inter);
}

// O5c: the bytes a gather plan sends over a step, elements of `element_bytes` each.
std::uint64_t gather_step_bytes(const Generated& g, int tp, std::uint64_t element_bytes) {
  return element_bytes * static_cast<std::uint64_t>(tp - 1) * static_cast<std::uint64_t>(g.layers) *
         static_cast<std::uint64_t>(muon_per_layer(g));
}

}  // namespace

BOOST_AUTO_TEST_SUITE(audit_closed_forms)

BOOST_AUTO_TEST_SUITE(closed_forms)

NSV_PROPERTY(O5_audit_totals_equal_the_closed_forms_of_generated_configs, ()) {
  const Generated g = *generated_configs();
  const int tp = *rc::gen::element(1, 2, 4, 8);
  RC_TAG(g.qwen2 ? "qwen2" : "llama");
  RC_CLASSIFY(g.kv < g.heads, "GQA");
  RC_CLASSIFY(g.tied, "tied");
  RC_CLASSIFY(g.explicit_head_dim && g.heads * g.d != g.h, "H d != h");
  RC_LOG() << config_json(g).dump() << " tp " << tp << "\n";
  const ModelConfig model = parse_model_config(config_json(g), "generated.json");
  AuditOptions o;
  o.tp = tp;
  const AuditTotals t = run_audit(model, o).totals;
  const std::int64_t muon = g.layers * muon_per_layer(g);
  const std::int64_t total = g.layers * (muon_per_layer(g) + 2 * g.h + biases_per_layer(g)) + g.vocab * g.h * (g.tied ? 1 : 2) + g.h;
  RC_ASSERT(t.layers == g.layers);
  RC_ASSERT(t.muon_params_per_layer == muon_per_layer(g));
  RC_ASSERT(t.muon_params == muon);
  RC_ASSERT(t.total_params == total);
  RC_ASSERT(t.non_muon_params == total - muon);
  RC_ASSERT(t.ns_flops_whole_per_step == static_cast<std::uint64_t>(g.layers) * ns_flops_per_layer(g));
}

NSV_PROPERTY(O5c_gather_and_shard_step_totals_equal_their_closed_forms, ()) {
  const Generated g = *generated_configs();
  const int tp = *rc::gen::element(1, 2, 3, 4, 8);
  RC_LOG() << config_json(g).dump() << " tp " << tp << "\n";
  AuditOptions o;
  o.tp = tp;
  const AuditTotals t = run_audit(parse_model_config(config_json(g), "generated.json"), o).totals;
  const auto L = static_cast<std::uint64_t>(g.layers), others = static_cast<std::uint64_t>(tp - 1);
  const std::int64_t largest = std::max({g.heads * g.d * g.h, g.kv * g.d * g.h, g.inter * g.h});
  const PlanTotals& gather = t.plan(Plan::gather);
  RC_ASSERT(gather.bytes_sent_total == gather_step_bytes(g, tp, 4));
  RC_ASSERT(gather.messages_max_rank == 7 * L * others);
  RC_ASSERT(gather.flops_max_rank == L * ns_flops_per_layer(g));
  RC_ASSERT(gather.peak_extra_memory == 8 * static_cast<std::uint64_t>(largest));
  const PlanTotals& shard = t.plan(Plan::shard);
  RC_ASSERT(shard.bytes_sent_total == 0u);
  RC_ASSERT(shard.messages_max_rank == 0u);
}

NSV_PROPERTY(O5b_the_aspect_scale_note_names_exactly_the_shifted_matrices, ()) {
  const Generated g = *generated_configs();
  const int tp = *rc::gen::element(2, 3, 4, 8);
  AuditOptions o;
  o.tp = tp;
  const AuditResult a = run_audit(parse_model_config(config_json(g), "generated.json"), o);
  const auto scale = [](double rows, double cols) { return rows > cols ? std::sqrt(rows / cols) : 1.0; };
  std::map<std::string, std::pair<double, double>> want, got;
  for (const ParamAudit& pa : a.params) {
    const MuonParam& m = pa.param;
    double lo = INFINITY, hi = 0;
    for (const std::int64_t w : pa.shard_sizes) {
      if (w == 0) continue;
      const double s = m.split_axis == 0 ? scale(static_cast<double>(w), static_cast<double>(m.cols))
                                         : scale(static_cast<double>(m.rows), static_cast<double>(w));
      lo = std::min(lo, s);
      hi = std::max(hi, s);
    }
    const double whole = scale(static_cast<double>(m.rows), static_cast<double>(m.cols));
    if (hi > 0 && (std::abs(lo - whole) > 1e-12 || std::abs(hi - whole) > 1e-12)) want[m.name] = {lo, hi};
  }
  for (const AuditNote& n : a.notes)
    if (n.kind == AuditNoteKind::local_aspect_scale)
      for (const AspectScaleShift& s : n.aspect_scales) got[s.matrix] = {s.local_min, s.local_max};
  RC_CLASSIFY(!want.empty(), "some shifted");
  RC_LOG() << config_json(g).dump() << " tp " << tp << ": " << want.size() << " shifted matrices expected, " << got.size() << " named\n";
  RC_ASSERT(got.size() == want.size());
  for (const auto& [name, range] : want) {
    RC_ASSERT(got.count(name) == 1u);
    RC_ASSERT(std::abs(got[name].first - range.first) <= 1e-12 * range.first);
    RC_ASSERT(std::abs(got[name].second - range.second) <= 1e-12 * range.second);
  }
}

// Negative controls: the closed forms see each part they count. Qwen2.5-7B's published total
// (7,615,616,512, the Hub's safetensors count) is the formula's with its q/k/v biases and not
// without them; a wide matrix's Gram-loop FLOPs are not the standard loop's; bytes gathered in
// bf16 are not O5c's fp32 form.
BOOST_AUTO_TEST_CASE(O5_negative_control_the_forms_see_biases_and_the_loop) {
  Generated qwen{true, 3584, 28, 4, 128, 18944, 28, 152064, true, false, false, false};
  const auto total = [](const Generated& g, std::int64_t biases) {
    return g.layers * (muon_per_layer(g) + 2 * g.h + biases) + g.vocab * g.h * (g.tied ? 1 : 2) + g.h;
  };
  BOOST_TEST(total(qwen, biases_per_layer(qwen)) == 7615616512LL);
  BOOST_TEST(total(qwen, 0) != 7615616512LL);
  BOOST_TEST(default_kernel_flops(64, 256) != 5 * (2 * 64 * 64 * 256 + 2 * 64 * 64 * 64 + 2 * 64 * 64 * 256));
  // O5c's byte form sees the wire dtype: gathered in bf16 (2 bytes) the step is not 4 (tp - 1) L M.
  Generated small{false, 64, 4, 2, 16, 128, 2, 100, false, false, false, false};
  AuditOptions o;
  o.tp = 4;
  o.comm.storage = DType::bf16;
  // The result is kept by value: plan() returns a reference into it.
  const AuditResult result = run_audit(parse_model_config(config_json(small), "small.json"), o);
  const PlanTotals& bf16 = result.totals.plan(Plan::gather);
  BOOST_TEST(bf16.bytes_sent_total != gather_step_bytes(small, o.tp, 4));
  BOOST_TEST(bf16.bytes_sent_total == gather_step_bytes(small, o.tp, 2));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
