// The measured divergence of the `shard` path (nsv/analysis/proxy_measurement.hpp): on the matrix's own
// shape, or on a scaled-down proxy with the full-size distribution of normalized singular values.
#include "nsv/analysis/proxy_measurement.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fmt/format.h>
#include <numeric>

#include "nsv/layout.hpp"
#include "nsv/metrics.hpp"
#include "nsv/muon.hpp"
#include "nsv/spectra.hpp"
#include "nsv/strategies.hpp"

namespace nsv {

namespace {

// The smallest factor f >= 2 that brings rows x cols under the budget.
std::int64_t smallest_scale(std::int64_t elements, std::int64_t max_elements) {
  std::int64_t f = std::max<std::int64_t>(2, static_cast<std::int64_t>(std::ceil(std::sqrt(double(elements) / double(max_elements)))));
  while (elements / (f * f) > max_elements) ++f;
  return f;
}

// The smallest k >= f dividing every length that fixes the shape: rows, cols and the head size
// (so the aspect ratio, the head count, the KV groups and hence the shard proportions stay
// exactly those of the real matrix); 0 if there is none.
std::int64_t exact_scale(const MuonParam& p, std::int64_t f) {
  std::int64_t common = std::gcd(p.rows, p.cols);
  if (p.head_dim > 0) common = std::gcd(common, p.head_dim);
  for (const auto& part : p.parts) common = std::gcd(common, part.rows);  // a fused matrix's sub-matrices
  for (std::int64_t k = f; k <= common; ++k)
    if (common % k == 0) return k;
  return 0;
}

// No common divisor: each length rounded (the ratio is then approximate), the heads kept whole.
MuonParam rounded_proxy(const MuonParam& p, std::int64_t k) {
  MuonParam q = p;
  auto shrink = [k](std::int64_t v) { return std::max<std::int64_t>(1, std::llround(double(v) / double(k))); };
  q.head_dim = p.head_dim > 0 ? shrink(p.head_dim) : 0;
  const std::int64_t heads_len = p.heads * q.head_dim;
  if (p.heads > 0 && p.split_axis == 0) {
    q.rows = heads_len;
    q.cols = shrink(p.cols);
  } else if (p.heads > 0) {
    q.rows = shrink(p.rows);
    q.cols = heads_len;
  } else {
    q.rows = shrink(p.rows);
    q.cols = shrink(p.cols);
  }
  if (!p.parts.empty()) {  // a fused matrix: each sub-matrix shrunk as its rows are (whole heads kept)
    q.rows = 0;
    for (auto& part : q.parts) {
      part.rows = part.has_heads && p.head_dim > 0 ? part.rows / p.head_dim * q.head_dim : shrink(part.rows);
      q.rows += part.rows;
    }
  }
  return q;
}

// The matrix measured when p exceeds the budget; sets d.scale and d.proxy_exact_ratio.
MuonParam scaled_down(const MuonParam& p, std::int64_t max_elements, ShardDivergence& d) {
  const std::int64_t f = smallest_scale(p.rows * p.cols, max_elements);
  if (const std::int64_t exact = exact_scale(p, f); exact > 0) {
    d.scale = exact;
    MuonParam q = p;
    q.rows = p.rows / exact;
    q.cols = p.cols / exact;
    q.head_dim = p.head_dim / exact;
    for (auto& part : q.parts) part.rows /= exact;
    return q;
  }
  d.proxy_exact_ratio = false;
  for (std::int64_t k = f;; ++k) {
    d.scale = k;
    const MuonParam q = rounded_proxy(p, k);
    if (q.rows * q.cols <= max_elements || (q.head_dim <= 1 && p.heads > 0)) return q;
  }
}

// NS of the shards of `grad` against the blocks of NS of the whole, before and after Muon's
// aspect scale (from the shard's shape, as DeepSpeed under AutoTP, vs from the whole's).
void measure(const MatD& grad, const Layout& layout, const NsConfig& cfg, const Backend& backend, ShardDivergence& d) {
  const StrategyRun run = run_strategy(Strategy::shard, backend, shard_matrix(grad, layout, 0), cfg);
  const MatD whole = newton_schulz(backend, grad, cfg);
  const Comparison c = compare_with_target(run, whole, layout);
  d.rel_diff_mean = c.rel_diff_mean;
  d.rel_diff_max = c.rel_diff_max;
  const auto blocks = split(whole, layout);
  const double global_scale = aspect_scale(grad.rows(), grad.cols());
  int counted = 0;
  for (const auto& r : c.ranks) {
    d.rank_rel_diff.push_back(r.rel_diff);
    if (r.rows * r.cols == 0) continue;
    d.cosine_min = std::min(d.cosine_min, r.cosine);
    const auto i = static_cast<std::size_t>(r.rank);
    const double u = rel_diff(MatD(run.outputs[i] * aspect_scale(r.rows, r.cols)), MatD(blocks[i] * global_scale));
    d.update_rel_diff_mean += u;
    d.update_rel_diff_max = std::max(d.update_rel_diff_max, u);
    ++counted;
  }
  if (counted) d.update_rel_diff_mean /= counted;
}

}  // namespace

// Spectrum matching. NS acts on the singular values normalized by the Frobenius norm, and a
// Gaussian (m/f) x (n/f) matrix's normalized singular values are sqrt(f) times those of an
// m x n one (Marchenko-Pastur: sigma ~ sqrt(m) +- sqrt(n), ||G||_F = sqrt(mn)); so are its
// shards' against the full-size shards'. Five steps do not fully converge, so a plain proxy
// would converge further than the real matrix. Dividing the first step's input by
// s = sqrt(f) -- folded into its coefficients, p(x/s) = (a/s) x + (b/s^3) x^3 + (c/s^5) x^5 --
// gives the proxy, its whole and its shards alike, the full-size distribution of normalized
// singular values.
NsConfig first_step_prescaled(const NsConfig& cfg, double s) {
  NsConfig run_cfg = cfg;
  // every step's triple written out (a cycling schedule would otherwise reuse the edited first
  // one), and one more so that the first is never the one repeated
  std::vector<Coeffs> triples = cfg.coeffs.expanded(std::max(cfg.steps, 2)).triples;
  triples[0] = {triples[0].a / s, triples[0].b / (s * s * s), triples[0].c / (s * s * s * s * s)};
  run_cfg.coeffs.triples = std::move(triples);
  run_cfg.coeffs.after_last = AfterLast::repeat_last;
  run_cfg.coeffs.name = cfg.coeffs.name + " (first step prescaled by 1/" + fmt::format("{:.4g}", s) + ")";
  return run_cfg;
}


ShardDivergence measure_shard_divergence(const MuonParam& p, int tp, std::int64_t grain, const NsConfig& cfg,
                                         std::int64_t max_elements, std::uint64_t seed, const Backend& backend,
                                         bool match_spectrum) {
  const auto t0 = std::chrono::steady_clock::now();
  ShardDivergence d;
  d.proxy = p.rows * p.cols > max_elements;
  const MuonParam q = d.proxy ? scaled_down(p, max_elements, d) : p;
  const std::int64_t g = !d.proxy ? grain : grain > 1 ? std::max<std::int64_t>(1, grain / d.scale) : 1;
  d.rows = q.rows;
  d.cols = q.cols;
  d.head_dim = q.head_dim;
  const Layout layout = autotp_layout(q, tp, g);
  d.shard_sizes = layout.widths();
  NsConfig run_cfg = cfg;
  if (d.proxy && match_spectrum) {
    // f^2 = the element ratio, so s = sqrt(f) is its fourth root.
    d.spectrum_scale = std::pow(double(p.rows) * double(p.cols) / (double(q.rows) * double(q.cols)), 0.25);
    run_cfg = first_step_prescaled(cfg, d.spectrum_scale);
  }
  measure(gaussian_matrix(q.rows, q.cols, seed), layout, run_cfg, backend, d);
  d.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return d;
}

}  // namespace nsv
