// audit_mesh (mesh_audit.hpp): every mesh strategy planned for every Muon matrix of a layer, the
// step totals, and the owner-over-DP load balance under both assignments.
#include "nsv/analysis/mesh_audit.hpp"

#include <algorithm>
#include <numeric>
#include <queue>
#include <string>
#include <utility>
#include <stdexcept>

#include "nsv/invalid_field.hpp"
#include "nsv/layout.hpp"

namespace nsv {
namespace {

MeshStrategyAudit audit_strategy(MeshStrategy s, const MeshLayout& m, std::int64_t head_dim, const NsConfig& ns,
                                 const CostParams& cost, const StrategyOptions& comm) {
  MeshStrategyAudit a{.strategy = s, .target = natural_target(s.tp)};
  a.why_not = mesh_inapplicable_reason(s, m, head_dim);
  a.applicable = a.why_not.empty();
  if (!a.applicable) return a;
  a.promise = mesh_promise_on(s, m);
  const MeshPlan plan = plan_mesh_strategy(s, m, head_dim, ns, comm, 0);
  for (const RankCost& c : rank_costs(plan.ranks, cost)) {
    a.time_s = std::max(a.time_s, c.time_s());
    a.flops_max_rank = std::max(a.flops_max_rank, c.flops);
    a.bytes_sent_max_rank = std::max(a.bytes_sent_max_rank, c.bytes_sent);
    a.messages_max_rank = std::max(a.messages_max_rank, c.messages);
    a.extra_memory_max_rank = std::max(a.extra_memory_max_rank, c.extra_memory);
  }
  a.step_share_s = s.stage == DpStage::dp_owner ? a.time_s / m.dp : a.time_s;
  return a;
}

std::optional<MeshStrategy> cheapest(const std::vector<MeshStrategyAudit>& all, bool bit_identical_only) {
  const MeshStrategyAudit* best = nullptr;
  for (const MeshStrategyAudit& a : all)
    if (a.exact_for_whole() && (!bit_identical_only || a.promise == Promise::bit_identical) &&
        (!best || a.step_share_s < best->step_share_s))
      best = &a;
  return best ? std::optional<MeshStrategy>(best->strategy) : std::nullopt;
}

MeshParamAudit audit_param(const MuonParam& p, int tp, int dp, DpPartition partition, std::int64_t grain, const NsConfig& ns,
                           const CostParams& cost, const StrategyOptions& comm) {
  MeshParamAudit pa{p, mesh_layout(autotp_layout(p, tp, grain), p.rows, p.cols, dp, partition), {}, {}, {}, ns_flops(ns, p.rows, p.cols)};
  const std::int64_t head_dim = p.heads_on_rows() ? p.head_dim : 0;
  for (const MeshStrategy& s : all_mesh_strategies()) pa.strategies.push_back(audit_strategy(s, pa.layout, head_dim, ns, cost, comm));
  pa.cheapest_bit_identical = cheapest(pa.strategies, true);
  pa.cheapest_exact = cheapest(pa.strategies, false);
  return pa;
}

// One matrix of the step: which layer, which of the layer's matrices.
struct StepMatrix {
  std::int64_t layer = 0;
  std::size_t param = 0;
};

std::vector<StepMatrix> step_matrices(const ModelConfig& model, const std::vector<MeshParamAudit>& params) {
  std::vector<StepMatrix> out;
  for (std::int64_t l = 0; l < model.dims.layers; ++l)
    for (std::size_t p = 0; p < params.size(); ++p)
      for (std::int64_t c = 0; c < params[p].param.copies; ++c) out.push_back({l, p});
  return out;
}

// The DP index owning each matrix of the step.
std::vector<int> deal(OwnerAssignment how, const std::vector<StepMatrix>& step, const std::vector<MeshParamAudit>& params, int dp) {
  std::vector<int> owner(step.size());
  if (how == OwnerAssignment::round_robin) {
    for (std::size_t k = 0; k < step.size(); ++k) owner[k] = static_cast<int>(k % static_cast<std::size_t>(dp));
    return owner;
  }
  std::vector<std::size_t> order(step.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return params[step[a].param].whole_ns_flops > params[step[b].param].whole_ns_flops;
  });
  // The least-loaded index first, ties to the lowest: a heap of (load, index).
  using Load = std::pair<double, int>;
  std::priority_queue<Load, std::vector<Load>, std::greater<>> least;
  for (int d = 0; d < dp; ++d) least.push({0.0, d});
  for (std::size_t k : order) {
    auto [load, d] = least.top();
    least.pop();
    owner[k] = d;
    least.push({load + static_cast<double>(params[step[k].param].whole_ns_flops), d});
  }
  return owner;
}

double imbalance(const std::vector<double>& per_index) {
  const double total = std::accumulate(per_index.begin(), per_index.end(), 0.0);
  if (total == 0) return 1;
  return *std::max_element(per_index.begin(), per_index.end()) / (total / static_cast<double>(per_index.size()));
}

// The imbalance of one layer's loads, given the indices its matrices touched (every other index
// holds 0): the same sums as imbalance() over all dp indices, in index order, without visiting
// them, so a layer costs its own matrices and not dp. Resets the touched loads to 0.
double layer_imbalance(std::vector<double>& load, std::vector<int>& touched, int dp) {
  std::sort(touched.begin(), touched.end());
  touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
  double total = 0, busiest = 0;
  for (int d : touched) {
    total += load[static_cast<std::size_t>(d)];
    busiest = std::max(busiest, load[static_cast<std::size_t>(d)]);
    load[static_cast<std::size_t>(d)] = 0;
  }
  touched.clear();
  return total == 0 ? 1 : busiest / (total / static_cast<double>(dp));
}

// The busiest DP index's sum of `s`'s times over the matrices it owns.
double owner_step_time(MeshStrategy s, const std::vector<StepMatrix>& step, const std::vector<int>& owner,
                       const std::vector<MeshParamAudit>& params, int dp) {
  std::vector<double> time(static_cast<std::size_t>(dp), 0);
  for (std::size_t k = 0; k < step.size(); ++k)
    time[static_cast<std::size_t>(owner[k])] += params[step[k].param].strategy(s).time_s;
  return *std::max_element(time.begin(), time.end());
}

OwnerLoad owner_load(OwnerAssignment how, const std::vector<StepMatrix>& step,
                     const std::vector<MeshParamAudit>& params, int dp) {
  const std::vector<int> owner = deal(how, step, params, dp);
  OwnerLoad load{.assignment = how, .matrices_per_step = static_cast<std::int64_t>(step.size())};
  std::vector<double> flops(static_cast<std::size_t>(dp), 0), layer(static_cast<std::size_t>(dp), 0);
  std::vector<int> touched;
  for (std::size_t k = 0; k < step.size(); ++k) {
    if (k > 0 && step[k].layer != step[k - 1].layer)  // the step is in layer order
      load.worst_layer_imbalance = std::max(load.worst_layer_imbalance, layer_imbalance(layer, touched, dp));
    const auto f = static_cast<double>(params[step[k].param].whole_ns_flops);
    flops[static_cast<std::size_t>(owner[k])] += f;
    layer[static_cast<std::size_t>(owner[k])] += f;
    touched.push_back(owner[k]);
  }
  load.worst_layer_imbalance = std::max(load.worst_layer_imbalance, layer_imbalance(layer, touched, dp));
  load.step_imbalance = imbalance(flops);
  load.busiest_flops = static_cast<std::uint64_t>(*std::max_element(flops.begin(), flops.end()));
  load.mean_flops = std::accumulate(flops.begin(), flops.end(), 0.0) / dp;
  load.gather_step_time_s = owner_step_time({DpStage::dp_owner, Strategy::gather}, step, owner, params, dp);
  load.owner_step_time_s = owner_step_time({DpStage::dp_owner, Strategy::owner}, step, owner, params, dp);
  return load;
}

MeshStepTotals step_totals(MeshStrategy s, const std::vector<StepMatrix>& step, const std::vector<int>& round_robin,
                           const std::vector<MeshParamAudit>& params, int dp) {
  MeshStepTotals t{.strategy = s, .promise = Promise::bit_identical};
  for (const MeshParamAudit& pa : params) {
    const MeshStrategyAudit& a = pa.strategy(s);
    if (!a.applicable || a.target != Target::whole) {
      t.applies_to_every_matrix = false;
      t.promise = Promise::none;
      return t;
    }
    if (a.promise == Promise::none || (a.promise == Promise::exact_arithmetic && t.promise == Promise::bit_identical)) t.promise = a.promise;
  }
  if (s.stage == DpStage::dp_owner) {
    t.step_time_s = owner_step_time(s, step, round_robin, params, dp);
    return t;
  }
  for (const StepMatrix& m : step) t.step_time_s += params[m.param].strategy(s).time_s;
  return t;
}

}  // namespace

