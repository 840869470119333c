#include "nsv/engine/amplification.hpp"


#include <cmath>
#include <cstdio>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>

#include "nsv/backend.hpp"
#include "nsv/layout.hpp"
#include "nsv/metrics.hpp"
#include "nsv/spectra.hpp"
#include "nsv/strategies.hpp"
#include "parallel_jobs.hpp"

namespace nsv::engine {
namespace {

std::string num(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

// tp partial gradients whose exact sum is G (the last absorbs the rest), each rounded to fp32:
// what data-parallel ranks contribute before the gradient all-reduce.
std::vector<MatF> partial_gradients(const MatD& g, int tp, std::uint64_t seed) {
  const double rms = g.norm() / std::sqrt(static_cast<double>(g.size()));
  std::vector<MatF> parts;
  MatD rest = g;
  for (int r = 0; r + 1 < tp; ++r) {
    const MatD noise = gaussian_matrix(g.rows(), g.cols(), seed * 7919 + 17 + static_cast<std::uint64_t>(r));
    const MatF p = (g / tp + 0.5 * rms * noise).cast<float>();
    rest -= p.cast<double>();
    parts.push_back(p);
  }
  parts.push_back(rest.cast<float>());
  return parts;
}

MatD reduce(const std::vector<MatF>& parts, ReductionOrder order) {
  auto comm = make_simulated_communicator(static_cast<int>(parts.size()), order);
  return comm->all_reduce(parts, DType::fp32).cast<double>();
}

}  // namespace

AmplificationInputs amplification_inputs(const AmplificationSpec& spec, std::size_t spectrum, int seed) {
  const MatD g = make_matrix(parse_spectrum(spec.spectra.at(spectrum)), spec.rows, spec.cols, static_cast<std::uint64_t>(seed));
  std::vector<MatF> parts = partial_gradients(g, spec.tp, static_cast<std::uint64_t>(seed));
  const MatD rank_order = reduce(parts, ReductionOrder::rank), reverse_order = reduce(parts, ReductionOrder::reverse);
  return {g, std::move(parts), rank_order, reverse_order};
}

std::vector<std::string> amplification_header() {
  return {"rows", "cols", "tp", "spectrum", "seed", "axis", "ns_steps", "grad_rel_diff", "whole_amp",
          "gram_allreduce_order_amp", "gram_allreduce_vs_whole_amp", "gram_restart_order_amp",
          "gram_restart_vs_whole_amp", "kernel_err_standard_amp", "kernel_err_gram_amp"};
}

std::vector<std::string> amplification_fields(const AmplificationSpec& spec, const AmplificationRow& r) {
  return {std::to_string(spec.rows), std::to_string(spec.cols), std::to_string(spec.tp), r.spectrum, std::to_string(r.seed), std::to_string(r.axis), std::to_string(r.steps), num(r.grad_rel),
          num(r.whole_amp), num(r.ar_order_amp), num(r.ar_vs_whole), num(r.rs_order_amp), num(r.rs_vs_whole),
          num(r.kernel_err_standard), num(r.kernel_err_gram)};
}

std::vector<AmplificationRow> run_amplification(const AmplificationSpec& spec) {
  if (spec.tp < 3)
    throw std::invalid_argument("the amplification study needs tp >= 3 (got " + std::to_string(spec.tp) +
                                "): at tp = 2 the rank and reverse orders add the same two terms, so the gradients do not differ");
  struct Job {
    std::size_t spectrum;
    int seed, axis, steps;
  };
  std::vector<Job> jobs;
  for (std::size_t s = 0; s < spec.spectra.size(); ++s)
    for (int seed = 0; seed < spec.seeds; ++seed)
      for (int axis : spec.axes)
        for (int k = 1; k <= spec.max_steps; ++k) jobs.push_back({s, seed, axis, k});

  // Inputs first (shared by every job of a spectrum and seed): only the two gradients are kept.
  std::vector<MatD> g_rank, g_rev;
  for (std::size_t s = 0; s < spec.spectra.size(); ++s)
    for (int seed = 0; seed < spec.seeds; ++seed) {
      AmplificationInputs in = amplification_inputs(spec, s, seed);
      g_rank.push_back(std::move(in.rank_order));
      g_rev.push_back(std::move(in.reverse_order));
    }

  const auto backend = make_cpu_backend();
  const CoeffSchedule schedule = resolve_schedule(spec.coeffs);
  std::vector<AmplificationRow> rows(jobs.size());
  run_parallel_jobs(jobs.size(), spec.threads, "amplification study", spec.progress, [&](std::size_t j) {
    const Job& job = jobs[j];
    const std::size_t at = job.spectrum * static_cast<std::size_t>(spec.seeds) + static_cast<std::size_t>(job.seed);
    const MatD& ga = g_rank[at];
    const MatD& gb = g_rev[at];
    AmplificationRow r;
    r.spectrum = spec.spectra[job.spectrum];
    r.seed = job.seed;
    r.axis = job.axis;
    r.steps = job.steps;
    r.grad_rel = rel_diff(gb, ga);
    NsConfig std_cfg, gram_cfg;
    std_cfg.kernel = Kernel::standard;
    gram_cfg.kernel = Kernel::gram;
    std_cfg.steps = gram_cfg.steps = job.steps;
    std_cfg.coeffs = gram_cfg.coeffs = schedule;
    const MatD whole_std = newton_schulz(*backend, ga, std_cfg);
    const MatD whole_gram = newton_schulz(*backend, ga, gram_cfg);
    r.whole_amp = rel_diff(newton_schulz(*backend, gb, std_cfg), whole_std) / r.grad_rel;
    NsConfig std64 = std_cfg, gram64 = gram_cfg;
    std64.dtype = gram64.dtype = DType::fp64;
    r.kernel_err_standard = rel_diff(whole_std, newton_schulz(*backend, ga, std64)) / r.grad_rel;
    r.kernel_err_gram = rel_diff(whole_gram, newton_schulz(*backend, ga, gram64)) / r.grad_rel;
    const Layout layout = even_layout(job.axis, job.axis == 0 ? ga.rows() : ga.cols(), spec.tp);
    const ShardedMatrix m = shard_matrix(ga, layout);
    const auto run = [&](Strategy s, ReductionOrder o) {
      return assemble(run_strategy(s, *backend, m, s == Strategy::gram_allreduce ? std_cfg : gram_cfg, {o, DType::fp32}).outputs,
                      layout);
    };
    const MatD ar = run(Strategy::gram_allreduce, ReductionOrder::rank);
    const MatD rs = run(Strategy::gram_restart_allreduce, ReductionOrder::rank);
    r.ar_order_amp = rel_diff(run(Strategy::gram_allreduce, ReductionOrder::reverse), ar) / r.grad_rel;
    r.ar_vs_whole = rel_diff(ar, whole_std) / r.grad_rel;
    r.rs_order_amp = rel_diff(run(Strategy::gram_restart_allreduce, ReductionOrder::reverse), rs) / r.grad_rel;
    r.rs_vs_whole = rel_diff(rs, whole_gram) / r.grad_rel;
    rows[j] = r;
  });
  return rows;
}

}  // namespace nsv::engine
