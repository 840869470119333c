#include "nsv/engine/gram_stress.hpp"

#include <Eigen/Eigenvalues>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <stdexcept>

#include "nsv/engine/csv.hpp"
#include "nsv/backend.hpp"
#include "nsv/coeffs.hpp"
#include "nsv/kernels.hpp"
#include "nsv/metrics.hpp"
#include "nsv/spectra.hpp"
#include "parallel_jobs.hpp"

namespace nsv::engine {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// torch.logspace(from, to, steps=count): 10^linspace(from, to, count).
std::vector<double> logspace(double from, double to, std::int64_t count) {
  std::vector<double> v;
  for (std::int64_t i = 0; i < count; ++i)
    v.push_back(std::pow(10.0, count == 1 ? from : from + (to - from) * static_cast<double>(i) / static_cast<double>(count - 1)));
  return v;
}

std::vector<double> cat(std::vector<double> a, const std::vector<double>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// The script's ten designed spectra, in its order (stress_test.py, `spectra = [...]`).
std::vector<std::vector<double>> designed_spectra(std::int64_t n) {
  std::vector<double> lin;
  for (std::int64_t i = 0; i < n; ++i) lin.push_back(0.5 * static_cast<double>(i) / static_cast<double>(n - 1));
  const std::vector<double> zeros_half(static_cast<std::size_t>(n - n / 2), 0.0), zeros_10(static_cast<std::size_t>(n - 10), 0.0),
      zeros_2(static_cast<std::size_t>(n - 2), 0.0);
  return {lin,
          logspace(0, -3, n),
          logspace(0, -5, n),
          logspace(0, -7, n),
          logspace(0, -9, n),
          cat(logspace(0, -2, n / 2), zeros_half),
          cat(logspace(0, -1, 10), zeros_10),
          cat(logspace(0, -0.5, 2), zeros_2),
          cat(logspace(0, -0.5, 2), logspace(-4, -7, n - 2)),
          cat(logspace(0, -10, n - n / 11), logspace(-4, -10, n / 11))};
}

// Gamma(concentration 3, rate 0.5) as the sum of three Exp(rate 0.5): -2 (ln U1 + ln U2 + ln U3),
// from a 64-bit Mersenne Twister (std::gamma_distribution's output differs between libraries).
std::vector<double> gamma_spectrum(std::int64_t n, std::uint64_t seed) {
  std::mt19937_64 engine(seed);
  const auto uniform = [&] { return (static_cast<double>(engine() >> 11) + 1.0) * 0x1.0p-53; };
  std::vector<double> v;
  for (std::int64_t i = 0; i < n; ++i) v.push_back(-2.0 * (std::log(uniform()) + std::log(uniform()) + std::log(uniform())));
  return v;
}

}  // namespace

std::vector<StressMatrix> stress_matrices(const GramStressSpec& spec) {
  std::vector<StressMatrix> out;
  const auto designed = designed_spectra(spec.n);
  for (int r = 0; r < spec.repeats; ++r)
    for (std::size_t s = 0; s < designed.size(); ++s)
      out.push_back({"s" + std::to_string(s + 1), r, designed[s], s + 1 == designed.size()});
  for (int g = 0; g < spec.gamma_samples; ++g) out.push_back({"gamma", g, gamma_spectrum(spec.n, 1000 + static_cast<std::uint64_t>(g)), false});
  return out;
}

MatD stress_input(const StressMatrix& s, const GramStressSpec& spec, std::uint64_t seed) {
  const Eigen::VectorXd sigma = Eigen::Map<const Eigen::VectorXd>(s.sigma.data(), static_cast<Eigen::Index>(s.sigma.size()));
  MatD a = matrix_with_singular_values(sigma, spec.aspect * spec.n, spec.n, seed);
  if (!s.float64) a = a.unaryExpr([](double v) { return static_cast<double>(static_cast<float>(v)); });
  return a;
}

namespace {

// polar_accuracy_metrics of the script, for a tall A and its estimated polar factor P.
PolarMetrics polar_metrics(const MatD& a, const MatD& p, double nuclear) {
  if (!all_finite(p)) return {kInf, kInf, kInf, kInf, kInf};
  PolarMetrics m;
  const double rows = static_cast<double>(p.rows());
  const Eigen::MatrixXd ptp = p.transpose() * p;
  // ||P P^T - I_m||_F^2 = ||P^T P||_F^2 - 2 ||P||_F^2 + m, without the m x m product
  m.orth_error = std::sqrt(std::max(0.0, ptp.squaredNorm() - 2 * ptp.trace() + rows)) / std::sqrt(rows);
  Eigen::MatrixXd h = p.transpose() * a;
  h = (h + h.transpose()) / 2;
  m.residual_error = (p * h - a).norm() / a.norm();
  const Eigen::VectorXd eig = Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(h, Eigen::EigenvaluesOnly).eigenvalues();
  double negative = 0, positive = 0;
  for (const double e : eig) (e < 0 ? negative : positive) += e * e;
  m.psd_error = std::sqrt(negative) / std::sqrt(positive);
  m.dual_obj = (nuclear - a.cwiseProduct(p).sum()) / nuclear;
  const double top = Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(ptp, Eigen::EigenvaluesOnly).eigenvalues().maxCoeff();
  m.bound_violation = std::max(std::sqrt(std::max(top, 0.0)) - 1, 0.0);
  return m;
}

std::string text(double v) {
  if (std::isinf(v)) return "inf";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

double parse(const std::string& s) { return s == "inf" ? kInf : std::stod(s); }

const char* const kMetricNames[] = {"orth_error", "residual_error", "psd_error", "dual_obj", "bound_violation"};

std::vector<double> values(const PolarMetrics& m) { return {m.orth_error, m.residual_error, m.psd_error, m.dual_obj, m.bound_violation}; }

}  // namespace

std::vector<GramStressRow> run_gram_stress(const GramStressSpec& spec) {
  const std::vector<StressMatrix> matrices = stress_matrices(spec);
  const auto backend = make_cpu_backend();
  NsConfig base;
  base.coeffs = resolve_schedule(spec.coeffs);
  base.steps = spec.steps;
  base.dtype = DType::fp16;
  base.products = Products::symmetric;  // the script's symmetric GEMM kernels
  NsConfig reference = base;
  reference.kernel = Kernel::standard;
  std::vector<std::vector<GramStressRow>> per_matrix(matrices.size());
  run_parallel_jobs(matrices.size(), spec.threads, "gram stress test", spec.progress, [&](std::size_t j) {
    const StressMatrix& s = matrices[j];
    const MatD a = stress_input(s, spec, static_cast<std::uint64_t>(j));
    const Eigen::VectorXd ata_eig = Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(a.transpose() * a, Eigen::EigenvaluesOnly).eigenvalues();
    double nuclear = 0;
    for (const double e : ata_eig) nuclear += std::sqrt(std::max(e, 0.0));
    const PolarMetrics ref = polar_metrics(a, newton_schulz(*backend, a, reference), nuclear);
    for (const auto& restarts : spec.restarts) {
      NsConfig ours = base;
      ours.kernel = Kernel::gram;
      ours.restart_at = restarts;
      per_matrix[j].push_back({s.spectrum, s.sample, restarts_text(restarts), ref, polar_metrics(a, newton_schulz(*backend, a, ours), nuclear)});
    }
  });
  std::vector<GramStressRow> rows;
  for (auto& part : per_matrix) rows.insert(rows.end(), part.begin(), part.end());
  return rows;
}

std::vector<std::string> gram_stress_header() {
  std::vector<std::string> h{"spectrum", "sample", "restart_at"};
  for (const char* method : {"reference", "ours"})
    for (const char* metric : kMetricNames) h.push_back(std::string(metric) + "_" + method);
  return h;
}

std::vector<std::string> gram_stress_fields(const GramStressRow& r) {
  std::vector<std::string> f{r.spectrum, std::to_string(r.sample), r.restart_at};
  for (const PolarMetrics* m : {&r.reference, &r.ours})
    for (const double v : values(*m)) f.push_back(text(v));
  return f;
}

nlohmann::json gram_stress_summary(const std::string& csv_path, const GramStressSpec& spec) {
  if (!std::filesystem::exists(csv_path)) return nullptr;
  const std::vector<std::string> lines = read_lines(csv_path, nullptr, FileRole::earlier_output);
  if (lines.empty() || csv_split(lines[0]) != gram_stress_header())
    throw std::runtime_error(csv_path + ": not a gram stress-test table (its header differs from nsv's); rerun nsv report --only gram_stress");
  // restart list -> method -> metric -> values
  std::map<std::string, std::map<std::string, std::vector<std::vector<double>>>> by;
  std::set<std::pair<std::string, std::string>> matrices;  // (spectrum, sample): one row per restart list
  for (std::size_t i = 1; i < lines.size(); ++i) {
    const std::vector<std::string> f = csv_split(lines[i]);
    if (f.size() != gram_stress_header().size()) throw std::runtime_error(csv_path + ": line " + std::to_string(i + 1) + " has the wrong field count");
    matrices.emplace(f[0], f[1]);
    for (int method = 0; method < 2; ++method) {
      auto& cols = by[f[2]][method == 0 ? "reference" : "ours"];
      cols.resize(5);
      for (std::size_t k = 0; k < 5; ++k) cols[k].push_back(parse(f[3 + 5 * static_cast<std::size_t>(method) + k]));
    }
  }
  nlohmann::json out = {{"n", spec.n}, {"aspect", spec.aspect}, {"steps", spec.steps}, {"coeffs", spec.coeffs},
                        {"matrices", matrices.size()}, {"runs", nlohmann::json::array()}};
  for (auto& [restarts, methods] : by) {
    nlohmann::json run = {{"restart_at", restarts}};
    for (auto& [method, cols] : methods) {
      int blowups = 0;
      for (const double v : cols[0]) blowups += !std::isfinite(v);
      nlohmann::json metrics = nlohmann::json::object();
      for (std::size_t k = 0; k < 5; ++k) {
        std::vector<double> v = cols[k];
        std::sort(v.begin(), v.end());
        const double median = v[v.size() / 2], max = v.back();
        metrics[kMetricNames[k]] = {{"median", std::isfinite(median) ? nlohmann::json(median) : nlohmann::json("inf")},
                                    {"max", std::isfinite(max) ? nlohmann::json(max) : nlohmann::json("inf")}};
      }
      run[method] = {{"blowups", blowups}, {"matrices", cols[0].size()}, {"metrics", metrics}};
    }
    out["runs"].push_back(run);
  }
  return out;
}

}  // namespace nsv::engine