std::string_view owner_assignment_name(OwnerAssignment a) { return a == OwnerAssignment::round_robin ? "round_robin" : "by_size"; }

const MeshStrategyAudit& MeshParamAudit::strategy(MeshStrategy s) const {
  for (const MeshStrategyAudit& a : strategies)
    if (a.strategy == s) return a;
  throw std::logic_error("MeshParamAudit: strategy missing");
}

const MeshStepTotals& MeshAudit::step(MeshStrategy s) const {
  for (const MeshStepTotals& t : steps)
    if (t.strategy == s) return t;
  throw std::logic_error("MeshAudit: strategy missing");
}

void require_mesh_auditable(const ModelConfig& model) {
  std::int64_t per_layer = 0;
  for (const MuonParam& p : model.layer_params()) per_layer += p.copies;
  if (model.dims.layers > 0 && per_layer > kMaxMeshStepMatrices / model.dims.layers)
    throw InvalidField("dp", "above 1 deals each of the step's Muon matrices to a DP index, and this model has " +
                                 std::to_string(model.dims.layers) + " layers x " + std::to_string(per_layer) +
                                 " matrices (expert copies counted) per step; a mesh audit takes at most " +
                                 std::to_string(kMaxMeshStepMatrices) + ": audit it at dp 1");
}

MeshAudit audit_mesh(const ModelConfig& model, int tp, int dp, DpPartition partition, std::int64_t grain, const NsConfig& ns,
                     const CostParams& cost, const StrategyOptions& comm) {
  require_mesh_auditable(model);
  MeshAudit audit{.tp = tp, .dp = dp, .partition = partition};
  for (const MuonParam& p : model.layer_params()) audit.params.push_back(audit_param(p, tp, dp, partition, grain, ns, cost, comm));
  const std::vector<StepMatrix> step = step_matrices(model, audit.params);
  const std::vector<int> round_robin = deal(OwnerAssignment::round_robin, step, audit.params, dp);
  for (const MeshStrategy& s : all_mesh_strategies()) audit.steps.push_back(step_totals(s, step, round_robin, audit.params, dp));
  for (OwnerAssignment how : kAllOwnerAssignments) audit.owner_loads.push_back(owner_load(how, step, audit.params, dp));
  for (const MeshStepTotals& t : audit.steps)
    if (t.applies_to_every_matrix && t.promise == Promise::bit_identical &&
        (!audit.fastest_bit_identical_step || t.step_time_s < audit.step(*audit.fastest_bit_identical_step).step_time_s))
      audit.fastest_bit_identical_step = t.strategy;
  return audit;
}

}  // namespace nsv
