#pragma once
// Reduction-order noise and how Newton-Schulz amplifies it (SPEC §4 S5, S7), over NS step counts.
//
// For each input G (a spectrum, a seed) the gradient is formed as the all-reduce of tp partial
// gradients P_r (fp32 values; sum = G up to rounding), once in rank order and once in reverse
// order: the two sums differ by fp32 rounding only (grad_rel = ||G_rev - G_rank|| / ||G_rank||, the
// seed's 7e-7). Then, for k = 1..max_steps NS steps:
//   whole_amp        ||NS(G_rev) - NS(G_rank)|| / ||NS(G_rank)||  / grad_rel
//   <s>_order_amp    the all-reduce strategy s on the shards of G_rank, all-reducing its Grams in
//                    rank vs reverse order: rel. difference of the two results / grad_rel
//   <s>_vs_whole     rel. difference of s (rank order) from NS(G_rank) on the whole matrix / grad_rel
//                    (gram_allreduce runs the standard loop: compared with the standard kernel;
//                    gram_restart_allreduce runs the gram loop: compared with the gram kernel)
//   kernel_err       ||NS_fp32(G) - NS_fp64(G)|| / ||NS_fp64(G)|| / grad_rel: the kernel's own
//                    rounding error on the same scale, the yardstick of S5.
#include <cstdint>
#include <string>
#include <vector>

#include "nsv/config_schema.hpp"
#include "nsv/matrix.hpp"

namespace nsv::engine {

struct AmplificationSpec {
  std::int64_t rows = 512, cols = 1024;
  std::vector<std::string> spectra{"gaussian", "lowrank:16"};
  std::vector<int> axes{0, 1};
  int seeds = 3, tp = 4, max_steps = 5;
  std::string coeffs = ns_config_names().coeffs;  // the schedule of every NS run (a built-in name or a file)
  int threads = 0;
  bool progress = true;
};

struct AmplificationRow {
  std::string spectrum;
  int seed = 0, axis = 0, steps = 0;
  double grad_rel = 0;
  double whole_amp = 0;                // standard kernel (gram gives the same within noise)
  double ar_order_amp = 0, ar_vs_whole = 0;        // gram_allreduce
  double rs_order_amp = 0, rs_vs_whole = 0;        // gram_restart_allreduce
  double kernel_err_standard = 0, kernel_err_gram = 0;  // fp32 vs fp64, divided by grad_rel
};

// One input's two gradients: G (spectrum `spectrum` of the spec's list, `seed`) split into tp
// fp32 partial gradients (G / tp plus noise of 0.5 rms each, the last the rest), all-reduced in
// rank order and in reverse order.
struct AmplificationInputs {
  MatD g;
  std::vector<MatF> parts;
  MatD rank_order, reverse_order;
};
AmplificationInputs amplification_inputs(const AmplificationSpec&, std::size_t spectrum, int seed);

// Rows in the order spectrum, seed, axis, steps. tp >= 3: at tp = 2 the two orders add the same
// two terms (a + b == b + a), so the gradients would not differ and every ratio would be 0 / 0.
std::vector<AmplificationRow> run_amplification(const AmplificationSpec&);
std::vector<std::string> amplification_header();
std::vector<std::string> amplification_fields(const AmplificationSpec&, const AmplificationRow&);

}  // namespace nsv::engine
