#pragma once
// Dao-AILab's Gram Newton-Schulz stability stress test, reproduced (gram-newton-schulz,
// tests/stress_test.py at f08f25e; the issue calls it stability/stress_test.py): its 55
// synthetic matrices (n = 768, aspect ratio 4: 3072 x 768, U diag(s) V^T with U, V random
// orthonormal; ten designed spectra five times each, and five Gamma(3, rate 0.5) spectra),
// Polar Express coefficients with the 1.01 safety factor (nsverify's `polar_express`), 5 steps,
// fp16 with fp32 accumulation, restarts [2] (and, beside the script, [3, 6]: the restart list §6b
// proposes); the Gram kernel ("ours") against the standard one
// ("reference"), with its five metrics (polar_accuracy_metrics):
//   orth_error       ||P P^T - I_m||_F / sqrt(m) (I of the long side, as the script writes it: for
//                    a 3072 x 768 P its floor is sqrt(1 - 768/3072) = 0.866)
//   residual_error   ||P H - A||_F / ||A||_F,  H = sym(P^T A)
//   psd_error        ||negative eigenvalues of H|| / ||positive ones||
//   dual_obj         (||A||_* - <A, P>) / ||A||_*
//   bound_violation  max(||P||_2 - 1, 0)
// all inf for a non-finite P, as the script sets them. Metrics are computed in float64 (the
// script: in A's dtype, float32 for all but one spectrum).
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "nsv/matrix.hpp"

namespace nsv::engine {

struct GramStressSpec {
  std::int64_t n = 768;
  int aspect = 4, steps = 5, repeats = 5, gamma_samples = 5;
  // Each list is one run of the Gram kernel over all matrices: DeepSpeed's (the script's), and the
  // cheapest list of §6b's grid free of fp16 and fp32 blow-ups (the report says if that changes).
  std::vector<std::vector<int>> restarts{{2}, {3, 6}};
  std::string coeffs = "polar_express";
  int threads = 0;
  bool progress = true;
};

struct PolarMetrics {
  double orth_error = 0, residual_error = 0, psd_error = 0, dual_obj = 0, bound_violation = 0;
};

struct GramStressRow {
  std::string spectrum;  // "s1".."s10" (the script's order) or "gamma"
  int sample = 0;
  std::string restart_at;
  PolarMetrics reference, ours;  // standard kernel, Gram kernel
};

// One input of the test: its spectrum (the singular values, in the script's order) and sample.
struct StressMatrix {
  std::string spectrum;
  int sample = 0;
  std::vector<double> sigma;
  bool float64 = false;  // the script builds the last designed spectrum in float64, the rest in float32
};
std::vector<StressMatrix> stress_matrices(const GramStressSpec&);
// The m x n matrix (m = aspect * n, tall as the script builds it) with this spectrum, rounded to
// fp32 unless `float64`.
MatD stress_input(const StressMatrix&, const GramStressSpec&, std::uint64_t seed);

std::vector<GramStressRow> run_gram_stress(const GramStressSpec&);
std::vector<std::string> gram_stress_header();
std::vector<std::string> gram_stress_fields(const GramStressRow&);

// The rows read back from gram_stress.csv (for the report, which does not rerun the test), and
// their summary for report.json: per restart list, per metric, the median and max of each
// method, and the blow-ups. `null` when there is no such file.
nlohmann::json gram_stress_summary(const std::string& csv_path, const GramStressSpec&);

}  // namespace nsv::engine
