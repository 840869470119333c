#include "nsv/audit.hpp"

#include <algorithm>
#include <chrono>
#include <memory>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <numeric>
#include <sstream>
#include <stdexcept>

#include "nsv/metrics.hpp"
#include "nsv/muon.hpp"
#include "nsv/spectra.hpp"

namespace nsv {

std::string_view exactness_name(Exactness e) {
  switch (e) {
    case Exactness::bit_identical: return "bit_identical";
    case Exactness::exact_arithmetic: return "exact_in_exact_arithmetic";
    case Exactness::inexact: return "inexact";
    case Exactness::not_applicable: return "not_applicable";
  }
  return "?";
}

void AuditOptions::validate() const {
  if (tp < 1 || tp > 1024) throw std::invalid_argument("--tp must be between 1 and 1024, got " + std::to_string(tp));
  if (grain < 1) throw std::invalid_argument("--grain must be >= 1, got " + std::to_string(grain));
  if (measure_max_elements < 1) throw std::invalid_argument("--measure-max-elements must be >= 1");
  ns.validate();
  cost.validate();
}

const StrategyAudit& ParamAudit::strategy(Strategy s) const {
  for (const auto& a : strategies)
    if (a.strategy == s) return a;
  throw std::logic_error("audit: strategy missing");
}

namespace {

using nlohmann::json;

int nonempty_ranks(const Layout& layout) {
  int n = 0;
  for (int r = 0; r < layout.tp(); ++r) n += layout.width(r) > 0 ? 1 : 0;
  return n;
}

StrategyAudit audit_strategy(Strategy s, const MuonParam& p, const Layout& layout, const AuditOptions& o) {
  StrategyAudit a;
  a.strategy = s;
  a.target = natural_target(s);
  const std::int64_t head_dim = p.heads_on_rows() ? p.head_dim : 0;
  try {
    a.plan = plan_strategy(s, layout, p.rows, p.cols, head_dim, o.ns, o.comm);
  } catch (const std::invalid_argument& e) {
    a.applicable = false;
    a.exactness = Exactness::not_applicable;
    a.why_not = s == Strategy::per_head && p.heads == 0
                    ? p.name + " has no head structure: per-head NS says nothing about it (SPEC §1.3)"
                    : e.what();
    return a;
  }
  a.ranks = rank_costs(a.plan, o.cost);
  for (const auto& r : a.ranks) a.time_s = std::max(a.time_s, r.time_s());
  a.step_share_s = a.time_s;
  if (s == Strategy::owner) {
    double sum = 0;
    for (int owner = 0; owner < layout.tp(); ++owner) {
      a.by_owner.push_back(rank_costs(plan_owner(layout, p.rows, p.cols, o.ns, o.comm, owner), o.cost));
      for (const auto& r : a.by_owner.back()) sum += r.time_s();
    }
    a.step_share_s = sum / (double(layout.tp()) * double(layout.tp()));
  }
  switch (s) {
    case Strategy::shard:  // NS of the shard; equal to the whole only when one rank holds it all
      a.exactness = nonempty_ranks(layout) <= 1 ? Exactness::bit_identical : Exactness::inexact;
      break;
    case Strategy::gather:
    case Strategy::owner:
    case Strategy::per_head: a.exactness = Exactness::bit_identical; break;
    case Strategy::gram_allreduce:
    case Strategy::gram_restart_allreduce:  // one rank runs the plain kernel
      a.exactness = layout.tp() == 1 ? Exactness::bit_identical : Exactness::exact_arithmetic;
      break;
  }
  return a;
}

// --- whole-model totals -------------------------------------------------------------------------
//
// The step-time model: each rank's per-matrix costs are summed over every Muon matrix of every
// layer, and the step ends when the slowest rank is done. For `owner` the owning rank rotates
// over the matrices (matrix k of the step owned by rank k mod tp), as layer-sharded
// implementations (Dion, Megatron) spread the owners; every other strategy is the same on every
// layer. Waiting at collectives beyond this sum is not modelled, and the all-to-alls are counted
// per matrix (a batched implementation sends fewer, larger messages: fewer latencies, same bytes).
PlanTotals total_plan(const std::vector<ParamAudit>& params, const std::vector<Strategy>& choice, std::int64_t layers, int tp) {
  PlanTotals t;
  t.choice = choice;
  const auto n = static_cast<std::size_t>(tp);
  std::vector<double> compute(n, 0), latency(n, 0), bandwidth(n, 0);
  std::vector<std::uint64_t> sent(n, 0), messages(n, 0), flops(n, 0);
  auto add = [&](std::size_t r, const RankCost& c, std::uint64_t times) {
    compute[r] += c.compute_s * static_cast<double>(times);
    latency[r] += c.latency_s * static_cast<double>(times);
    bandwidth[r] += c.bandwidth_s * static_cast<double>(times);
    sent[r] += c.bytes_sent * times;
    messages[r] += c.messages * times;
    flops[r] += c.flops * times;
  };
  std::uint64_t owner_k = 0;
  for (std::size_t i = 0; i < params.size(); ++i) {
    const StrategyAudit& a = params[i].strategy(choice[i]);
    for (const auto& c : a.ranks) t.peak_extra_memory = std::max(t.peak_extra_memory, c.extra_memory);
    if (choice[i] != Strategy::owner)
      for (std::size_t r = 0; r < n; ++r) add(r, a.ranks[r], static_cast<std::uint64_t>(layers));
  }
  // Owners rotate over the owner-strategy matrices in layer order.
  for (std::int64_t l = 0; l < layers; ++l)
    for (std::size_t i = 0; i < params.size(); ++i) {
      if (choice[i] != Strategy::owner) continue;
      const StrategyAudit& a = params[i].strategy(choice[i]);
      const auto& costs = a.by_owner[owner_k++ % n];
      for (std::size_t r = 0; r < n; ++r) add(r, costs[r], 1);
    }
  std::size_t slow = 0;
  for (std::size_t r = 0; r < n; ++r) {
    if (compute[r] + latency[r] + bandwidth[r] > compute[slow] + latency[slow] + bandwidth[slow]) slow = r;
    t.bytes_sent_total += sent[r];
    t.bytes_sent_max_rank = std::max(t.bytes_sent_max_rank, sent[r]);
    t.messages_max_rank = std::max(t.messages_max_rank, messages[r]);
    t.flops_max_rank = std::max(t.flops_max_rank, flops[r]);
  }
  t.compute_s = compute[slow];
  t.latency_s = latency[slow];
  t.bandwidth_s = bandwidth[slow];
  t.step_time_s = compute[slow] + latency[slow] + bandwidth[slow];
  return t;
}

std::optional<Strategy> cheapest_of(const ParamAudit& p, std::initializer_list<Strategy> candidates) {
  std::optional<Strategy> best;
  double best_t = 0;
  for (Strategy s : candidates) {
    const auto& a = p.strategy(s);
    if (!a.applicable) continue;
    if (a.exactness != Exactness::bit_identical && a.exactness != Exactness::exact_arithmetic) continue;
    if (!best || a.step_share_s < best_t) best = s, best_t = a.step_share_s;
  }
  return best;
}

std::string fmt_count(std::int64_t v) {
  std::string s = std::to_string(v), out;
  int k = 0;
  for (auto it = s.rbegin(); it != s.rend(); ++it) {
    if (k && k % 3 == 0 && *it != '-') out.insert(out.begin(), ',');
    out.insert(out.begin(), *it);
    ++k;
  }
  return out;
}

std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

std::string fmt_bytes(double b) {
  if (b < 1024) return fmt("%.0f B", b);
  if (b < 1024.0 * 1024) return fmt("%.1f KiB", b / 1024);
  if (b < 1024.0 * 1024 * 1024) return fmt("%.1f MiB", b / (1024.0 * 1024));
  return fmt("%.2f GiB", b / (1024.0 * 1024 * 1024));
}

std::string fmt_time(double s) {
  if (s == 0) return "0";
  if (s < 1e-3) return fmt("%.1f us", s * 1e6);
  if (s < 1) return fmt("%.3f ms", s * 1e3);
  return fmt("%.3f s", s);
}

std::string fmt_pct(double f) { return fmt("%.1f%%", f * 100); }

std::string sizes_text(const std::vector<std::int64_t>& v) {
  // Runs of equal sizes compressed: [512 x4, 0 x4]
  std::string s = "[";
  for (std::size_t i = 0; i < v.size();) {
    std::size_t j = i;
    while (j < v.size() && v[j] == v[i]) ++j;
    if (i) s += ", ";
    s += std::to_string(v[i]);
    if (j - i > 1) s += " x" + std::to_string(j - i);
    i = j;
  }
  return s + "]";
}

std::string ranks_text(const std::vector<int>& v) {
  if (v.empty()) return "";
  std::string s;
  for (std::size_t i = 0; i < v.size();) {
    std::size_t j = i;
    while (j + 1 < v.size() && v[j + 1] == v[j] + 1) ++j;
    if (!s.empty()) s += ",";
    s += std::to_string(v[i]);
    if (j > i) {
      s += '-';
      s += std::to_string(v[j]);
    }
    i = j + 1;
  }
  return s;
}

std::string short_name(Strategy s) {
  switch (s) {
    case Strategy::gram_allreduce: return "gram_ar";
    case Strategy::gram_restart_allreduce: return "gram_restart_ar";
    default: return std::string(strategy_name(s));
  }
}

}  // namespace

ShardDivergence measure_shard_divergence(const MuonParam& p, int tp, std::int64_t grain, const NsConfig& cfg,
                                         std::int64_t max_elements, std::uint64_t seed, const Backend& backend,
                                         bool match_spectrum) {
  const auto t0 = std::chrono::steady_clock::now();
  ShardDivergence d;
  MuonParam q = p;
  std::int64_t g = grain;
  const std::int64_t el = p.rows * p.cols;
  if (el > max_elements) {
    d.proxy = true;
    // The smallest scale f that brings the matrix under the budget while dividing every length
    // that fixes the shape: rows, cols and the head size (so the aspect ratio, the head count,
    // the KV groups and hence the shard proportions stay exactly those of the real matrix).
    std::int64_t f = std::max<std::int64_t>(2, static_cast<std::int64_t>(std::ceil(std::sqrt(double(el) / double(max_elements)))));
    while (el / (f * f) > max_elements) ++f;
    std::int64_t common = std::gcd(p.rows, p.cols);
    if (p.head_dim > 0) common = std::gcd(common, p.head_dim);
    std::int64_t exact = 0;
    for (std::int64_t k = f; k <= common; ++k)
      if (common % k == 0) {
        exact = k;
        break;
      }
    if (exact > 0) {
      d.scale = exact;
      q.rows = p.rows / exact;
      q.cols = p.cols / exact;
      q.head_dim = p.head_dim / exact;
    } else {  // no common divisor: round each length (the ratio is then approximate)
      d.proxy_exact_ratio = false;
      for (std::int64_t k = f;; ++k) {
        d.scale = k;
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
        if (q.rows * q.cols <= max_elements || (q.head_dim <= 1 && p.heads > 0)) break;
      }
    }
    g = grain > 1 ? std::max<std::int64_t>(1, grain / d.scale) : 1;
  }
  d.rows = q.rows;
  d.cols = q.cols;
  d.head_dim = q.head_dim;
  const Layout layout = autotp_layout(q, tp, g);
  d.shard_sizes = layout.widths();
  const MatD grad = gaussian_matrix(q.rows, q.cols, seed);
  // Spectrum matching. NS acts on the singular values normalized by the Frobenius norm, and a
  // Gaussian (m/f) x (n/f) matrix's normalized singular values are sqrt(f) times those of an
  // m x n one (Marchenko-Pastur: sigma ~ sqrt(m) +- sqrt(n), ||G||_F = sqrt(mn)); so are its
  // shards' against the full-size shards'. Five steps do not fully converge, so a plain proxy
  // would converge further than the real matrix. Dividing the first step's input by
  // s = sqrt(f) -- folded into its coefficients, p(x/s) = (a/s) x + (b/s^3) x^3 + (c/s^5) x^5 --
  // gives the proxy, its whole and its shards alike, the full-size distribution of normalized
  // singular values.
  NsConfig run_cfg = cfg;
  if (d.proxy && match_spectrum) {
    // f^2 = the element ratio, so s = sqrt(f) is its fourth root.
    d.spectrum_scale = std::pow(double(p.rows) * double(p.cols) / (double(q.rows) * double(q.cols)), 0.25);
    const double s = d.spectrum_scale;
    std::vector<Coeffs> triples = cfg.coeffs.triples;
    if (triples.size() == 1) triples.push_back(triples[0]);
    triples[0] = {triples[0].a / s, triples[0].b / (s * s * s), triples[0].c / (s * s * s * s * s)};
    run_cfg.coeffs.triples = std::move(triples);
    run_cfg.coeffs.name = cfg.coeffs.name + " (first step prescaled by 1/" + fmt("%.4g", s) + ")";
  }
  const StrategyRun run = run_strategy(Strategy::shard, backend, shard_matrix(grad, layout, 0), run_cfg);
  const MatD whole = newton_schulz(backend, grad, run_cfg);
  const Comparison c = compare_with_target(run, whole, layout);
  d.rel_diff_mean = c.rel_diff_mean;
  d.rel_diff_max = c.rel_diff_max;
  const auto blocks = split(whole, layout);
  const double global_scale = aspect_scale(q.rows, q.cols);
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
  d.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return d;
}

AuditResult run_audit(const ModelConfig& model, const AuditOptions& o) {
  o.validate();
  AuditResult res;
  res.model = model;
  res.options = o;
  res.options.backend = nullptr;
  res.options.on_measured = nullptr;
  std::unique_ptr<Backend> own_backend;
  const Backend* backend = o.backend;
  if (o.measure && !backend) {
    own_backend = make_cpu_backend();
    backend = own_backend.get();
  }
  const ModelDims& d = model.dims;
  const auto params = llama_layer_params(d);
  std::uint64_t param_index = 0;
  for (const MuonParam& p : params) {
    ParamAudit pa;
    pa.param = p;
    pa.layout = autotp_layout(p, o.tp, o.grain);
    pa.shard_sizes = pa.layout.widths();
    for (int r = 0; r < o.tp; ++r)
      if (pa.shard_sizes[static_cast<std::size_t>(r)] == 0) pa.zero_width_ranks.push_back(r);
    for (Strategy s : kAllStrategies) pa.strategies.push_back(audit_strategy(s, p, pa.layout, o));
    const auto& ph = pa.strategy(Strategy::per_head);
    pa.per_head_applies = ph.applicable;
    if (ph.applicable) {
      pa.per_head_note = "every rank holds whole heads (" + std::to_string(p.heads / p.kv_groups) + " " +
                         (p.name == "q_proj" ? "query" : "KV") + " head(s) of " + std::to_string(p.head_dim) + " rows per KV group)";
      if (!pa.zero_width_ranks.empty()) pa.per_head_note += "; vacuous on ranks " + ranks_text(pa.zero_width_ranks) + " (no heads)";
    } else {
      pa.per_head_note = ph.why_not;
    }
    pa.whole_ns_flops = ns_flops(o.ns, p.rows, p.cols);
    pa.scale_global = aspect_scale(p.rows, p.cols);
    for (int r = 0; r < o.tp; ++r) {
      const auto [sr, sc] = shard_shape(pa.layout, p.rows, p.cols, r);
      pa.scale_local.push_back(sr * sc > 0 ? aspect_scale(sr, sc) : 0.0);
    }
    pa.cheapest_bit_identical = cheapest_of(pa, {Strategy::gather, Strategy::owner});
    pa.cheapest_exact = cheapest_of(pa, {Strategy::gather, Strategy::owner, Strategy::gram_allreduce, Strategy::gram_restart_allreduce});
    if (o.measure) {
      pa.divergence = measure_shard_divergence(p, o.tp, o.grain, o.ns, o.measure_max_elements, o.seed + 1000003 * param_index, *backend);
      if (o.on_measured) o.on_measured();
    }
    ++param_index;
    res.params.push_back(std::move(pa));
  }

  // Totals.
  AuditTotals& t = res.totals;
  t.layers = d.layers;
  t.muon_params_per_layer = model.muon_params_per_layer();
  t.muon_params = model.muon_params();
  t.total_params = model.total_params();
  t.non_muon_params = t.total_params - t.muon_params;
  std::uint64_t flops_all = 0, flops_ph = 0;
  for (const auto& pa : res.params) {
    flops_all += pa.whole_ns_flops;
    if (pa.per_head_applies) {
      flops_ph += pa.whole_ns_flops;
      t.per_head_params += pa.param.elements() * d.layers;
    }
  }
  t.ns_flops_whole_per_step = flops_all * static_cast<std::uint64_t>(d.layers);
  t.per_head_exact_fraction_params = t.muon_params ? double(t.per_head_params) / double(t.muon_params) : 0;
  t.per_head_exact_fraction_flops = flops_all ? double(flops_ph) / double(flops_all) : 0;

  const std::size_t m = res.params.size();
  auto uniform = [&](Strategy s) { return std::vector<Strategy>(m, s); };
  auto add_plan = [&](std::string name, std::string description, std::string semantics, std::string exactness,
                      std::vector<Strategy> choice) {
    PlanTotals p = total_plan(res.params, choice, d.layers, o.tp);
    p.name = std::move(name);
    p.description = std::move(description);
    p.semantics = std::move(semantics);
    p.exactness = std::move(exactness);
    t.plans.push_back(std::move(p));
  };
  const bool single = o.tp == 1;
  add_plan("shard", "NS on each rank's shard (AutoTP today)", "none (depends on tp)", single ? "bit_identical" : "inexact",
           uniform(Strategy::shard));
  add_plan("gather", "all-gather every matrix, NS of the whole on every rank", "whole", "bit_identical", uniform(Strategy::gather));
  add_plan("owner", "all-to-all each matrix to an owner rank (rotating), NS once, all-to-all back", "whole", "bit_identical",
           uniform(Strategy::owner));
  add_plan("gram_allreduce", "X stays sharded; one Gram all-reduce per NS step", "whole",
           single ? "bit_identical" : "exact_in_exact_arithmetic", uniform(Strategy::gram_allreduce));
  add_plan("gram_restart_allreduce", "X stays sharded; gram kernel with two Gram all-reduces", "whole",
           single ? "bit_identical" : "exact_in_exact_arithmetic", uniform(Strategy::gram_restart_allreduce));
  std::vector<Strategy> ph_shard, ph_best, best_bit, best_exact;
  bool any_arith = false;
  for (const auto& pa : res.params) {
    const Strategy bit = pa.cheapest_bit_identical.value_or(Strategy::gather);
    const Strategy ex = pa.cheapest_exact.value_or(bit);
    any_arith = any_arith || (pa.strategy(ex).exactness == Exactness::exact_arithmetic);
    best_bit.push_back(bit);
    best_exact.push_back(ex);
    ph_shard.push_back(pa.per_head_applies ? Strategy::per_head : Strategy::shard);
    ph_best.push_back(pa.per_head_applies ? Strategy::per_head : bit);
  }
  add_plan("per_head+shard", "per-head NS on q/k/v (DeepSpeed per_head_muon), shard NS elsewhere", "per_head on q/k/v, none elsewhere",
           single ? "bit_identical" : "partial", ph_shard);
  add_plan("cheapest_bit_identical", "per matrix the faster of gather and owner", "whole", "bit_identical", best_bit);
  add_plan("cheapest_exact", "per matrix the fastest strategy exact for whole (incl. all-reduce ones)", "whole",
           any_arith ? "exact_in_exact_arithmetic" : "bit_identical", best_exact);
  add_plan("per_head+cheapest_bit_identical", "per-head NS on q/k/v, the faster of gather/owner elsewhere",
           "per_head on q/k/v, whole elsewhere", "bit_identical", ph_best);

  // Recommendation.
  auto plan = [&](const std::string& name) -> const PlanTotals& {
    for (const auto& p : t.plans)
      if (p.name == name) return p;
    throw std::logic_error("audit: plan missing");
  };
  const PlanTotals& today = plan("shard");
  const PlanTotals* best_b = nullptr;
  for (const char* n : {"gather", "owner", "cheapest_bit_identical"})
    if (!best_b || plan(n).step_time_s < best_b->step_time_s) best_b = &plan(n);
  const PlanTotals* best_a = nullptr;
  for (const char* n : {"gram_allreduce", "gram_restart_allreduce", "cheapest_exact"})
    if (!best_a || plan(n).step_time_s < best_a->step_time_s) best_a = &plan(n);
  const PlanTotals& mixed = plan("per_head+cheapest_bit_identical");
  std::ostringstream rec;
  auto overhead = [&](const PlanTotals& p) {
    return fmt_time(p.step_time_s) + " per optimizer step (" + (p.step_time_s >= today.step_time_s ? "+" : "-") +
           fmt_time(std::abs(p.step_time_s - today.step_time_s)) + " against today's shard path, " + fmt_time(today.step_time_s) + ")";
  };
  if (single) {
    rec << "tp = 1: every strategy is the unsharded kernel; nothing to choose (" << fmt_time(today.step_time_s)
        << " of NS per optimizer step).";
  } else {
    rec << "To make Newton-Schulz independent of tp bit for bit, use " << best_b->name << ": " << overhead(*best_b)
        << " (with Muon's aspect scale taken from the unsharded shape, see the notes).";
    if (best_a->step_time_s < best_b->step_time_s)
      rec << " Accepting rounding-level differences (equal in exact arithmetic), " << best_a->name << " is faster: "
          << overhead(*best_a) << ".";
    rec << " Per-head NS on q/k/v (a different optimizer: DeepSpeed's per_head_muon) makes "
        << fmt_pct(t.per_head_exact_fraction_params) << " of the Muon parameters (" << fmt_pct(t.per_head_exact_fraction_flops)
        << " of the NS FLOPs) tp-independent with no communication; with the faster of gather/owner for the rest: "
        << overhead(mixed) << ".";
  }
  res.recommendation = rec.str();

  // Notes.
  auto& notes = res.notes;
  const auto& q = res.params[0];
  if (!q.zero_width_ranks.empty()) {
    notes.push_back(
        "tp = " + std::to_string(o.tp) + " exceeds num_key_value_heads = " + std::to_string(d.kv_heads) +
        ": under the head-aligned rule ranks " + ranks_text(q.zero_width_ranks) +
        " get zero KV groups and hold no q/k/v rows and no o_proj columns (zero-width shards). For them `shard` and `per_head` "
        "are vacuous (nothing to orthogonalize; their Muon update is empty); gather and owner still work (they receive or send "
        "nothing of their own and the ranks holding heads get the exact result); the all-reduce strategies still involve them "
        "(a zero Gram contribution, and the replicated polynomial work). DeepSpeed's get_shard_size gives such ranks 0 KV "
        "groups too; DeepSpeed has no KV-head replication for this case, and deepspeedai/DeepSpeed#7259 reports AutoTP "
        "training failing on Qwen2.5-3B (2 KV heads) at tp > 2, with the maintainers' advice to keep num_key_value_heads "
        "divisible by tp. Treat this configuration as a what-if of the shard rule, not a supported DeepSpeed run.");
  } else if (d.kv_heads % o.tp != 0) {
    notes.push_back("tp = " + std::to_string(o.tp) + " does not divide num_key_value_heads = " + std::to_string(d.kv_heads) +
                    ": the attention shards are uneven (the first ranks hold one KV group more).");
  }
  {
    std::string differ;
    for (const auto& pa : res.params) {
      double lo = 0, hi = 0;
      for (double s : pa.scale_local)
        if (s > 0) lo = lo == 0 ? s : std::min(lo, s), hi = std::max(hi, s);
      if (hi == 0 || (std::abs(lo - pa.scale_global) < 1e-12 && std::abs(hi - pa.scale_global) < 1e-12)) continue;
      differ += std::string(differ.empty() ? "" : ", ") + pa.param.name + " " +
                (lo == hi ? fmt("%.3g", lo) : fmt("%.3g", lo) + ".." + fmt("%.3g", hi)) + " instead of " + fmt("%.3g", pa.scale_global);
    }
    if (!differ.empty())
      notes.push_back("Muon's aspect scale sqrt(rows/cols) (rows > cols) is computed by DeepSpeed from the shard under AutoTP: at tp = " +
                      std::to_string(o.tp) + " it is " + differ +
                      ". That factor depends on tp by itself (SPEC §4 M2) and no NS strategy removes it: for a tp-independent "
                      "update, gather/owner/all-reduce must go with the scale of the unsharded shape (per_head scales each head "
                      "block itself and is unaffected).");
  }
  if (model.qkv_bias)
    notes.push_back("q/k/v (" + model.model_type + ") carry bias vectors: 1-D (ndim < 2), so not Muon matrices; Muon leaves them to "
                    "its AdamW fallback. They are counted among the non-Muon parameters.");
  notes.push_back("Not Muon matrices (SPEC §2.1): embed_tokens (" + fmt_count(model.embedding_params()) + ")" +
                  (d.tie_word_embeddings ? ", lm_head tied to it" : ", lm_head (" + fmt_count(model.lm_head_params()) + ")") +
                  ", RMSNorm weights (" + fmt_count(model.norm_params()) + ")" +
                  (model.bias_params() ? ", biases (" + fmt_count(model.bias_params()) + ")" : std::string()) + ".");
  if (o.grain > 1)
    notes.push_back("--grain " + std::to_string(o.grain) + " applies to the grain-rule matrices (gate/up/down_proj); the attention "
                    "matrices follow the head-aligned rule.");
  notes.push_back("Exactness: gather and owner are bit-identical to NS of the unsharded matrix (`whole`); gram_allreduce and "
                  "gram_restart_allreduce equal it in exact arithmetic and differ at the kernel's own rounding level in floating "
                  "point (SPEC §4 S5); per_head is bit-identical to per-head NS of the unsharded matrix, a different optimizer; "
                  "shard is NS of the shard, a different matrix whenever more than one rank holds a piece.");
  notes.push_back("Costs: per rank and matrix, time = FLOPs / (" + fmt("%g", o.cost.tflops) + " TFLOP/s) + messages x " +
                  fmt("%g", o.cost.latency_us) + " us + max(bytes sent, received) / (" + fmt("%g", o.cost.link_gbps) +
                  " GB/s); peak rates, so lower bounds, for comparing strategies. FLOPs: plain-algorithm count (every product "
                  "2pkq). Communication: the simulated communicator's ledger (ring all-reduce; gathers and all-to-alls in " +
                  std::string(dtype_name(o.comm.storage)) + ", Gram all-reduces in the compute dtype " +
                  std::string(dtype_name(o.ns.dtype)) + "). A step sums each rank over all matrices and layers and takes the "
                  "slowest rank; owner rotates the owning rank over the matrices.");
  if (o.measure)
    notes.push_back("Shard divergence: ||NS(shard) - block of NS(whole)||_F / ||block of NS(whole)||_F on a Gaussian gradient, mean "
                    "(max) over ranks holding a piece; matrices above " + fmt_count(o.measure_max_elements) +
                    " elements are measured on a proxy with every length divided by the same factor (same aspect ratio, "
                    "heads, KV groups and shard proportions).");
  return res;
}

// --- JSON ---------------------------------------------------------------------------------------

namespace {

json rank_json(int r, const RankCost& c) {
  return {{"rank", r},
          {"flops", c.flops},
          {"bytes_sent", c.bytes_sent},
          {"bytes_received", c.bytes_received},
          {"messages", c.messages},
          {"extra_memory_bytes", c.extra_memory},
          {"compute_s", c.compute_s},
          {"latency_s", c.latency_s},
          {"bandwidth_s", c.bandwidth_s},
          {"time_s", c.time_s()}};
}

json plan_json(const PlanTotals& p) {
  return {{"name", p.name},
          {"description", p.description},
          {"semantics", p.semantics},
          {"exactness", p.exactness},
          {"step_time_s", p.step_time_s},
          {"compute_s", p.compute_s},
          {"latency_s", p.latency_s},
          {"bandwidth_s", p.bandwidth_s},
          {"bytes_sent_max_rank", p.bytes_sent_max_rank},
          {"bytes_sent_total", p.bytes_sent_total},
          {"messages_max_rank", p.messages_max_rank},
          {"flops_max_rank", p.flops_max_rank},
          {"peak_extra_memory_bytes", p.peak_extra_memory}};
}

}  // namespace

json audit_json(const AuditResult& a) {
  const ModelDims& d = a.model.dims;
  const AuditOptions& o = a.options;
  json j;
  j["schema"] = "nsv.audit/1";
  j["model"] = {{"name", d.name},
                {"source", a.model.source},
                {"architecture", a.model.architecture},
                {"model_type", a.model.model_type},
                {"hidden_size", d.hidden},
                {"num_attention_heads", d.heads},
                {"num_key_value_heads", d.kv_heads},
                {"head_dim", d.head_dim},
                {"intermediate_size", d.intermediate},
                {"num_hidden_layers", d.layers},
                {"vocab_size", d.vocab},
                {"tie_word_embeddings", d.tie_word_embeddings},
                {"qkv_bias", a.model.qkv_bias}};
  j["tp"] = o.tp;
  j["grain"] = o.grain;
  j["ns"] = {{"kernel", kernel_name(o.ns.kernel)}, {"steps", o.ns.steps}, {"dtype", dtype_name(o.ns.dtype)},
             {"accumulate", accumulate_name(o.ns.accumulate)}, {"coeffs", o.ns.coeffs.name}, {"restart_at", o.ns.restart_at}};
  j["cost_model"] = {{"latency_us", o.cost.latency_us},
                     {"link_gbps", o.cost.link_gbps},
                     {"tflops", o.cost.tflops},
                     {"wire_dtype", dtype_name(o.comm.storage)},
                     {"formula", "time = flops/(tflops*1e12) + messages*latency + max(bytes_sent, bytes_received)/(link_gbps*1e9)"}};
  j["measured"] = o.measure;
  json params = json::array();
  for (const auto& pa : a.params) {
    const MuonParam& p = pa.param;
    json pj;
    pj["name"] = p.name;
    pj["rows"] = p.rows;
    pj["cols"] = p.cols;
    pj["elements"] = p.elements();
    pj["role"] = role_name(p.role);
    pj["split_axis"] = p.split_axis;
    pj["heads"] = p.heads;
    pj["head_dim"] = p.head_dim;
    pj["kv_groups"] = p.kv_groups;
    pj["shard_rule"] = p.kv_groups > 0 ? "head_aligned" : "grain";
    pj["shard_sizes"] = pa.shard_sizes;
    pj["zero_width_ranks"] = pa.zero_width_ranks;
    pj["per_head_applies"] = pa.per_head_applies;
    pj["per_head_note"] = pa.per_head_note;
    pj["whole_ns_flops"] = pa.whole_ns_flops;
    pj["aspect_scale"] = {{"global", pa.scale_global}, {"local", pa.scale_local}};
    json exact = json::array();
    json strategies = json::object();
    for (const auto& s : pa.strategies) {
      if (s.exactness == Exactness::bit_identical || s.exactness == Exactness::exact_arithmetic)
        exact.push_back({{"strategy", strategy_name(s.strategy)}, {"target", target_name(s.target)}, {"exactness", exactness_name(s.exactness)}});
      json sj = {{"target", target_name(s.target)}, {"exactness", exactness_name(s.exactness)}, {"applicable", s.applicable}};
      if (!s.applicable) {
        sj["why_not"] = s.why_not;
      } else {
        json ranks = json::array();
        for (std::size_t r = 0; r < s.ranks.size(); ++r) ranks.push_back(rank_json(static_cast<int>(r), s.ranks[r]));
        json coll = json::object();
        for (Collective k : kAllCollectives) coll[std::string(collective_name(k))] = s.plan.ledger.count(k);
        coll["broadcast"] = 0;  // nsv.audit/1 lists it; no strategy broadcasts
        sj["time_s"] = s.time_s;
        sj["step_share_s"] = s.step_share_s;
        sj["collectives"] = coll;
        sj["ranks"] = ranks;
      }
      strategies[std::string(strategy_name(s.strategy))] = sj;
    }
    pj["exact_strategies"] = exact;
    pj["strategies"] = strategies;
    pj["cheapest_exact"] = {
        {"bit_identical", pa.cheapest_bit_identical ? json(strategy_name(*pa.cheapest_bit_identical)) : json(nullptr)},
        {"any", pa.cheapest_exact ? json(strategy_name(*pa.cheapest_exact)) : json(nullptr)},
        {"per_head", pa.per_head_applies ? json("per_head") : json(nullptr)}};
    if (pa.divergence) {
      const auto& dv = *pa.divergence;
      pj["shard_divergence"] = {{"rel_diff_mean", dv.rel_diff_mean}, {"rel_diff_max", dv.rel_diff_max},
                                {"rank_rel_diff", dv.rank_rel_diff}, {"cosine_min", dv.cosine_min},
                                {"update_rel_diff_mean", dv.update_rel_diff_mean}, {"update_rel_diff_max", dv.update_rel_diff_max},
                                {"measured_on", dv.proxy ? "proxy" : "full_shape"}, {"proxy_scale", dv.scale},
                                {"proxy_exact_ratio", dv.proxy_exact_ratio}, {"proxy_spectrum_scale", dv.spectrum_scale},
                                {"rows", dv.rows}, {"cols", dv.cols},
                                {"head_dim", dv.head_dim}, {"shard_sizes", dv.shard_sizes}, {"spectrum", "gaussian"},
                                {"seconds", dv.seconds}};
    } else {
      pj["shard_divergence"] = nullptr;
    }
    params.push_back(pj);
  }
  j["parameters"] = params;
  const AuditTotals& t = a.totals;
  json step = json::object(), plans = json::array();
  for (const auto& p : t.plans) {
    step[p.name] = p.step_time_s;
    json pj = plan_json(p);
    json choice = json::array();
    for (Strategy s : p.choice) choice.push_back(strategy_name(s));
    pj["choice"] = choice;
    plans.push_back(pj);
  }
  j["totals"] = {{"layers", t.layers},
                 {"muon_params_per_layer", t.muon_params_per_layer},
                 {"muon_params", t.muon_params},
                 {"total_params", t.total_params},
                 {"non_muon_params", t.non_muon_params},
                 {"per_head_params", t.per_head_params},
                 {"per_head_exact_fraction_params", t.per_head_exact_fraction_params},
                 {"per_head_exact_fraction_flops", t.per_head_exact_fraction_flops},
                 {"ns_flops_whole_per_step", t.ns_flops_whole_per_step},
                 {"step_time_s", step},
                 {"plans", plans}};
  j["recommendation"] = a.recommendation;
  j["notes"] = a.notes;
  return j;
}

// --- text and markdown ----------------------------------------------------------------------------

namespace {

std::string exact_list(const ParamAudit& pa, Target target) {
  std::string s;
  for (const auto& st : pa.strategies) {
    if (st.target != target) continue;
    if (st.exactness == Exactness::bit_identical)
      s += (s.empty() ? "" : ", ") + short_name(st.strategy);
    else if (st.exactness == Exactness::exact_arithmetic)
      s += (s.empty() ? "" : ", ") + short_name(st.strategy) + "*";
  }
  return s.empty() ? "-" : s;
}

std::string divergence_cell(const ParamAudit& pa) {
  if (!pa.divergence) return "";
  const auto& d = *pa.divergence;
  std::string s = fmt("%.3f", d.rel_diff_mean) + " (" + fmt("%.3f", d.rel_diff_max) + "), update " + fmt("%.3f", d.update_rel_diff_mean);
  if (d.proxy) s += " proxy " + std::to_string(d.rows) + "x" + std::to_string(d.cols) + (d.proxy_exact_ratio ? "" : "~");
  return s;
}

std::string header_line(const AuditResult& a) {
  const ModelDims& d = a.model.dims;
  const AuditOptions& o = a.options;
  return d.name + " (" + a.model.architecture + ": hidden " + std::to_string(d.hidden) + ", " + std::to_string(d.heads) +
         " heads / " + std::to_string(d.kv_heads) + " KV of " + std::to_string(d.head_dim) + ", intermediate " +
         std::to_string(d.intermediate) + ", " + std::to_string(d.layers) + " layers, vocab " + std::to_string(d.vocab) +
         (d.tie_word_embeddings ? ", tied embeddings" : "") + ") at tp = " + std::to_string(o.tp) + ", grain " +
         std::to_string(o.grain) + "; NS " + std::string(kernel_name(o.ns.kernel)) + " " + std::string(dtype_name(o.ns.dtype)) +
         ", " + std::to_string(o.ns.steps) + " steps, " + o.ns.coeffs.name;
}

}  // namespace

std::string audit_text(const AuditResult& a, bool per_rank) {
  std::ostringstream out;
  const AuditTotals& t = a.totals;
  const bool measured = a.options.measure;
  out << "nsv audit: " << header_line(a) << "\n\n";
  out << "Muon matrices of one layer (x" << t.layers << " layers):\n";
  char line[512];
  std::snprintf(line, sizeof line, "%-10s %13s %-16s %-24s %-40s %-9s %s\n", "matrix", "shape", "role", "shard sizes",
                "exact for whole", "per_head", measured ? "`shard` NS rel.diff mean (max), update mean" : "");
  out << line;
  for (const auto& pa : a.params) {
    const auto& p = pa.param;
    std::snprintf(line, sizeof line, "%-10s %13s %-16s %-24s %-40s %-9s %s\n", p.name.c_str(),
                  (std::to_string(p.rows) + "x" + std::to_string(p.cols)).c_str(), role_name(p.role).c_str(),
                  sizes_text(pa.shard_sizes).c_str(), exact_list(pa, Target::whole).c_str(), pa.per_head_applies ? "exact" : "n/a",
                  divergence_cell(pa).c_str());
    out << line;
  }
  out << "  (* = equal in exact arithmetic, rounding-level differences in floating point)\n\n";

  out << "Estimated time per matrix and layer: the slowest rank's (owner: the mean over ranks, as the owner rotates over\n"
         "the matrices of a step); < marks the cheapest strategy exact for `whole`:\n";
  std::snprintf(line, sizeof line, "%-10s", "matrix");
  out << line;
  for (Strategy s : kAllStrategies) {
    std::snprintf(line, sizeof line, " %16s", short_name(s).c_str());
    out << line;
  }
  out << "\n";
  for (const auto& pa : a.params) {
    std::snprintf(line, sizeof line, "%-10s", pa.param.name.c_str());
    out << line;
    for (Strategy s : kAllStrategies) {
      const auto& st = pa.strategy(s);
      std::string cell = st.applicable ? fmt_time(st.step_share_s) : "n/a";
      if (pa.cheapest_exact && *pa.cheapest_exact == s) cell += " <";
      std::snprintf(line, sizeof line, " %16s", cell.c_str());
      out << line;
    }
    out << "\n";
  }
  out << "\nCommunication per matrix (bytes sent by the busiest rank / messages):\n";
  for (const auto& pa : a.params) {
    std::snprintf(line, sizeof line, "%-10s", pa.param.name.c_str());
    out << line;
    for (Strategy s : kAllStrategies) {
      const auto& st = pa.strategy(s);
      std::string cell = "n/a";
      if (st.applicable) {
        std::uint64_t b = 0, msg = 0;
        for (const auto& r : st.ranks) b = std::max(b, r.bytes_sent), msg = std::max(msg, r.messages);
        cell = b == 0 ? "-" : fmt_bytes(double(b)) + "/" + std::to_string(msg);
      }
      std::snprintf(line, sizeof line, " %16s", cell.c_str());
      out << line;
    }
    out << "\n";
  }
  if (per_rank) {
    out << "\nPer rank (FLOPs, bytes sent/received, messages, extra memory, time):\n";
    for (const auto& pa : a.params)
      for (const auto& st : pa.strategies) {
        if (!st.applicable) continue;
        out << "  " << pa.param.name << " / " << strategy_name(st.strategy) << "\n";
        for (std::size_t r = 0; r < st.ranks.size(); ++r) {
          const auto& c = st.ranks[r];
          std::snprintf(line, sizeof line, "    rank %3zu  %10.3f GFLOP  sent %11s  recv %11s  msgs %4llu  mem %11s  %s\n", r,
                        double(c.flops) / 1e9, fmt_bytes(double(c.bytes_sent)).c_str(), fmt_bytes(double(c.bytes_received)).c_str(),
                        static_cast<unsigned long long>(c.messages), fmt_bytes(double(c.extra_memory)).c_str(),
                        fmt_time(c.time_s()).c_str());
          out << line;
        }
      }
  }

  out << "\nWhole model, one optimizer step (" << t.layers << " layers):\n";
  out << "  Muon parameters: " << fmt_count(t.muon_params) << " (" << fmt_count(t.muon_params_per_layer) << " per layer) of "
      << fmt_count(t.total_params) << " in the model\n";
  out << "  per-head can make exact: " << fmt_pct(t.per_head_exact_fraction_params) << " of the Muon parameters, "
      << fmt_pct(t.per_head_exact_fraction_flops) << " of the NS FLOPs (" << fmt("%.2f", double(t.ns_flops_whole_per_step) / 1e12)
      << " TFLOP per step unsharded)\n";
  std::snprintf(line, sizeof line, "  %-32s %-26s %12s %14s %14s %12s\n", "plan", "exactness", "step time", "sent/rank",
                "sent (all)", "peak mem");
  out << line;
  for (const auto& p : t.plans) {
    std::snprintf(line, sizeof line, "  %-32s %-26s %12s %14s %14s %12s\n", p.name.c_str(), p.exactness.c_str(),
                  fmt_time(p.step_time_s).c_str(), fmt_bytes(double(p.bytes_sent_max_rank)).c_str(),
                  fmt_bytes(double(p.bytes_sent_total)).c_str(), fmt_bytes(double(p.peak_extra_memory)).c_str());
    out << line;
  }
  out << "\nRecommendation: " << a.recommendation << "\n";
  out << "\nNotes:\n";
  for (const auto& n : a.notes) out << "  - " << n << "\n";
  return out.str();
}

std::string audit_markdown(const AuditResult& a) {
  std::ostringstream out;
  const AuditTotals& t = a.totals;
  const AuditOptions& o = a.options;
  const bool measured = o.measure;
  out << "## " << a.model.dims.name << " at tp = " << o.tp << (o.grain > 1 ? ", grain " + std::to_string(o.grain) : std::string()) << "\n\n";
  out << header_line(a) << ".\n\n";
  out << "### Muon matrices of one layer\n\n";
  out << "| matrix | shape | role | shard sizes | exact for `whole` | exact for `per_head` | cheapest exact (whole) |"
      << (measured ? " `shard` NS rel. diff mean (max), update mean |" : "") << "\n";
  out << "|---|---|---|---|---|---|---|" << (measured ? "---|" : "") << "\n";
  for (const auto& pa : a.params) {
    const auto& p = pa.param;
    out << "| " << p.name << " | " << p.rows << "x" << p.cols << " | " << role_name(p.role) << " (dim " << p.split_axis << ") | "
        << sizes_text(pa.shard_sizes) << " | " << exact_list(pa, Target::whole) << " | " << (pa.per_head_applies ? "per_head" : "n/a")
        << " | " << (pa.cheapest_exact ? short_name(*pa.cheapest_exact) : "-");
    if (pa.cheapest_bit_identical && pa.cheapest_exact && *pa.cheapest_bit_identical != *pa.cheapest_exact)
      out << " (bit-identical: " << short_name(*pa.cheapest_bit_identical) << ")";
    out << " |";
    if (measured) out << " " << divergence_cell(pa) << " |";
    out << "\n";
  }
  out << "\n\\* equal in exact arithmetic; rounding-level differences in floating point.\n\n";
  out << "### Estimated time per matrix\n\n| matrix |";
  for (Strategy s : kAllStrategies) out << " " << strategy_name(s) << " |";
  out << "\n|---|";
  for (std::size_t i = 0; i < std::size(kAllStrategies); ++i) out << "---|";
  out << "\n";
  for (const auto& pa : a.params) {
    out << "| " << pa.param.name << " |";
    for (Strategy s : kAllStrategies) {
      const auto& st = pa.strategy(s);
      std::uint64_t b = 0;
      for (const auto& r : st.ranks) b = std::max(b, r.bytes_sent);
      out << " " << (st.applicable ? fmt_time(st.step_share_s) + (b ? " / " + fmt_bytes(double(b)) : "") : "n/a") << " |";
    }
    out << "\n";
  }
  out << "\nPer matrix and layer: estimated time (the slowest rank's; owner: the mean over ranks, as the owner rotates "
         "over the matrices of a step) / bytes sent by the busiest rank.\n\n";
  out << "### One optimizer step (" << t.layers << " layers)\n\n";
  out << "Muon parameters: " << fmt_count(t.muon_params) << " (" << fmt_count(t.muon_params_per_layer) << " per layer) of "
      << fmt_count(t.total_params) << ". Per-head can make exact " << fmt_pct(t.per_head_exact_fraction_params)
      << " of the Muon parameters and " << fmt_pct(t.per_head_exact_fraction_flops) << " of the NS FLOPs.\n\n";
  out << "| plan | exactness | est. step time | bytes sent (busiest rank) | bytes sent (all ranks) | peak extra memory |\n";
  out << "|---|---|---|---|---|---|\n";
  for (const auto& p : t.plans)
    out << "| " << p.name << " | " << p.exactness << " | " << fmt_time(p.step_time_s) << " | " << fmt_bytes(double(p.bytes_sent_max_rank))
        << " | " << fmt_bytes(double(p.bytes_sent_total)) << " | " << fmt_bytes(double(p.peak_extra_memory)) << " |\n";
  out << "\n**Recommendation.** " << a.recommendation << "\n\n";
  for (const auto& n : a.notes) out << "- " << n << "\n";
  out << "\n";
  return out.str();
}

}  // namespace nsv
