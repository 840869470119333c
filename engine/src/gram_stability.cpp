#include "nsv/engine/gram_stability.hpp"

#include <Eigen/Eigenvalues>
#include <Eigen/SVD>
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>
#include <stdexcept>

#include "nsv/backend.hpp"
#include "nsv/metrics.hpp"
#include "nsv/schedule_theory.hpp"
#include "nsv/spectra.hpp"
#include "parallel_jobs.hpp"

namespace nsv::engine {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// One input of the grid with what the exact map needs: its float64 SVD.
struct Input {
  std::int64_t rows = 0, cols = 0;
  std::string spectrum;
  int seed = 0;
  MatD g;
  Eigen::MatrixXd u, v;
  Eigen::VectorXd x;  // normalized singular values, sigma / (||G||_F + eps)
};

std::vector<Input> grid_inputs(const GramStabilitySpec& spec) {
  std::vector<Input> inputs;
  for (const std::int64_t p : spec.short_sides)
    for (const int aspect : spec.aspects)
      for (const std::string& name : spec.spectra) {
        const Spectrum sp = parse_spectrum(name);
        if (sp.kind == Spectrum::Kind::lowrank && sp.rank >= p) continue;  // not rank-deficient at this size
        for (int seed = 0; seed < spec.seeds; ++seed) {
          Input in;
          in.rows = p;
          in.cols = p * aspect;
          in.spectrum = sp.text();
          in.seed = seed;
          in.g = make_matrix(sp, in.rows, in.cols, static_cast<std::uint64_t>(seed));
          inputs.push_back(std::move(in));
        }
      }
  return inputs;
}

void factor(Input& in, double eps) {
  Eigen::JacobiSVD<Eigen::MatrixXd> svd(Eigen::MatrixXd(in.g), Eigen::ComputeThinU | Eigen::ComputeThinV);
  in.u = svd.matrixU();
  in.v = svd.matrixV();
  in.x = svd.singularValues() / (std::sqrt(in.g.cwiseAbs2().sum()) + eps);
}

// The scalar map of `steps` steps of the schedule, in float64: what NS does to one singular value
// in exact arithmetic (the restarts do not change the map, only its rounding).
double phi(double x, const CoeffSchedule& coeffs, int steps) {
  for (int s = 0; s < steps; ++s) {
    const Coeffs& k = coeffs.at_step(s);
    const double x2 = x * x;
    x = x * (k.a + k.b * x2 + k.c * x2 * x2);
  }
  return x;
}

GramStabilityRow measure(const Input& in, const NsConfig& cfg, const MatD& out) {
  GramStabilityRow r;
  r.rows = in.rows;
  r.cols = in.cols;
  r.spectrum = in.spectrum;
  r.seed = in.seed;
  r.kernel = cfg.kernel;
  r.dtype = cfg.dtype;
  r.steps = cfg.steps;
  if (cfg.kernel == Kernel::gram) r.restart_at = cfg.restart_at;
  r.flops = ns_flops(cfg, in.rows, in.cols);
  r.finite = all_finite(out);
  r.norm = r.finite ? std::sqrt(out.cwiseAbs2().sum()) : kInf;
  r.norm_bound = std::sqrt(static_cast<double>(std::min(in.rows, in.cols))) * repelling_fixed_point(cfg.coeffs.at_step(cfg.steps - 1));
  r.blowup = !r.finite || r.norm > r.norm_bound;

  std::vector<Eigen::Index> kept;
  double off = 0, worst = 0, dist = 0;
  for (Eigen::Index i = 0; i < in.x.size(); ++i) {
    const double y = phi(in.x(i), cfg.coeffs, cfg.steps);
    if (i == 0 || y >= 0.5) {
      kept.push_back(i);
      worst = std::max(worst, std::abs(y * y - 1));
      dist += (y - 1) * (y - 1);
    } else {
      off += y * y;
    }
  }
  r.kept = static_cast<int>(kept.size());
  r.orth_error_exact = worst;
  r.polar_distance_exact = std::sqrt((dist + off) / static_cast<double>(kept.size()));
  if (!r.finite) {
    r.orth_error = r.polar_distance = kInf;
    return r;
  }
  Eigen::MatrixXd uk(in.u.rows(), r.kept), vk(in.v.rows(), r.kept);
  for (std::size_t j = 0; j < kept.size(); ++j) {
    uk.col(static_cast<Eigen::Index>(j)) = in.u.col(kept[j]);
    vk.col(static_cast<Eigen::Index>(j)) = in.v.col(kept[j]);
  }
  const Eigen::MatrixXd m = uk.transpose() * out;
  const Eigen::MatrixXd e = m * m.transpose() - Eigen::MatrixXd::Identity(r.kept, r.kept);
  r.orth_error = Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(e, Eigen::EigenvaluesOnly).eigenvalues().cwiseAbs().maxCoeff();
  r.polar_distance = (out - uk * vk.transpose()).norm() / std::sqrt(static_cast<double>(r.kept));
  return r;
}

// Every configuration one input runs: per dtype and step count, the gram kernel with each
// restart list, then the standard kernel.
std::vector<NsConfig> configurations(const GramStabilitySpec& spec) {
  std::vector<NsConfig> out;
  NsConfig base;
  base.coeffs = resolve_schedule(spec.coeffs);
  base.products = spec.products;
  for (const DType d : spec.dtypes)
    for (int steps = 1; steps <= spec.max_steps; ++steps) {
      base.dtype = d;
      base.steps = steps;
      for (const auto& restarts : spec.restarts) {
        NsConfig c = base;
        c.kernel = Kernel::gram;
        c.restart_at = restarts;
        c.validate();
        out.push_back(c);
      }
      NsConfig c = base;
      c.kernel = Kernel::standard;
      out.push_back(c);
    }
  return out;
}

std::string text(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (std::isnan(v)) return "nan";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

}  // namespace

nlohmann::json GramStabilitySpec::to_json() const {
  std::vector<std::string> dtype_names, restart_names;
  for (const DType d : dtypes) dtype_names.emplace_back(dtype_name(d));
  for (const auto& r : restarts) restart_names.push_back(restarts_text(r));
  return {{"short_sides", short_sides}, {"aspects", aspects},     {"spectra", spectra},
          {"dtypes", dtype_names},      {"max_steps", max_steps}, {"restarts", restart_names},
          {"seeds", seeds},             {"coeffs", coeffs},       {"products", std::string(products_name(products))}};
}

std::vector<GramStabilityRow> run_gram_stability(const GramStabilitySpec& spec) {
  std::vector<Input> inputs = grid_inputs(spec);
  const std::vector<NsConfig> configs = configurations(spec);
  const auto backend = make_cpu_backend();
  std::vector<std::vector<GramStabilityRow>> per_input(inputs.size());
  run_parallel_jobs(inputs.size(), spec.threads, "gram stability study", spec.progress, [&](std::size_t j) {
    Input& in = inputs[j];
    factor(in, configs.front().eps);
    for (const NsConfig& cfg : configs) per_input[j].push_back(measure(in, cfg, newton_schulz(*backend, in.g, cfg)));
  });
  std::vector<GramStabilityRow> rows;
  for (auto& part : per_input) rows.insert(rows.end(), part.begin(), part.end());
  return rows;
}

std::vector<std::string> gram_stability_header() {
  return {"rows",       "cols",          "spectrum",          "kernel",           "dtype",
          "steps",      "restart_at",    "seeds",             "blowups",          "non_finite",
          "largest_norm_over_threshold", "orth_error_median", "orth_error_exact_median", "polar_distance_median",
          "polar_distance_exact_median", "flops"};
}

std::vector<std::vector<std::string>> gram_stability_table(const std::vector<GramStabilityRow>& rows) {
  // rows come per input, seeds innermost in grid_inputs: gather a class's seeds by its key
  using Key = std::tuple<std::int64_t, std::int64_t, std::string, Kernel, DType, int, std::vector<int>>;
  std::vector<Key> order;
  std::map<Key, std::vector<const GramStabilityRow*>> groups;
  for (const auto& r : rows) {
    const Key k{r.rows, r.cols, r.spectrum, r.kernel, r.dtype, r.steps, r.restart_at};
    auto& g = groups[k];
    if (g.empty()) order.push_back(k);
    g.push_back(&r);
  }
  const auto median = [](std::vector<double> v) {
    if (v.empty()) return std::string("-");
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
    return text(v[v.size() / 2]);
  };
  std::vector<std::vector<std::string>> out;
  for (const Key& k : order) {
    const auto& g = groups[k];
    int blowups = 0, non_finite = 0;
    double largest = 0;
    std::vector<double> orth, orth_exact, polar, polar_exact;
    for (const GramStabilityRow* r : g) {
      blowups += r->blowup;
      non_finite += !r->finite;
      largest = std::max(largest, r->norm / r->norm_bound);
      if (r->blowup) continue;
      orth.push_back(r->orth_error);
      orth_exact.push_back(r->orth_error_exact);
      polar.push_back(r->polar_distance);
      polar_exact.push_back(r->polar_distance_exact);
    }
    const GramStabilityRow& r = *g.front();
    out.push_back({std::to_string(r.rows), std::to_string(r.cols), r.spectrum, std::string(kernel_name(r.kernel)),
                   std::string(dtype_name(r.dtype)), std::to_string(r.steps), r.kernel == Kernel::gram ? restarts_text(r.restart_at) : "-",
                   std::to_string(g.size()), std::to_string(blowups), std::to_string(non_finite), text(largest), median(orth),
                   median(orth_exact), median(polar), median(polar_exact), std::to_string(r.flops)});
  }
  return out;
}

}  // namespace nsv::engine
