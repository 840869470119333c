#pragma once
// What `nsv sweep` runs: the parameters (SweepSpec, one list per field) and their cartesian
// product expanded into cases, minus the combinations that do not apply (sweep_skip_reason).
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "nsv/config_schema.hpp"
#include "nsv/engine/sweep_row.hpp"
#include "nsv/kernels.hpp"
#include "nsv/layout.hpp"
#include "nsv/strategies.hpp"

namespace nsv::engine {

// In SweepSpec::strategies: every strategy of the record table, in its order.
inline constexpr std::string_view kEveryStrategy = "all";

// The configuration's fields default to the schema's defaults (NsConfig{}'s, the library's
// reduction order, no fused projection).
struct SweepSpec {
  std::vector<std::string> shapes{"512x1024"};
  std::vector<int> tps{2};
  std::vector<int> axes{0};
  std::vector<std::string> kernels{ns_config_names().kernel};
  std::vector<std::string> strategies{"shard"};
  std::vector<std::string> dtypes{ns_config_names().dtype};
  std::vector<int> steps{ns_config_names().steps};
  std::vector<std::string> spectra{"gaussian"};
  std::vector<std::string> orders{std::string(name_of(StrategyOptions{}.order))};
  std::vector<std::string> coeffs{ns_config_names().coeffs};
  std::vector<std::string> fused{std::string(name_of(FusedKind::none))};  // none | qkv:KIND | gate_up (dim-0 cases only)
  int seeds = 1;
  std::int64_t heads = 0, kv_heads = 0, grain = 1;
  std::string accumulate = ns_config_names().accumulate;
  std::string products = ns_config_names().products;
  std::string restart_at = ns_config_names().restart_at;  // one restart list for every case (restarts_text)

  nlohmann::json to_json() const;
};

struct SweepCase {
  std::size_t index = 0;  // position in the cartesian order
  std::int64_t rows = 0, cols = 0;
  std::string spectrum;   // canonical text (Spectrum::text())
  std::uint64_t seed = 0;
  NsConfig ns;
  int tp = 1, axis = 0;
  std::int64_t grain = 1, heads = 0, kv_heads = 0, head_dim = 0;  // the matrix's heads; head_dim: per_head's
  FusedKind fused = FusedKind::none;
  Strategy strategy = Strategy::shard;
  ReductionOrder order = ReductionOrder::rank;

  SweepRow parameters() const;  // a row with the key columns filled in, the results empty
  std::string key() const;      // sweep_row_key(parameters())
  AutoTpSplit split() const;    // AutoTP's split of the case's matrix (autotp_split)
  Layout layout() const;        // its shards of the split axis
};

struct SweepPlan {
  std::vector<SweepCase> cases;
  std::map<std::string, std::size_t> skipped;  // reason -> count
};

// Parses and checks every parameter (throws std::invalid_argument; an InvalidField naming the field
// where one is at fault) and expands the product. Nothing is computed or written.
SweepPlan plan_sweep(const SweepSpec&);

}  // namespace nsv::engine
