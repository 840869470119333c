#include "nsv/cost_model.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "nsv/invalid_field.hpp"
#include "strategies/operand.hpp"

namespace nsv {

void CostParams::validate() const {
  const auto got = [](double v) { return ", got " + std::to_string(v); };
  if (!(latency_us >= 0) || !std::isfinite(latency_us)) throw InvalidField("latency_us", "must be a finite number >= 0" + got(latency_us));
  if (!(link_gbps > 0) || !std::isfinite(link_gbps)) throw InvalidField("link_gbps", "must be a finite number > 0" + got(link_gbps));
  if (!(tflops > 0) || !std::isfinite(tflops)) throw InvalidField("tflops", "must be a finite number > 0" + got(tflops));
}

std::pair<std::int64_t, std::int64_t> shard_shape(const Layout& layout, std::int64_t rows, std::int64_t cols, int rank) {
  const std::int64_t w = layout.width(rank);
  return layout.axis == 0 ? std::pair{w, cols} : std::pair{rows, w};
}

StrategyPlan plan_strategy(Strategy s, const Layout& layout, std::int64_t rows, std::int64_t cols, std::int64_t head_dim,
                           const NsConfig& cfg, const StrategyOptions& opt) {
  cfg.validate();
  if (layout.tp() < 1) throw InvalidField("tp", "must be at least 1 (a layout needs a rank), got " + std::to_string(layout.tp()));
  if ((layout.axis == 0 ? rows : cols) != layout.dim)
    throw std::invalid_argument("layout covers " + std::to_string(layout.dim) + " along axis " + std::to_string(layout.axis) +
                                " but the matrix is " + std::to_string(rows) + "x" + std::to_string(cols));
  if (const std::string why = inapplicable_reason(s, layout, head_dim); !why.empty()) throw std::invalid_argument(why);
  const StrategyRecord& rec = strategy_record(s);
  return detail::operand_impl(rec.operand).plan(rec, {layout, rows, cols, head_dim}, cfg, opt);
}

RankCost rank_cost(const StrategyPlan& plan, int rank, const CostParams& cp) {
  const auto i = static_cast<std::size_t>(rank);
  RankCost c;
  const RankTraffic& t = plan.ledger.ranks.at(i);
  c.flops = plan.flops.at(i);
  c.bytes_sent = t.bytes_sent;
  c.bytes_received = t.bytes_received;
  c.messages = t.messages;
  c.extra_memory = plan.extra_memory.at(i);
  c.compute_s = static_cast<double>(c.flops) / (cp.tflops * 1e12);
  c.latency_s = static_cast<double>(c.messages) * cp.latency_us * 1e-6;
  c.bandwidth_s = static_cast<double>(std::max(c.bytes_sent, c.bytes_received)) / (cp.link_gbps * 1e9);
  return c;
}

std::vector<RankCost> rank_costs(const StrategyPlan& plan, const CostParams& cp) {
  std::vector<RankCost> out;
  for (int r = 0; r < static_cast<int>(plan.flops.size()); ++r) out.push_back(rank_cost(plan, r, cp));
  return out;
}

}  // namespace nsv
