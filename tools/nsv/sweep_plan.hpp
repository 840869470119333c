#pragma once
// What `nsv sweep` runs: the parameters (SweepSpec, one list per flag) and their cartesian
// product expanded into cases, minus the combinations that do not apply (sweep_skip_reason).
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "nsv/kernels.hpp"
#include "nsv/layout.hpp"
#include "nsv/strategies.hpp"
#include "sweep_row.hpp"

namespace nsv::cli {

// In SweepSpec::strategies: every strategy of the record table, in its order.
inline constexpr std::string_view kEveryStrategy = "all";

struct SweepSpec {
  std::vector<std::string> shapes{"512x1024"};
  std::vector<int> tps{2};
  std::vector<int> axes{0};
  std::vector<std::string> kernels{"gram"};
  std::vector<std::string> strategies{"shard"};
  std::vector<std::string> dtypes{"fp32"};
  std::vector<int> steps{5};
  std::vector<std::string> spectra{"gaussian"};
  std::vector<std::string> orders{"rank"};
  std::vector<std::string> coeffs{"keller"};
  std::vector<std::string> fused{"none"};  // none | qkv:KIND | gate_up (dim-0 cases only)
  int seeds = 1;
  std::int64_t heads = 0, kv_heads = 0, grain = 1;
  std::string accumulate = "fp32";
  std::string products = "symmetric";
  std::string restart_at = "2";  // one restart list for every case (restarts_text)

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

// Parses and checks every parameter (throws std::invalid_argument with a message naming the flag
// and value) and expands the product. Nothing is computed or written.
SweepPlan plan_sweep(const SweepSpec&);

}  // namespace nsv::cli
