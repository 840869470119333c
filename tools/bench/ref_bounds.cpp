// How far REF's measured bound is from the a-priori one (issue 31: could REF skip the reference's
// own runs?). REF bounds an implementation's distance to the float64 map by 2 S, S the reference's
// own error (the largest over G and two row/column permutations of G, as
// checks/kernel_catalogue.cpp: agreement_with_reference measures it); the only bound that needs no
// run of the reference is the a-priori B(G) of checks/tolerances.hpp. Per case, as JSON lines: S,
// B(G) and B(G) / S, for fp32 (the dtype the checker's benchmark runs), both kernels, seeded
// matrices of three spectra. A REF that used 2 B(G) would pass every implementation whose distance
// to the map is below 2 B(G), that is below 2 (B(G) / S) S; bf16_over_2B is one such wrong
// implementation: the same kernel computed in bf16 (fp32 accumulation), claimed as fp32, its
// distance to the map in units of 2 B(G) (below 1: it would pass).
//
//   nsv_ref_bounds [SEEDS]     (default 3; shapes 64x128, 256x512, 512x1024, 1024x4096)
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "generators/tiers.hpp"
#include "generators/transforms.hpp"
#include "nsv/metrics.hpp"
#include "nsv/spectra.hpp"
#include "reference_runs.hpp"
#include "tolerances.hpp"

namespace {

// S as REF measures it: the reference's own error on g and on two permutations of g, drawn from
// seed by the properties' own generator (checks::sample, as S5's PermutedDraws::sample draws them).
double own_error(const nsv::MatD& g, const nsv::MatD& oracle, const nsv::NsConfig& cfg, std::uint64_t seed) {
  double s = nsv::rel_diff(nsv::checks::ns(g, cfg), oracle);
  for (std::uint64_t k = 0; k < 2; ++k) {
    const auto rows = nsv::checks::sample(nsv::checks::permutations(g.rows()), seed + 2 * k);
    const auto cols = nsv::checks::sample(nsv::checks::permutations(g.cols()), seed + 2 * k + 1);
    s = std::max(s, nsv::rel_diff(nsv::checks::ns(nsv::checks::permuted(g, rows, cols), cfg), nsv::checks::permuted(oracle, rows, cols)));
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  const int seeds = argc > 1 ? std::max(1, std::stoi(argv[1])) : 3;
  const std::pair<Eigen::Index, Eigen::Index> shapes[] = {{64, 128}, {256, 512}, {512, 1024}, {1024, 4096}};
  for (const auto& [rows, cols] : shapes)
    for (const char* spectrum : {"gaussian", "powerlaw:1", "lowrank:16"})
      for (const nsv::Kernel kernel : {nsv::Kernel::standard, nsv::Kernel::gram})
        for (int seed = 0; seed < seeds; ++seed) {
          const nsv::MatD g = nsv::make_matrix(nsv::parse_spectrum(spectrum), rows, cols, static_cast<std::uint64_t>(seed));
          nsv::NsConfig cfg;  // fp32, accumulate fp32, keller x 5: the checker benchmark's configuration
          cfg.kernel = kernel;
          const nsv::MatD oracle = nsv::checks::ns(g, nsv::checks::oracle_config(cfg));
          const double s = own_error(g, oracle, cfg, static_cast<std::uint64_t>(seed)), b = nsv::checks::rounding_bound(g, cfg);
          const double bf16 = nsv::rel_diff(nsv::checks::ns(g, nsv::checks::with_dtype(cfg, nsv::DType::bf16)), oracle);
          std::printf("{\"shape\": \"%ldx%ld\", \"spectrum\": \"%s\", \"kernel\": \"%s\", \"seed\": %d, \"S\": %.4g, \"B\": %.4g, "
                      "\"B_over_S\": %.1f, \"bf16_over_2B\": %.3f}\n",
                      static_cast<long>(rows), static_cast<long>(cols), spectrum, kernel == nsv::Kernel::gram ? "gram" : "standard",
                      seed, s, b, b / s, bf16 / (2 * b));
          std::fflush(stdout);
        }
}
