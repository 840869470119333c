#include "nsv/render/comparison_json.hpp"

namespace nsv {

nlohmann::json comparison_json(const Comparison& c) {
  nlohmann::json ranks = nlohmann::json::array();
  for (const auto& r : c.ranks)
    ranks.push_back({{"rank", r.rank}, {"rows", r.rows}, {"cols", r.cols}, {"rel_diff", r.rel_diff}, {"cosine", r.cosine},
                     {"norm_ratio", r.norm_ratio}, {"bit_identical", r.bit_identical}, {"bytes_sent", r.traffic.bytes_sent},
                     {"bytes_received", r.traffic.bytes_received}, {"messages", r.traffic.messages}, {"flops", r.flops},
                     {"extra_memory_bytes", r.extra_memory}});
  nlohmann::json coll = nlohmann::json::object();
  for (Collective k : kAllCollectives) coll[std::string(collective_name(k))] = c.collectives[static_cast<std::size_t>(k)];
  return {{"rel_diff_mean", c.rel_diff_mean}, {"rel_diff_max", c.rel_diff_max}, {"bit_identical", c.bit_identical},
          {"collectives", coll}, {"ranks", ranks}};
}

}  // namespace nsv
