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
#include <numeric>
#include <stdexcept>

#include "audit_stages.hpp"
#include "nsv/checked.hpp"

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

const PlanTotals& AuditTotals::plan(Plan p) const& {
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
    sent[r] = count(sent[r], c.bytes_sent, times, "bytes sent per step");
    messages[r] = count(messages[r], c.messages, times, "messages per step");
    flops[r] = count(flops[r], c.flops, times, "NS FLOPs per step");
  }
  static std::uint64_t count(std::uint64_t sum, std::uint64_t each, std::uint64_t times, const char* what) {
    return detail::checked_add(sum, detail::checked_mul(each, times, what), what);
  }
  double time(std::size_t r) const { return compute[r] + latency[r] + bandwidth[r]; }
};

// Which matrices a sum covers: all of them, or the routed experts only.
enum class Scope { all, experts };
bool in_scope(const ParamAudit& pa, Scope s) { return s == Scope::all || pa.param.expert; }

PlanTotals totals_of(const RankSums& sums, std::size_t n, PlanTotals t);

// How many of matrix i's copies over the step each rank owns under the rotation: the rotated
// matrices of a layer take positions [0, per_layer) in layer order, matrix i's copies
// [first, first + copies), and position k of the step (layer l: l * per_layer + the position) is
// owned by rank k mod n. A layer's copies cover copies / n whole turns of the ranks and an arc of
// copies % n ranks from its start, and that start repeats every n / gcd(per_layer, n) layers, so
// one period of layers, weighted by how often each recurs, gives the counts: O(n) for any number
// of layers and copies.
std::vector<std::uint64_t> owned_counts(std::uint64_t first, std::uint64_t per_layer, std::uint64_t copies, std::uint64_t layers,
                                        std::size_t n) {
  const std::uint64_t ranks = n, arc = copies % ranks;
  const std::uint64_t period = ranks / std::gcd(per_layer % ranks, ranks);  // gcd(0, n) = n: period 1
  std::vector<std::int64_t> step(n + 1, 0);  // difference array of the arcs' counts
  for (std::uint64_t l = 0; l < std::min(layers, period); ++l) {
    const auto recurs = static_cast<std::int64_t>((layers - 1 - l) / period + 1);
    const std::uint64_t start = (l % ranks * (per_layer % ranks) + first) % ranks, end = start + arc;
    step[start] += recurs;
    if (end <= ranks) {
      step[end] -= recurs;
    } else {
      step[ranks] -= recurs;
      step[0] += recurs;
      step[end - ranks] -= recurs;
    }
  }
  const std::uint64_t whole_turns = detail::checked_mul(copies / ranks, layers, "matrices per step");
  std::vector<std::uint64_t> counts(n);
  std::int64_t running = 0;
  for (std::size_t r = 0; r < n; ++r) counts[r] = whole_turns + static_cast<std::uint64_t>(running += step[r]);
  return counts;
}

PlanTotals total_plan(const std::vector<ParamAudit>& params, const std::vector<Strategy>& choice, std::int64_t layers, int tp,
                      Scope scope = Scope::all) {
  PlanTotals t;
  t.choice = choice;
  const auto n = static_cast<std::size_t>(tp);
  const auto rotated = [&](std::size_t i) { return choice[i] == Strategy::owner && in_scope(params[i], scope); };
  std::uint64_t per_layer = 0;  // the rotated copies of a layer
  for (std::size_t i = 0; i < params.size(); ++i)
    if (rotated(i)) per_layer += static_cast<std::uint64_t>(params[i].param.copies);
  RankSums sums(n);
  std::uint64_t first = 0;
  for (std::size_t i = 0; i < params.size(); ++i) {
    if (!in_scope(params[i], scope)) continue;
    const StrategyAudit& a = params[i].strategy(choice[i]);
    for (const auto& c : a.ranks) t.peak_extra_memory = std::max(t.peak_extra_memory, c.extra_memory);
    const auto copies = static_cast<std::uint64_t>(params[i].param.copies);
    const auto times = detail::checked_mul(static_cast<std::uint64_t>(layers), copies, "matrices per step");
    if (!rotated(i)) {
      for (std::size_t r = 0; r < n; ++r) sums.add(r, a.ranks[r], times);
      continue;
    }
    // Owners rotate over the owner-strategy matrices (every copy of each) in layer order.
    const std::vector<std::uint64_t> owned = owned_counts(first, per_layer, copies, static_cast<std::uint64_t>(layers), n);
    first += copies;
    for (std::size_t r = 0; r < n; ++r) {
      sums.add(r, a.as_member[r], times - owned[r]);
      sums.add(r, a.as_owner[r], owned[r]);
    }
  }
  return totals_of(sums, n, std::move(t));
}

