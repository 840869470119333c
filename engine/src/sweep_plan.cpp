#include "nsv/engine/sweep_plan.hpp"

#include <algorithm>
#include <set>
#include <stdexcept>
#include <utility>

#include "nsv/config_schema.hpp"
#include "nsv/input_limits.hpp"
#include "nsv/invalid_field.hpp"
#include "nsv/layout.hpp"
#include "nsv/metrics.hpp"
#include "nsv/npy.hpp"
#include "nsv/resources.hpp"
#include "nsv/spectra.hpp"

namespace nsv::engine {
namespace {

using Shape = std::pair<std::int64_t, std::int64_t>;

template <class T>
void need_nonempty(const std::vector<T>& v, const char* field) {
  if (v.empty()) throw InvalidField(field, "needs at least one value");
}

template <class T, class Parse>
auto parse_all(const std::vector<T>& values, Parse parse) {
  std::vector<decltype(parse(values.front()))> out;
  for (const auto& v : values) out.push_back(parse(v));
  return out;
}

template <class E>
std::vector<E> parse_names(const std::vector<std::string>& names) {
  return parse_all(names, [](const std::string& n) { return parse_named<E>(n); });
}

void check_ranges(const SweepSpec& spec) {
  need_nonempty(spec.shapes, "shapes");
  need_nonempty(spec.tps, "tp");
  need_nonempty(spec.axes, "axis");
  need_nonempty(spec.kernels, "kernel");
  need_nonempty(spec.strategies, "strategy");
  need_nonempty(spec.dtypes, "dtype");
  need_nonempty(spec.steps, "steps");
  need_nonempty(spec.spectra, "spectrum");
  need_nonempty(spec.orders, "reduction_order");
  need_nonempty(spec.coeffs, "coeffs");
  need_nonempty(spec.fused, "fused");
  if (spec.seeds < 1) throw InvalidField("seeds", "must be >= 1, got " + std::to_string(spec.seeds));
  if (spec.grain < 1) throw InvalidField("grain", "must be >= 1");
  if (spec.heads < 0) throw InvalidField("heads", "must be positive");
  if (spec.kv_heads < 0) throw InvalidField("kv_heads", "must be positive");
  if (spec.kv_heads > 0 && spec.heads == 0) throw InvalidField("kv_heads", "needs --heads");
}

// The spec's lists parsed, in the spec's order; every check of a value happens here.
struct ParsedSpec {
  std::vector<Shape> shapes;
  std::vector<Kernel> kernels;
  std::vector<Strategy> strategies;
  std::vector<DType> dtypes;
  std::vector<ReductionOrder> orders;
  std::vector<CoeffSchedule> schedules;
  std::vector<Spectrum> spectra;
  std::vector<FusedKind> fused;
  std::map<std::string, Shape> file_shapes;  // file spectrum path -> the file's matrix shape
  std::map<std::string, double> file_norms;  // file spectrum path -> its Frobenius norm
  Accumulate accumulate = Accumulate::fp32;
  Products products = Products::symmetric;
};

// The sweep's size, checked before the cases are expanded: the number of combinations of the
// lists (each a SweepCase in memory) and the memory of the largest shape's Newton-Schulz.
constexpr std::uint64_t kMaxCombinations = 1'000'000;

void require_plan_fits(const SweepSpec& spec, const ParsedSpec& p) {
  std::uint64_t combinations = 1;
  for (const std::size_t n : {p.shapes.size(), p.spectra.size(), static_cast<std::size_t>(spec.seeds), p.kernels.size(),
                              p.dtypes.size(), spec.steps.size(), p.schedules.size(), spec.tps.size(), spec.axes.size(),
                              p.fused.size(), p.strategies.size(), p.orders.size()})
    combinations = saturating_product(combinations, n);
  if (combinations > kMaxCombinations)
    throw InvalidField("seeds", "and the lists make " + std::to_string(combinations) + " combinations, more than the " +
                                    std::to_string(kMaxCombinations) + " one sweep runs: reduce --seeds or split the sweep");
  for (const auto& [rows, cols] : p.shapes)
    require_memory(ns_working_bytes(rows, cols), "shapes",
                   std::to_string(rows) + "x" + std::to_string(cols) + " (Newton-Schulz of a float64 matrix of that shape)");
}

// AutoTP fuses column-parallel (dim-0) projections only: a fused kind on a dim-1 split is no case.
bool fused_on_dim_1(FusedKind f, int axis) { return f != FusedKind::none && axis != 0; }

// The heads a case of this fused kind is split by: a [gate; up] matrix has none.
std::int64_t heads_of(FusedKind f, std::int64_t heads) { return f == FusedKind::gate_up ? 0 : heads; }

// Every shape's split exists for every axis and fused kind it runs with: heads divide the split
// axis of a plain matrix (q/k/v on dim 0, o_proj on dim 1), a fused matrix's rows are its heads.
void require_geometries(const SweepSpec& spec, const ParsedSpec& p) {
  for (FusedKind f : p.fused) {
    if (f != FusedKind::none && f != FusedKind::gate_up && spec.heads == 0)
      throw InvalidField("fused", std::string(name_of(f)) + " needs --heads (the query heads of the fused [Q;K;V])");
    for (const auto& [r, c] : p.shapes)
      for (int a : spec.axes) {
        if (fused_on_dim_1(f, a)) continue;  // skipped by plan_sweep
        try {
          autotp_split(f, a, a == 0 ? r : c, 1, heads_of(f, spec.heads), heads_of(f, spec.kv_heads), spec.grain);
        } catch (const InvalidField& e) {
          // The field at fault (the shape's own rows: shapes), with the case it failed on.
          const std::string shape = std::to_string(r) + "x" + std::to_string(c);
          const std::string cut = "axis " + std::to_string(a) + ", --fused " + std::string(name_of(f));
          if (e.field() == "shape") throw InvalidField("shapes", shape + " (" + cut + "): " + e.requirement());
          throw InvalidField(e.field(), e.requirement() + " (--shapes " + shape + ", " + cut + ")");
        }
      }
  }
}

ParsedSpec parse_spec(const SweepSpec& spec) {
  check_ranges(spec);
  ParsedSpec p;
  p.shapes = parse_all(spec.shapes, parse_shape);
  for (int tp : spec.tps)
    if (tp < 1 || tp > 4096) throw InvalidField("tp", "must be in 1..4096, got " + std::to_string(tp));
  for (int a : spec.axes)
    if (a != 0 && a != 1) throw InvalidField("axis", "must be 0 or 1, got " + std::to_string(a));
  p.kernels = parse_names<Kernel>(spec.kernels);
  for (const auto& s : spec.strategies) {
    if (s == kEveryStrategy)
      p.strategies.insert(p.strategies.end(), std::begin(kAllStrategies), std::end(kAllStrategies));
    else
      p.strategies.push_back(parse_named<Strategy>(s));
  }
  p.dtypes = parse_names<DType>(spec.dtypes);
  p.accumulate = parse_named<Accumulate>(spec.accumulate);
  p.products = parse_named<Products>(spec.products);
  for (int st : spec.steps)
    if (st < 0 || st > 1000) throw InvalidField("steps", "must be in 0..1000, got " + std::to_string(st));
  p.orders = parse_names<ReductionOrder>(spec.orders);
  p.schedules = parse_all(spec.coeffs, resolve_schedule);
  // A file spectrum is read now, so a missing or malformed file fails before anything is
  // written, and its shape decides which --shapes it applies to.
  for (const auto& s : spec.spectra) {
    p.spectra.push_back(parse_spectrum(s));
    const Spectrum& sp = p.spectra.back();
    if (sp.kind == Spectrum::Kind::file) {
      const std::string what = "file:" + sp.path;
      const MatD m = read_npy(sp.path, [&](const std::vector<long>& dims) { require_ns_shape(what, InputShape::of(dims)); }).matrix();
      if (!all_finite(m)) throw InvalidField("spectrum", "file:" + sp.path + ": the matrix holds NaN or Inf");
      p.file_shapes[sp.path] = {m.rows(), m.cols()};
      p.file_norms[sp.path] = m.norm();
    }
  }
  p.fused = parse_names<FusedKind>(spec.fused);
  require_plan_fits(spec, p);
  require_geometries(spec, p);
  return p;
}

bool uses_all_reduce(Strategy s) {
  const auto collectives = strategy_record(s).collectives;
  return std::find(collectives.begin(), collectives.end(), Collective::all_reduce) != collectives.end();
}

// Why a combination of the cartesian product is not run ("" when it is run). The first rule that
// matches names the reason the combination is counted under.
std::string sweep_skip_reason(const SweepCase& c, const Spectrum& spectrum, const ParsedSpec& p, std::size_t order_index,
                              const std::set<std::string>& seen) {
  if (spectrum.kind == Spectrum::Kind::file) {
    if (p.file_shapes.at(spectrum.path) != Shape{c.rows, c.cols})
      return "file spectrum: the file's matrix has another shape than this --shapes entry";
    if (c.seed > 0) return "file spectrum: a file is one matrix, seeds after 0 would repeat it";
    if (p.file_norms.at(spectrum.path) > largest_finite(normalization_dtype(c.ns)))
      return "file spectrum: the matrix's norm overflows the dtype the kernel normalizes in (the result would be zeros)";
  }
  if (spectrum.kind == Spectrum::Kind::lowrank && spectrum.rank > std::min(c.rows, c.cols))
    return "lowrank:R with R above the shape's short side";
  if (c.strategy == Strategy::per_head && c.axis == 1)
    return "per_head on a dim-1 (row-parallel) split: heads are not on dim 0";
  if (c.strategy == Strategy::per_head && c.heads == 0) return "per_head without --heads";
  if (c.strategy == Strategy::per_head && !inapplicable_reason(c.strategy, c.layout(), c.head_dim).empty())
    return "per_head on shards that are not head-aligned: AutoTP's cut splits a head";
  if (order_index > 0 && !uses_all_reduce(c.strategy))
    return "reduction order has no effect: strategy without an all-reduce";
  if (seen.count(c.key())) return "duplicate of an earlier case (a value repeated in a list)";
  return "";
}

}  // namespace

nlohmann::json SweepSpec::to_json() const {
  return {{"shapes", shapes}, {"tp", tps}, {"axis", axes}, {"kernel", kernels}, {"strategy", strategies},
          {"dtype", dtypes}, {"steps", steps}, {"spectrum", spectra}, {"reduction_order", orders}, {"coeffs", coeffs}, {"fused", fused},
          {"seeds", seeds}, {"heads", heads}, {"kv_heads", kv_heads}, {"grain", grain}, {"accumulate", accumulate},
          {"products", products}, {"restart_at", parse_restarts(restart_at)}};
}

SweepRow SweepCase::parameters() const {
  SweepRow r;
  r.rows = rows;
  r.cols = cols;
  r.spectrum = spectrum;
  r.seed = seed;
  r.kernel = ns.kernel;
  r.dtype = ns.dtype;
  r.accumulate = ns.accumulate;
  r.products = ns.products;
  r.steps = ns.steps;
  r.coeffs = ns.coeffs.name;
  r.restart_at = ns.restart_at;
  r.tp = tp;
  r.axis = axis;
  r.grain = grain;
  r.heads = heads;
  r.kv_heads = kv_heads;
  r.fused = fused;
  r.strategy = strategy;
  r.target = natural_target(strategy);
  r.reduction_order = order;
  return r;
}

std::string SweepCase::key() const { return sweep_row_key(parameters()); }

AutoTpSplit SweepCase::split() const { return autotp_split(fused, axis, axis == 0 ? rows : cols, tp, heads, kv_heads, grain); }

Layout SweepCase::layout() const { return split().layout; }

SweepPlan plan_sweep(const SweepSpec& spec) {
  const ParsedSpec p = parse_spec(spec);
  SweepPlan plan;
  std::set<std::string> seen;
  SweepCase c;
  c.ns.accumulate = p.accumulate;
  c.ns.products = p.products;
  c.ns.restart_at = parse_restarts(spec.restart_at);
  c.grain = spec.grain;
  for (const auto& [rows, cols] : p.shapes)
    for (const auto& sp : p.spectra)
      for (int seed = 0; seed < spec.seeds; ++seed)
        for (Kernel k : p.kernels)
          for (DType d : p.dtypes)
            for (int st : spec.steps)
              for (const auto& sched : p.schedules)
                for (int tp : spec.tps)
                  for (int axis : spec.axes)
                    for (FusedKind f : p.fused)
                    for (Strategy s : p.strategies)
                      for (std::size_t oi = 0; oi < p.orders.size(); ++oi) {
                        c.rows = rows;
                        c.cols = cols;
                        c.spectrum = sp.text();
                        c.seed = static_cast<std::uint64_t>(seed);
                        c.ns.kernel = k;
                        c.ns.dtype = d;
                        c.ns.steps = st;
                        c.ns.coeffs = sched;
                        c.tp = tp;
                        c.axis = axis;
                        c.strategy = s;
                        c.order = p.orders[oi];
                        c.fused = f;
                        if (fused_on_dim_1(f, axis)) {
                          ++plan.skipped["fused projection on a dim-1 split: AutoTP fuses column-parallel (dim-0) matrices only"];
                          continue;
                        }
                        c.heads = heads_of(f, spec.heads);
                        c.kv_heads = heads_of(f, spec.kv_heads);
                        const AutoTpSplit split = c.split();
                        c.heads = split.heads;
                        c.kv_heads = split.kv_heads;
                        c.head_dim = split.per_head.head_dim;
                        if (const std::string why = sweep_skip_reason(c, sp, p, oi, seen); !why.empty()) {
                          ++plan.skipped[why];
                          continue;
                        }
                        c.ns.validate();
                        seen.insert(c.key());
                        c.index = plan.cases.size();
                        plan.cases.push_back(c);
                      }
  // A sweep that would run nothing is refused, not reported as "0 cases" with success.
  if (plan.cases.empty()) {
    std::string why;
    for (const auto& [reason, n] : plan.skipped) why += (why.empty() ? "" : "; ") + std::to_string(n) + " x " + reason;
    throw std::invalid_argument("every case of this sweep is inapplicable, so nothing would run (" + why +
                                "): change the lists so that at least one case applies");
  }
  return plan;
}

}  // namespace nsv::engine
