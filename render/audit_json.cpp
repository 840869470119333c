// An audit as JSON, schema nsv.audit/1 (nsv/render/audit.hpp lists its fields).
#include "format.hpp"
#include "nsv/render/audit.hpp"
#include "nsv/render/config_json.hpp"

namespace nsv {
namespace {

using nlohmann::json;

json rank_json(int r, const RankCost& c) {
  return {{"rank", r},
          {"flops", c.flops},
          {"bytes_sent", c.bytes_sent},
          {"bytes_received", c.bytes_received},
          {"messages", c.messages},
          {"extra_memory_bytes", c.extra_memory},
          {"compute_s", c.compute_s},
          {"latency_s", c.latency_s},
          {"bandwidth_s", c.bandwidth_s},
          {"time_s", c.time_s()}};
}

json plan_json(const PlanTotals& p) {
  return {{"name", plan_name(p.plan)},
          {"description", plan_description(p.plan)},
          {"semantics", plan_semantics(p.plan)},
          {"exactness", plan_exactness(p)},
          {"step_time_s", p.step_time_s},
          {"compute_s", p.compute_s},
          {"latency_s", p.latency_s},
          {"bandwidth_s", p.bandwidth_s},
          {"bytes_sent_max_rank", p.bytes_sent_max_rank},
          {"bytes_sent_total", p.bytes_sent_total},
          {"messages_max_rank", p.messages_max_rank},
          {"flops_max_rank", p.flops_max_rank},
          {"peak_extra_memory_bytes", p.peak_extra_memory}};
}

// Calls per collective. nsv.audit/1 has a "broadcast" count; no strategy broadcasts, so it is
// written as 0 for compatibility with readers of the schema.
json collectives_json(const Ledger& ledger) {
  json coll = json::object();
  for (Collective k : kAllCollectives) coll[std::string(collective_name(k))] = ledger.count(k);
  coll["broadcast"] = 0;
  return coll;
}

json model_json(const ModelConfig& m) {
  const ModelDims& d = m.dims;
  return {{"name", d.name},
          {"source", m.source},
          {"architecture", m.architecture},
          {"model_type", m.model_type},
          {"family", m.family ? std::string(m.family->model_type) : std::string()},
          {"autotp_rule", m.family ? std::string(m.family->autotp_rule) : std::string()},
          {"deepspeed_commit", kDeepSpeedCommit},
          {"num_experts", d.experts},
          {"expert_intermediate_size", d.expert_intermediate},
          {"deepspeed_experts", m.family ? expert_placement_name(m.family->experts) : "none"},
          {"hidden_size", d.hidden},
          {"num_attention_heads", d.heads},
          {"num_key_value_heads", d.kv_heads},
          {"head_dim", d.head_dim},
          {"intermediate_size", d.intermediate},
          {"num_hidden_layers", d.layers},
          {"vocab_size", d.vocab},
          {"tie_word_embeddings", d.tie_word_embeddings},
          {"qkv_bias", m.qkv_bias}};
}

json cost_model_json(const AuditOptions& o) {
  return {{"latency_us", o.cost.latency_us},
          {"link_gbps", o.cost.link_gbps},
          {"tflops", o.cost.tflops},
          {"wire_dtype", dtype_name(o.comm.storage)},
          {"formula", "time = flops/(tflops*1e12) + messages*latency + max(bytes_sent, bytes_received)/(link_gbps*1e9)"}};
}

json strategy_json(const StrategyAudit& s) {
  json sj = {{"target", target_name(s.target)}, {"exactness", strategy_exactness(s)}, {"applicable", s.applicable}};
  if (!s.applicable) {
    sj["why_not"] = s.why_not;
    return sj;
  }
  json ranks = json::array();
  for (std::size_t r = 0; r < s.ranks.size(); ++r) ranks.push_back(rank_json(static_cast<int>(r), s.ranks[r]));
  sj["collectives"] = collectives_json(s.plan.ledger);
  sj["time_s"] = s.time_s;
  sj["step_share_s"] = s.step_share_s;
  sj["ranks"] = ranks;
  return sj;
}

json divergence_json(const std::optional<ShardDivergence>& measured) {
  if (!measured) return nullptr;
  const ShardDivergence& dv = *measured;
  return {{"rel_diff_mean", dv.rel_diff_mean}, {"rel_diff_max", dv.rel_diff_max},
          {"rank_rel_diff", dv.rank_rel_diff}, {"cosine_min", dv.cosine_min},
          {"update_rel_diff_mean", dv.update_rel_diff_mean}, {"update_rel_diff_max", dv.update_rel_diff_max},
          {"measured_on", dv.proxy ? "proxy" : "full_shape"}, {"proxy_scale", dv.scale},
          {"proxy_exact_ratio", dv.proxy_exact_ratio}, {"proxy_spectrum_scale", dv.spectrum_scale},
          {"rows", dv.rows}, {"cols", dv.cols},
          {"head_dim", dv.head_dim}, {"shard_sizes", dv.shard_sizes}, {"spectrum", "gaussian"},
          {"seconds", dv.seconds}};
}

json strategy_or_null(const std::optional<Strategy>& s) { return s ? json(strategy_name(*s)) : json(nullptr); }

json param_json(const ParamAudit& pa) {
  const MuonParam& p = pa.param;
  json pj;
  pj["name"] = p.name;
  pj["rows"] = p.rows;
  pj["cols"] = p.cols;
  pj["elements"] = p.elements();
  pj["role"] = role_name(p.role);
  pj["split_axis"] = p.split_axis;
  pj["heads"] = p.heads;
  pj["head_dim"] = p.head_dim;
  pj["kv_groups"] = p.kv_groups;
  pj["shard_rule"] = p.kv_groups > 0 ? "head_aligned" : "grain";
  pj["shard_sizes"] = pa.shard_sizes;
  pj["zero_width_ranks"] = pa.zero_width_ranks;
  pj["per_head_applies"] = pa.per_head_applies;
  pj["per_head_note"] = per_head_note(pa);
  pj["whole_ns_flops"] = pa.whole_ns_flops;
  pj["aspect_scale"] = {{"global", pa.scale_global}, {"local", pa.scale_local}};
  json exact = json::array();
  json strategies = json::object();
  for (const auto& s : pa.strategies) {
    if (s.exact())
      exact.push_back({{"strategy", strategy_name(s.strategy)}, {"target", target_name(s.target)}, {"exactness", strategy_exactness(s)}});
    strategies[std::string(strategy_name(s.strategy))] = strategy_json(s);
  }
  pj["exact_strategies"] = exact;
  pj["strategies"] = strategies;
  pj["cheapest_exact"] = {{"bit_identical", strategy_or_null(pa.cheapest_bit_identical)},
                          {"any", strategy_or_null(pa.cheapest_exact)},
                          {"per_head", pa.per_head_applies ? json("per_head") : json(nullptr)}};
  pj["shard_divergence"] = divergence_json(pa.divergence);
  pj["copies"] = p.copies;
  pj["expert"] = p.expert;
  pj["fused"] = fused_kind_name(p.fused);
  json parts = json::array();
  for (const auto& s : pa.parts)
    parts.push_back({{"name", s.part.name}, {"begin", s.begin}, {"rows", s.part.rows}, {"rows_per_rank", s.rows_per_rank},
                     {"replicated", s.replicated}, {"whole_heads", s.whole_heads}, {"mixed_under_shard", s.mixed_under_shard}});
  pj["sub_matrices"] = parts;
  pj["expert_parallel"] = nullptr;
  if (pa.expert_parallel) {
    json flops = json::array();
    for (const auto& r : pa.expert_parallel->ranks) flops.push_back(r.flops);
    pj["expert_parallel"] = {{"experts_per_rank", pa.expert_parallel->experts_per_rank}, {"flops", flops},
                             {"time_s", pa.expert_parallel->time_s}};
  }
  return pj;
}

// A placement of the routed experts over a step (ExpertTotals): plan_json without a plan's name.
json placement_json(const PlanTotals& p) {
  json j = plan_json(p);
  for (const char* key : {"name", "description", "semantics"}) j.erase(key);
  return j;
}

json experts_json(const std::optional<ExpertTotals>& e) {
  if (!e) return nullptr;
  return {{"matrices_per_step", e->matrices_per_step},
          {"deepspeed", expert_placement_name(e->deepspeed)},
          {"tensor_parallel_shard", placement_json(e->tensor_parallel_shard)},
          {"tensor_parallel_exact", placement_json(e->tensor_parallel_exact)},
          {"expert_parallel", placement_json(e->expert_parallel)}};
}

json totals_json(const AuditTotals& t) {
  json step = json::object(), plans = json::array();
  for (const auto& p : t.plans) {
    step[std::string(plan_name(p.plan))] = p.step_time_s;
    json pj = plan_json(p);
    json choice = json::array();
    for (Strategy s : p.choice) choice.push_back(strategy_name(s));
    pj["choice"] = choice;
    plans.push_back(pj);
  }
  return {{"layers", t.layers},
          {"muon_params_per_layer", t.muon_params_per_layer},
          {"muon_params", t.muon_params},
          {"total_params", t.total_params},
          {"non_muon_params", t.non_muon_params},
          {"per_head_params", t.per_head_params},
          {"per_head_exact_fraction_params", t.per_head_exact_fraction_params},
          {"per_head_exact_fraction_flops", t.per_head_exact_fraction_flops},
          {"ns_flops_whole_per_step", t.ns_flops_whole_per_step},
          {"step_time_s", step},
          {"plans", plans},
          {"experts", experts_json(t.experts)}};
}

}  // namespace

json audit_json(const AuditResult& a) {
  const AuditOptions& o = a.options;
  json j;
  j["schema"] = "nsv.audit/1";
  j["model"] = model_json(a.model);
  j["tp"] = o.tp;
  j["grain"] = o.grain;
  j["ns"] = config_json(o.ns);
  j["ns"].erase("products");  // nsv.audit/1's ns object predates the products field
  j["cost_model"] = cost_model_json(o);
  j["measured"] = o.measure;
  json params = json::array();
  for (const auto& pa : a.params) params.push_back(param_json(pa));
  j["parameters"] = params;
  j["totals"] = totals_json(a.totals);
  j["recommendation"] = recommendation_text(a);
  json notes = json::array();
  for (const auto& n : a.notes) notes.push_back(note_text(n, a));
  j["notes"] = notes;
  if (a.mesh) j["mesh"] = mesh_audit_json(*a.mesh);
  return j;
}

}  // namespace nsv
