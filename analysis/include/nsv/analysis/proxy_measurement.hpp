#pragma once
// The measured divergence of today's `shard` path for one Muon matrix (SPEC §6, `nsv audit`
// with measurement): NS of each rank's shard against the matching block of NS of the whole, on
// a Gaussian gradient of the matrix's shape or, for large matrices, of a scaled-down proxy whose
// normalized singular values follow the full-size distribution (proxy_measurement.cpp explains
// the matching).
#include <cstdint>
#include <vector>

#include "nsv/backend.hpp"
#include "nsv/kernels.hpp"
#include "nsv/model.hpp"

namespace nsv {

struct ShardDivergence {
  bool proxy = false;        // measured on a scaled-down proxy (false: on the full shape)
  bool proxy_exact_ratio = true;  // the proxy's dims are the full dims divided by `scale` exactly
  std::int64_t scale = 1;    // full dims / proxy dims
  // The proxy's first NS step divides its input by this (sqrt(scale)), so that its
  // normalized singular values follow the full-size matrix's distribution.
  double spectrum_scale = 1;
  std::int64_t rows = 0, cols = 0, head_dim = 0;  // what was measured
  std::vector<std::int64_t> shard_sizes;          // the proxy's shards under the same rules
  double rel_diff_mean = 0, rel_diff_max = 0;     // over ranks holding a non-empty shard
  std::vector<double> rank_rel_diff;              // per rank (0 for empty shards)
  double cosine_min = 1;
  // The same after Muon's aspect scale sqrt(rows/cols) when rows > cols (SPEC §1.4), computed as
  // DeepSpeed does under AutoTP from the shard's shape, against the unsharded update's block
  // scaled from the whole shape: the difference in the update Muon applies.
  double update_rel_diff_mean = 0, update_rel_diff_max = 0;
  double seconds = 0;
};

// NS of the shard vs the matching block of NS of the whole, on a Gaussian gradient of the
// matrix's shape, or, when rows*cols > max_elements, of a proxy: every length divided by one
// factor f (same aspect ratio, heads, KV groups, shard proportions), its first NS step prescaled
// so that its normalized singular values follow the full-size distribution.
// match_spectrum = false gives the plain proxy (for showing why the matching is needed).
ShardDivergence measure_shard_divergence(const MuonParam&, int tp, std::int64_t grain, const NsConfig&,
                                         std::int64_t max_elements, std::uint64_t seed, const Backend&,
                                         bool match_spectrum = true);

// The configuration whose first NS step is cfg's first step applied to x / s: its triple
// (a/s, b/s^3, c/s^5), p(x/s) = (a/s) x + (b/s^3) x^3 + (c/s^5) x^5; each later one of cfg.steps
// cfg's own (the schedule written out step by step, so a cycling one does not reuse the edited
// triple; past cfg.steps it repeats its last).
NsConfig first_step_prescaled(const NsConfig& cfg, double s);

}  // namespace nsv
