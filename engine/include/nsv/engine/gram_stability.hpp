#pragma once
// The Gram Newton-Schulz stability study: where DeepSpeed's Gram kernel is safe in half
// precision, over dtype x steps x restart list x spectrum x shape, and which restart list makes it
// safe at what cost.
//
// For each input G (short side p, aspect ratio, spectrum, seed: a wide p x p*aspect matrix, the
// orientation both of DeepSpeed's kernels iterate in) and each configuration, the output X is
// measured against what the same map gives in exact arithmetic, computed from G's float64 SVD
// G = U diag(sigma) V^T and the scalar map phi (X = U phi(x) V^T with x = sigma / (||G||_F + eps)):
//   kept subspace K     the directions the exact map sends to at least 1/2 (phi(x_i) >= 1/2; the
//                       top one always): the subspace NS is asked to orthogonalize. Directions
//                       with tiny or zero singular values (a rank-deficient input) stay outside.
//   orth_error          || U_K^T X X^T U_K - I ||_2 (its exact-arithmetic value: max |phi^2 - 1|
//                       over K, the schedule's own distance from orthogonality)
//   polar_distance      || X - U_K V_K^T ||_F / sqrt(|K|): distance to the float64 polar factor on
//                       K (exact-arithmetic value alongside)
//   blow-up             X non-finite, or ||X||_F > sqrt(p) * x*, x* the repelling fixed point of
//                       the last step's singular-value map |p| (nsv/schedule_theory.hpp; keller
//                       1.264): delta = x* - 1. In exact
//                       arithmetic every singular value of X stays below the band's top (keller
//                       1.13 < x*), so ||X||_F <= sqrt(p) * 1.13; a norm above sqrt(p) x* needs a
//                       singular value above x*, where each further step only grows it: a
//                       divergence, never the schedule's own overshoot nor rounding (the band's
//                       rounding widening is orders of magnitude below x* - 1.13).
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "nsv/config_schema.hpp"
#include "nsv/dtype.hpp"
#include "nsv/kernels.hpp"

namespace nsv::engine {

struct GramStabilitySpec {
  std::vector<std::int64_t> short_sides{2, 8, 32};
  std::vector<int> aspects{1, 2, 4, 8};
  std::vector<std::string> spectra{"gaussian",   "lowrank:1",         "lowrank:2",         "lowrank:4",
                                   "lowrank:8",  "lowrank:16",        "powerlaw:1",        "powerlaw:2",
                                   "ill_conditioned:3", "ill_conditioned:6", "ill_conditioned:9", "ill_conditioned:12"};
  std::vector<DType> dtypes{DType::fp16, DType::bf16, DType::fp32};
  int max_steps = 10;
  // Restart lists of the gram loop: none, DeepSpeed's {2}, single restarts elsewhere, several,
  // and one before every step (the standard loop's cost and more). The standard kernel runs too,
  // as the control.
  std::vector<std::vector<int>> restarts{{}, {1}, {2}, {3}, {4}, {2, 4}, {2, 5}, {3, 6}, {3, 6, 9}, {2, 4, 6, 8}, {1, 2, 3, 4, 5, 6, 7, 8, 9}};
  int seeds = 6;
  std::string coeffs = ns_config_names().coeffs;
  Products products = Products::full;  // PyTorch's products, as DeepSpeed computes them
  int threads = 0;
  bool progress = true;

  nlohmann::json to_json() const;
};

struct GramStabilityRow {
  std::int64_t rows = 0, cols = 0;
  std::string spectrum;
  int seed = 0;
  Kernel kernel = Kernel::gram;
  DType dtype = DType::fp16;
  int steps = 0;
  std::vector<int> restart_at;  // gram only
  int kept = 0;                 // |K|
  double norm = 0, norm_bound = 0;
  bool finite = true, blowup = false;
  double orth_error = 0, orth_error_exact = 0, polar_distance = 0, polar_distance_exact = 0;
  std::uint64_t flops = 0;  // ns_flops of the configuration on this shape
};

std::vector<GramStabilityRow> run_gram_stability(const GramStabilitySpec&);
// gram_stability.csv: one line per input class (shape, spectrum) and configuration, over the
// seeds: how many blew up (and were non-finite), the largest ||X||_F over the threshold, the
// medians of the accuracy figures over the seeds that did not blow up (measured and exact), FLOPs.
std::vector<std::string> gram_stability_header();
std::vector<std::vector<std::string>> gram_stability_table(const std::vector<GramStabilityRow>&);

// report.json's "gram_stability": the grid, the first failing configuration of DeepSpeed's
// defaults per dtype, first failing steps per restart list, the restart lists proposed (no
// blow-up in DeepSpeed's dtypes, fp16 and fp32; in every dtype; fewest FLOPs) with their cost, and the Dao-AILab stress-test comparison when
// `stress` holds its rows (gram_stress.hpp).
nlohmann::json gram_stability_stats(const GramStabilitySpec&, const std::vector<GramStabilityRow>&, const nlohmann::json& stress);

}  // namespace nsv::engine