PlanTotals totals_of(const RankSums& sums, std::size_t n, PlanTotals t) {
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

// The routed experts under AutoTP's sharding (shard, and the faster exact strategy per matrix)
// and under expert parallelism.
ExpertTotals expert_totals(const ModelConfig& model, const std::vector<ParamAudit>& params, std::int64_t layers, int tp) {
  ExpertTotals e;
  e.deepspeed = model.family ? model.family->experts : ExpertPlacement::none;
  std::vector<Strategy> shard, exact;
  const auto n = static_cast<std::size_t>(tp);
  RankSums ep(n);
  for (const auto& pa : params) {
    shard.push_back(Strategy::shard);
    exact.push_back(pa.cheapest_bit_identical.value_or(Strategy::gather));
    if (!pa.expert_parallel) continue;
    e.matrices_per_step += pa.param.copies * layers;
    for (std::size_t r = 0; r < n; ++r) ep.add(r, pa.expert_parallel->ranks[r], static_cast<std::uint64_t>(layers));
  }
  e.tensor_parallel_shard = total_plan(params, shard, layers, tp, Scope::experts);
  e.tensor_parallel_shard.promise = tp == 1 ? Promise::bit_identical : Promise::none;
  e.tensor_parallel_exact = total_plan(params, exact, layers, tp, Scope::experts);
  e.tensor_parallel_exact.plan = Plan::cheapest_bit_identical;
  e.tensor_parallel_exact.promise = Promise::bit_identical;
  e.expert_parallel = totals_of(ep, n, PlanTotals{});
  e.expert_parallel.promise = Promise::bit_identical;
  return e;
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
  // One strategy for every matrix it applies to; where it does not (the all-reduce strategies on a
  // layout with replicated rows), the matrix's cheapest bit-identical strategy, so the plan keeps
  // its promise (choice says which).
  auto uniform = [&](Strategy s) {
    std::vector<Strategy> choice;
    for (const auto& pa : params)
      choice.push_back(pa.strategy(s).applicable ? s : pa.cheapest_bit_identical.value_or(Strategy::gather));
    return choice;
  };
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
    const auto flops = detail::checked_mul(pa.whole_ns_flops, static_cast<std::uint64_t>(pa.param.copies), "NS FLOPs per layer");
    flops_all = detail::checked_add(flops_all, flops, "NS FLOPs per layer");
    if (pa.per_head_applies) {
      flops_ph += flops;
      t.per_head_params += pa.param.elements_per_layer() * layers;
    }
  }
  t.ns_flops_whole_per_step = detail::checked_mul(flops_all, static_cast<std::uint64_t>(layers), "NS FLOPs per step");
  t.per_head_exact_fraction_params = t.muon_params ? double(t.per_head_params) / double(t.muon_params) : 0;
  t.per_head_exact_fraction_flops = flops_all ? double(flops_ph) / double(flops_all) : 0;
  add_plans(t, params, layers, o.tp);
  if (model.dims.experts > 0) t.experts = expert_totals(model, params, layers, o.tp);
  return t;
}

}  // namespace audit_stages
}  // namespace nsv
