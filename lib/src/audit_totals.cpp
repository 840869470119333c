// The whole model over one optimizer step: parameter and FLOP counts, and what each plan (one
// strategy per matrix) costs.
//
// The step-time model: each rank's per-matrix costs are summed over every Muon matrix of every
// layer, and the step ends when the slowest rank is done. For `owner` the owning rank rotates
// over the matrices (matrix k of the step owned by rank k mod tp), as layer-sharded
// implementations (Dion, Megatron) spread the owners; every other strategy is the same on every
// layer. Waiting at collectives beyond this sum is not modelled, and the all-to-alls are counted
// per matrix (a batched implementation sends fewer, larger messages: fewer latencies, same bytes).
#include <algorithm>
#include <stdexcept>

#include "audit_stages.hpp"

namespace nsv {

std::string_view plan_name(Plan p) {
  switch (p) {
    case Plan::shard: return "shard";
    case Plan::gather: return "gather";
    case Plan::owner: return "owner";
    case Plan::gram_allreduce: return "gram_allreduce";
    case Plan::gram_restart_allreduce: return "gram_restart_allreduce";
    case Plan::per_head_shard: return "per_head+shard";
    case Plan::cheapest_bit_identical: return "cheapest_bit_identical";
    case Plan::cheapest_exact: return "cheapest_exact";
    case Plan::per_head_cheapest_bit_identical: return "per_head+cheapest_bit_identical";
  }
  return "?";
}

const PlanTotals& AuditTotals::plan(Plan p) const {
  for (const auto& t : plans)
    if (t.plan == p) return t;
  throw std::logic_error("audit: plan missing");
}

namespace audit_stages {
namespace {

// Per-rank sums over a step.
struct RankSums {
  std::vector<double> compute, latency, bandwidth;
  std::vector<std::uint64_t> sent, messages, flops;

  explicit RankSums(std::size_t n) : compute(n, 0), latency(n, 0), bandwidth(n, 0), sent(n, 0), messages(n, 0), flops(n, 0) {}

