// The mesh strategies' names, applicability, promises and plans (mesh_strategies.hpp). The plans
// issue, per group, the collectives the execution (mesh_execution.cpp) issues, through the
// communicator's byte model, and take the TP stage's plan from plan_strategy itself.
#include <algorithm>
#include <array>
#include <stdexcept>
#include <string>

#include "nsv/invalid_field.hpp"
#include "nsv/mesh_strategies.hpp"
#include "mesh_ledger.hpp"
#include "strategies/operand.hpp"

namespace nsv {
namespace {

struct DpStageRecord {
  DpStage stage;
  std::string_view name, summary;
};
constexpr std::array<DpStageRecord, 3> kDpStageRecords = {{
    {DpStage::mesh, "mesh", "the tp x dp ranks as one group, each holding its 2-D block"},
    {DpStage::dp_gather, "dp_gather", "an all-gather over each DP group restores the TP shards, then every DP index runs the TP strategy"},
    {DpStage::dp_owner, "dp_owner",
     "an all-to-all over each DP group brings the TP shards to the owning DP index, its TP group runs the TP strategy, a "
     "second all-to-all sends the pieces back"},
}};

const DpStageRecord& stage_record(DpStage s) {
  for (const auto& r : kDpStageRecords)
    if (r.stage == s) return r;
  throw std::logic_error("stage_record: unknown DP stage");
}

using detail::add_rows;
using detail::Calls;
using detail::dp_members;
using detail::max_calls;
using detail::tp_members;

Ledger empty_ledger(int ranks) {
  Ledger l;
  l.ranks.resize(static_cast<std::size_t>(ranks));
  return l;
}

std::int64_t shard_elements(const MeshLayout& m, int t) {
  const auto [r, c] = m.shard_shape(t);
  return r * c;
}

// The DP stage's collectives of group t: the all-gather of its pieces, or the two all-to-alls of
// dp_owner (to the owning index, and back).
Ledger dp_stage_ledger(DpStage stage, const MeshLayout& m, int t, int owner, DType wire) {
  Ledger g = empty_ledger(m.dp);
  const auto& pieces = m.pieces[static_cast<std::size_t>(t)];
  if (stage == DpStage::dp_gather) {
    std::vector<std::int64_t> elements;
    for (const Range& p : pieces) elements.push_back(p.size());
    record_all_gather(g, elements, wire);
    return g;
  }
  const auto n = static_cast<std::size_t>(m.dp), o = static_cast<std::size_t>(owner);
  std::vector<PieceTransfer> to, back;
  for (std::size_t d = 0; d < n; ++d) {
    to.push_back({d, o, pieces[d].size()});
    back.push_back({o, d, pieces[d].size()});
  }
  record_all_to_all(g, to, wire);
  record_all_to_all(g, back, wire);
  return g;
}

MeshPlan plan_over_dp(MeshStrategy s, const MeshLayout& m, std::int64_t head_dim, const NsConfig& cfg, const StrategyOptions& opt,
                      int owner) {
  const StrategyPlan tp_plan = plan_strategy(s.tp, m.tp, m.rows, m.cols, head_dim, cfg, opt);
  MeshPlan p{s, detail::empty_plan(s.tp, m.size())};
  Calls dp_calls{};
  for (int t = 0; t < m.tp_size(); ++t) {
    const Ledger g = dp_stage_ledger(s.stage, m, t, owner, opt.storage);
    add_rows(p.ranks.ledger, g, dp_members(m, t));
    dp_calls = max_calls(dp_calls, g.calls);
  }
  for (int d = 0; d < m.dp; ++d) {
    if (s.stage == DpStage::dp_owner && d != owner) continue;
    add_rows(p.ranks.ledger, tp_plan.ledger, tp_members(m, d));
    for (int t = 0; t < m.tp_size(); ++t) {
      const auto r = static_cast<std::size_t>(m.mesh_rank(t, d)), ti = static_cast<std::size_t>(t);
      p.ranks.flops[r] = tp_plan.flops[ti];
      // The restored shard, then whatever the TP strategy holds beyond it.
      p.ranks.extra_memory[r] = detail::bytes_of(shard_elements(m, t), opt.storage) + tp_plan.extra_memory[ti];
    }
  }
  for (std::size_t i = 0; i < dp_calls.size(); ++i) p.ranks.ledger.calls[i] = dp_calls[i] + tp_plan.ledger.calls[i];
  return p;
}

// NS of each rank's block: no communication.
StrategyPlan plan_blocks(MeshStrategy s, const MeshLayout& m, const NsConfig& cfg) {
  StrategyPlan p = detail::empty_plan(s.tp, m.size());
  for (int r = 0; r < m.size(); ++r) {
    const auto [rows, cols] = m.block_shape(r);
    if (m.piece(r).size() > 0) p.flops[static_cast<std::size_t>(r)] = ns_flops(cfg, rows, cols);
  }
  return p;
}

}  // namespace

std::string_view dp_stage_name(DpStage s) { return stage_record(s).name; }
std::string_view dp_stage_summary(DpStage s) { return stage_record(s).summary; }

std::vector<MeshStrategy> all_mesh_strategies() {
  std::vector<MeshStrategy> out;
  for (DpStage stage : kAllDpStages)
    for (Strategy s : kAllStrategies) out.push_back({stage, s});
  return out;
}

std::string mesh_strategy_name(MeshStrategy s) {
  return std::string(dp_stage_name(s.stage)) + "+" + std::string(strategy_name(s.tp));
}

bool is_block_ns(MeshStrategy s) { return s == MeshStrategy{DpStage::mesh, Strategy::shard}; }

std::optional<Layout> tp_stage_layout(MeshStrategy s, const MeshLayout& m, std::string* why) {
  if (s.stage == DpStage::mesh) return composed_layout(m, why);
  return m.tp;
}

std::string mesh_inapplicable_reason(MeshStrategy s, const MeshLayout& m, std::int64_t head_dim) {
  if (is_block_ns(s))
    return m.rectangular() ? "" : "a ZeRO piece cuts a row of its shard, so the blocks are not matrices; gather over DP first (dp_gather, dp_owner)";
  std::string why;
  const std::optional<Layout> layout = tp_stage_layout(s, m, &why);
  if (!layout) return why;
  return inapplicable_reason(s.tp, *layout, head_dim);
}

Promise mesh_promise_on(MeshStrategy s, const MeshLayout& m) {
  if (is_block_ns(s)) {
    if (!m.rectangular()) return Promise::none;
    // NS of each block is NS of the whole where every block that holds something is the whole matrix.
    for (int r = 0; r < m.size(); ++r)
      if (m.piece(r).size() > 0 && m.piece(r).size() != m.rows * m.cols) return Promise::none;
    return Promise::bit_identical;
  }
  const std::optional<Layout> layout = tp_stage_layout(s, m);
  return layout ? promise_on(s.tp, *layout) : Promise::none;
}

MeshPlan plan_mesh_strategy(MeshStrategy s, const MeshLayout& m, std::int64_t head_dim, const NsConfig& cfg,
                            const StrategyOptions& opt, int dp_owner) {
  if (s.stage == DpStage::dp_owner && (dp_owner < 0 || dp_owner >= m.dp))
    throw InvalidField("dp_owner", "must be a DP index of the mesh (0.." + std::to_string(m.dp - 1) + "), got " +
                                       std::to_string(dp_owner));
  if (const std::string why = mesh_inapplicable_reason(s, m, head_dim); !why.empty())
    throw std::invalid_argument(mesh_strategy_name(s) + " does not apply: " + why);
  if (is_block_ns(s)) return {s, plan_blocks(s, m, cfg)};
  if (s.stage == DpStage::mesh)
    return {s, plan_strategy(s.tp, *composed_layout(m), m.rows, m.cols, head_dim, cfg, opt)};
  return plan_over_dp(s, m, head_dim, cfg, opt, dp_owner);
}

}  // namespace nsv
