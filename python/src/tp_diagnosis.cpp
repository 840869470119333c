#include "tp_diagnosis.hpp"

#include <pybind11/stl.h>

#include <algorithm>
#include <map>

#include "generators/tiers.hpp"
#include "generators/transforms.hpp"
#include "oracle.hpp"
#include "sharding/allreduce_bound.hpp"
#include "nsv/metrics.hpp"
#include "nsv/strategies.hpp"

namespace nsv::python {
namespace {

using props::shard::permuted;  // sharding/allreduce_bound.hpp

constexpr Strategy kAllReduceLoops[] = {Strategy::gram_allreduce, Strategy::gram_restart_allreduce};

double whole_own_error(const TpCase& t, const MatD& g, const NsConfig& cfg) {
  const NsConfig cfg64 = props::oracle_config(cfg);
  const MatD whole64 = props::ns(g, cfg64);
  double s = rel_diff(props::ns(g, cfg), whole64);
  // two permutations, drawn from the case's seed (outside a property: props::sample)
  for (std::uint64_t k = 0; k < 2; ++k) {
    const auto rp = props::sample(props::permutations(g.rows()), t.seed + 2 * k);
    const auto cp = props::sample(props::permutations(g.cols()), t.seed + 2 * k + 1);
    const MatD gp = permuted(g, rp, cp);
    s = std::max(s, rel_diff(props::ns(gp, cfg), permuted(whole64, rp, cp)));
  }
  const Layout one_rank = contiguous_layout(t.axis(), {t.layout.dim, 0});
  for (Strategy loop : kAllReduceLoops)
    s = std::max(s, rel_diff(assemble(run_strategy(loop, props::cpu(), shard_matrix(g, one_rank), cfg).outputs, one_rank), whole64));
  return s;
}

double reduction_noise(const TpCase& t, const MatD& g, NsConfig cfg) {
  cfg.steps = std::min(cfg.steps, 1);
  const MatD whole = props::ns(g, cfg);
  double n1 = 0;
  for (Strategy loop : kAllReduceLoops)
    n1 = std::max(n1, rel_diff(assemble(run_strategy(loop, props::cpu(), shard_matrix(g, t.layout), cfg).outputs, t.layout), whole));
  return n1;
}

}  // namespace

TpBound tp_bound(const TpCase& t, const MatD& g, Semantics s, const NsConfig& cfg) {
  TpBound b;
  if (s == Semantics::whole) {
    b.s = whole_own_error(t, g, cfg);
    b.n1 = reduction_noise(t, g, cfg);
  } else {
    b.s = rel_diff(assemble(candidate_blocks(t, g, s, AspectScale::none, cfg), t.layout),
                   assemble(candidate_blocks(t, g, s, AspectScale::none, props::oracle_config(cfg)), t.layout));
  }
  return b;
}

std::vector<CandidateDistance> distances(const TpCase& t, const MatD& g, const std::vector<MatD>& outputs, const NsConfig& cfg) {
  const MatD yours = assemble(outputs, t.layout);
  std::vector<CandidateDistance> out;
  for (Semantics s : {Semantics::whole, Semantics::per_shard, Semantics::per_head}) {
    if (s == Semantics::per_head && !(t.head_dim > 0 && t.axis() == 0)) continue;
    const double bound = tp_bound(t, g, s, cfg).value();  // the scale is one factor per block: it does not change S
    for (AspectScale a : {AspectScale::none, AspectScale::global, AspectScale::local}) {
      const MatD candidate = assemble(candidate_blocks(t, g, s, a, cfg), t.layout);
      CandidateDistance d{s, a, rel_diff(yours, candidate), bound, compare_bits(yours, candidate, cfg.dtype).identical};
      out.push_back(d);
    }
  }
  return out;
}

pybind11::dict diagnose(const UserTpUpdate& fn, const NsConfig& cfg, int max_tp, std::int64_t max_side, bool heads_on_rows,
                        int count, std::uint64_t seed) {
  namespace py = pybind11;
  struct Tally {
    int matched = 0, identical = 0, cases = 0;
    std::vector<double> distances;
  };
  std::map<std::pair<Semantics, AspectScale>, Tally> tally;
  py::list cases;
  const auto gen = tp_cases(max_tp, 8, max_side, heads_on_rows);
  for (int i = 0; i < count; ++i) {
    // sizes spread over RapidCheck's range, so that small and large cases both occur
    const TpCase t = props::sample(gen, seed + static_cast<std::uint64_t>(i), 1 + (99 * i) / std::max(1, count - 1));
    const MatD g = t.matrix();
    std::vector<CandidateDistance> ds;
    {
      std::vector<MatD> outputs;
      try {
        outputs = fn(split(g, t.layout), [&] { return spec_of(t, cfg); });
      } catch (const rc::detail::CaseResult& r) {  // outside a property a failed case is an error
        throw std::invalid_argument("check_tp's diagnosis, on " + t.describe() + ": " + r.description);
      }
      py::gil_scoped_release free;
      ds = distances(t, g, outputs, cfg);
    }
    py::list row;
    for (const CandidateDistance& d : ds) {
      Tally& k = tally[{d.semantics, d.scale}];
      ++k.cases;
      k.matched += d.matches();
      k.identical += d.bit_identical;
      k.distances.push_back(d.distance);
      row.append(py::dict(py::arg("semantics") = semantics_words(d.semantics, d.scale), py::arg("distance") = d.distance,
                          py::arg("bound") = d.bound, py::arg("bit_identical") = d.bit_identical,
                          py::arg("matches") = d.matches()));
    }
    cases.append(py::dict(py::arg("case") = t.describe(), py::arg("candidates") = row));
  }
  py::list candidates;
  for (auto& [key, k] : tally) {
    std::sort(k.distances.begin(), k.distances.end());
    candidates.append(py::dict(py::arg("semantics") = semantics_words(key.first, key.second), py::arg("cases") = k.cases,
                               py::arg("matched") = k.matched, py::arg("bit_identical") = k.identical,
                               py::arg("median_distance") = k.distances[k.distances.size() / 2],
                               py::arg("max_distance") = k.distances.back()));
  }
  return py::dict(py::arg("candidates") = candidates, py::arg("cases") = cases);
}

}  // namespace nsv::python