  void add(std::size_t r, const RankCost& c, std::uint64_t times) {
    compute[r] += c.compute_s * static_cast<double>(times);
    latency[r] += c.latency_s * static_cast<double>(times);
    bandwidth[r] += c.bandwidth_s * static_cast<double>(times);
    sent[r] += c.bytes_sent * times;
    messages[r] += c.messages * times;
    flops[r] += c.flops * times;
  }
  double time(std::size_t r) const { return compute[r] + latency[r] + bandwidth[r]; }
};

PlanTotals total_plan(const std::vector<ParamAudit>& params, const std::vector<Strategy>& choice, std::int64_t layers, int tp) {
  PlanTotals t;
  t.choice = choice;
  const auto n = static_cast<std::size_t>(tp);
  RankSums sums(n);
  for (std::size_t i = 0; i < params.size(); ++i) {
    const StrategyAudit& a = params[i].strategy(choice[i]);
    for (const auto& c : a.ranks) t.peak_extra_memory = std::max(t.peak_extra_memory, c.extra_memory);
    if (choice[i] != Strategy::owner)
      for (std::size_t r = 0; r < n; ++r) sums.add(r, a.ranks[r], static_cast<std::uint64_t>(layers));
  }
  // Owners rotate over the owner-strategy matrices in layer order.
  std::uint64_t owner_k = 0;
  for (std::int64_t l = 0; l < layers; ++l)
    for (std::size_t i = 0; i < params.size(); ++i) {
      if (choice[i] != Strategy::owner) continue;
      const auto& costs = params[i].strategy(choice[i]).by_owner[owner_k++ % n];
      for (std::size_t r = 0; r < n; ++r) sums.add(r, costs[r], 1);
    }
  std::size_t slow = 0;
  for (std::size_t r = 0; r < n; ++r) {
    if (sums.time(r) > sums.time(slow)) slow = r;
    t.bytes_sent_total += sums.sent[r];
    t.bytes_sent_max_rank = std::max(t.bytes_sent_max_rank, sums.sent[r]);
    t.messages_max_rank = std::max(t.messages_max_rank, sums.messages[r]);
    t.flops_max_rank = std::max(t.flops_max_rank, sums.flops[r]);
  }
  t.compute_s = sums.compute[slow];
  t.latency_s = sums.latency[slow];
  t.bandwidth_s = sums.bandwidth[slow];
  t.step_time_s = sums.compute[slow] + sums.latency[slow] + sums.bandwidth[slow];
  return t;
}

// Every matrix's choice under each plan.
struct PlanChoices {
  std::vector<Strategy> per_head_shard, per_head_best, best_bit, best_exact;
  bool any_exact_arithmetic = false;  // cheapest_exact chooses an all-reduce strategy somewhere
};

PlanChoices plan_choices(const std::vector<ParamAudit>& params) {
  PlanChoices c;
  for (const auto& pa : params) {
    const Strategy bit = pa.cheapest_bit_identical.value_or(Strategy::gather);
    const Strategy ex = pa.cheapest_exact.value_or(bit);
    c.any_exact_arithmetic = c.any_exact_arithmetic || pa.strategy(ex).promise == Promise::exact_arithmetic;
    c.best_bit.push_back(bit);
    c.best_exact.push_back(ex);
    c.per_head_shard.push_back(pa.per_head_applies ? Strategy::per_head : Strategy::shard);
    c.per_head_best.push_back(pa.per_head_applies ? Strategy::per_head : bit);
  }
  return c;
}

void add_plans(AuditTotals& t, const std::vector<ParamAudit>& params, std::int64_t layers, int tp) {
  const std::size_t m = params.size();
  auto uniform = [&](Strategy s) { return std::vector<Strategy>(m, s); };
  auto add = [&](Plan plan, Promise promise, std::vector<Strategy> choice, bool partial = false) {
    PlanTotals p = total_plan(params, choice, layers, tp);
    p.plan = plan;
    p.promise = promise;
    p.partial = partial;
    t.plans.push_back(std::move(p));
  };
  // At tp = 1 every strategy is the unsharded kernel.
  const bool single = tp == 1;
  const Promise arithmetic = single ? Promise::bit_identical : Promise::exact_arithmetic;
  add(Plan::shard, single ? Promise::bit_identical : Promise::none, uniform(Strategy::shard));
  add(Plan::gather, Promise::bit_identical, uniform(Strategy::gather));
  add(Plan::owner, Promise::bit_identical, uniform(Strategy::owner));
  add(Plan::gram_allreduce, arithmetic, uniform(Strategy::gram_allreduce));
  add(Plan::gram_restart_allreduce, arithmetic, uniform(Strategy::gram_restart_allreduce));
  PlanChoices c = plan_choices(params);
  add(Plan::per_head_shard, single ? Promise::bit_identical : Promise::none, std::move(c.per_head_shard), !single);
  add(Plan::cheapest_bit_identical, Promise::bit_identical, std::move(c.best_bit));
  add(Plan::cheapest_exact, c.any_exact_arithmetic ? Promise::exact_arithmetic : Promise::bit_identical,
      std::move(c.best_exact));
  add(Plan::per_head_cheapest_bit_identical, Promise::bit_identical, std::move(c.per_head_best));
}

}  // namespace

AuditTotals audit_totals(const ModelConfig& model, const std::vector<ParamAudit>& params, const AuditOptions& o) {
  AuditTotals t;
  const std::int64_t layers = model.dims.layers;
  t.layers = layers;
  t.muon_params_per_layer = model.muon_params_per_layer();
  t.muon_params = model.muon_params();
  t.total_params = model.total_params();
  t.non_muon_params = t.total_params - t.muon_params;
  std::uint64_t flops_all = 0, flops_ph = 0;
  for (const auto& pa : params) {
    flops_all += pa.whole_ns_flops;
    if (pa.per_head_applies) {
      flops_ph += pa.whole_ns_flops;
      t.per_head_params += pa.param.elements() * layers;
    }
  }
  t.ns_flops_whole_per_step = flops_all * static_cast<std::uint64_t>(layers);
  t.per_head_exact_fraction_params = t.muon_params ? double(t.per_head_params) / double(t.muon_params) : 0;
  t.per_head_exact_fraction_flops = flops_all ? double(flops_ph) / double(flops_all) : 0;
  add_plans(t, params, layers, o.tp);
  return t;
}

}  // namespace audit_stages
}  // namespace nsv
