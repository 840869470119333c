#include "sweep_engine.hpp"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <set>
#include <stdexcept>
#include <unordered_map>

#include "cli_common.hpp"
#include "csv.hpp"
#include "nsv/backend.hpp"
#include "nsv/layout.hpp"
#include "nsv/npy.hpp"
#include "nsv/spectra.hpp"
#include "progress.hpp"

namespace nsv::cli {
namespace {

const std::vector<std::string> kHeader = {
    // parameters (the case key)
    "rows", "cols", "spectrum", "seed", "kernel", "dtype", "accumulate", "products", "steps", "coeffs", "restart_at", "tp",
    "axis", "grain", "heads", "kv_heads", "strategy", "target", "reduction_order",
    // results
    "rel_diff_mean", "rel_diff_max", "rel_diff_ranks", "cosine", "norm_ratio", "bytes_sent", "bytes_received",
    "messages", "flops", "extra_memory", "collectives", "bit_identical", "seconds"};
constexpr std::size_t kKeyColumns = 19;

std::string num(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

bool uses_all_reduce(Strategy s) { return s == Strategy::gram_allreduce || s == Strategy::gram_restart_allreduce; }

template <class T>
void need_nonempty(const std::vector<T>& v, const char* flag) {
  if (v.empty()) throw std::invalid_argument(std::string(flag) + " needs at least one value");
}

std::string input_key(const SweepCase& c) {
  return std::to_string(c.rows) + "x" + std::to_string(c.cols) + "|" + c.spectrum + "|" + std::to_string(c.seed);
}

std::string target_key(const SweepCase& c) {
  const Target t = natural_target(c.strategy);
  return input_key(c) + "|" + std::string(kernel_name(c.ns.kernel)) + "|" + std::string(dtype_name(c.ns.dtype)) + "|" +
         std::to_string(c.ns.steps) + "|" + c.ns.coeffs.name + "|" + std::string(target_name(t)) + "|" +
         (t == Target::per_head ? std::to_string(c.head_dim) : "0");
}

Layout case_layout(const SweepCase& c) {
  const std::int64_t dim = c.axis == 0 ? c.rows : c.cols;
  return c.heads > 0 ? contiguous_layout(c.axis, head_aligned_sizes(dim, c.kv_heads, c.tp))
                     : contiguous_layout(c.axis, grain_sizes(dim, c.tp, c.grain));
}

std::vector<std::string> run_case(const SweepCase& c, const Backend& b, const MatD& g, const MatD& target) {
  const auto t0 = std::chrono::steady_clock::now();
  const Layout layout = case_layout(c);
  const ShardedMatrix m = shard_matrix(g, layout, c.axis == 0 ? c.head_dim : 0);
  const StrategyRun run = run_strategy(c.strategy, b, m, c.ns, {c.order, DType::fp32});
  const Comparison cmp = compare_with_target(run, target, layout);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  double cos = 0, ratio = 0;
  int counted = 0;
  std::uint64_t sent = 0, received = 0, messages = 0, flops = 0, extra = 0;
  std::string ranks;
  for (const auto& r : cmp.ranks) {
    if (r.rows * r.cols > 0) {
      cos += r.cosine;
      ratio += r.norm_ratio;
      ++counted;
      if (!ranks.empty()) ranks += ';';
      ranks += num(r.rel_diff);
    } else {
      ranks += ranks.empty() ? "-" : ";-";  // a rank holding nothing
    }
    sent = std::max(sent, r.traffic.bytes_sent);
    received = std::max(received, r.traffic.bytes_received);
    messages = std::max(messages, r.traffic.messages);
    flops = std::max(flops, r.flops);
    extra = std::max(extra, r.extra_memory);
  }
  if (counted) {
    cos /= counted;
    ratio /= counted;
  }
  int calls = 0;
  for (int k : cmp.collectives) calls += k;
  std::vector<std::string> row = c.key_fields();
  for (const std::string& v :
       {num(cmp.rel_diff_mean), num(cmp.rel_diff_max), ranks, num(cos), num(ratio), std::to_string(sent),
        std::to_string(received), std::to_string(messages), std::to_string(flops), std::to_string(extra),
        std::to_string(calls), std::string(cmp.bit_identical ? "true" : "false")})
    row.push_back(v);
  char secs[32];
  std::snprintf(secs, sizeof secs, "%.4f", seconds);
  row.push_back(secs);
  return row;
}

}  // namespace

nlohmann::json SweepSpec::to_json() const {
  return {{"shapes", shapes}, {"tp", tps}, {"axis", axes}, {"kernel", kernels}, {"strategy", strategies},
          {"dtype", dtypes}, {"steps", steps}, {"spectrum", spectra}, {"reduction_order", orders}, {"coeffs", coeffs},
          {"seeds", seeds}, {"heads", heads}, {"kv_heads", kv_heads}, {"grain", grain}, {"accumulate", accumulate},
          {"products", products}, {"restart_at", restart_at}};
}

std::vector<std::string> SweepCase::key_fields() const {
  return {std::to_string(rows), std::to_string(cols), spectrum, std::to_string(seed),
          std::string(kernel_name(ns.kernel)), std::string(dtype_name(ns.dtype)),
          std::string(accumulate_name(ns.accumulate)), std::string(products_name(ns.products)), std::to_string(ns.steps), ns.coeffs.name,
          std::to_string(ns.restart_at), std::to_string(tp), std::to_string(axis), std::to_string(grain),
          std::to_string(heads), std::to_string(kv_heads), std::string(strategy_name(strategy)),
          std::string(target_name(natural_target(strategy))), std::string(reduction_order_name(order))};
}

std::string SweepCase::key() const {
  std::string k = csv_line(key_fields());
  k.pop_back();
  return k;
}

std::size_t SweepPlan::skipped_total() const {
  std::size_t n = 0;
  for (const auto& [reason, count] : skipped) n += count;
  return n;
}

std::vector<std::string> sweep_header() { return kHeader; }
std::size_t sweep_key_columns() { return kKeyColumns; }

SweepPlan plan_sweep(const SweepSpec& spec) {
  need_nonempty(spec.shapes, "--shapes");
  need_nonempty(spec.tps, "--tp");
  need_nonempty(spec.axes, "--axis");
  need_nonempty(spec.kernels, "--kernel");
  need_nonempty(spec.strategies, "--strategy");
  need_nonempty(spec.dtypes, "--dtype");
  need_nonempty(spec.steps, "--steps");
  need_nonempty(spec.spectra, "--spectrum");
  need_nonempty(spec.orders, "--reduction-order");
  need_nonempty(spec.coeffs, "--coeffs");
  if (spec.seeds < 1) throw std::invalid_argument("--seeds must be >= 1, got " + std::to_string(spec.seeds));
  if (spec.grain < 1) throw std::invalid_argument("--grain must be >= 1");
  if (spec.heads < 0 || spec.kv_heads < 0) throw std::invalid_argument("--heads and --kv-heads must be positive");
  if (spec.kv_heads > 0 && spec.heads == 0) throw std::invalid_argument("--kv-heads needs --heads");

  std::vector<std::pair<std::int64_t, std::int64_t>> shapes;
  for (const auto& s : spec.shapes) shapes.push_back(parse_shape(s));
  for (int tp : spec.tps)
    if (tp < 1 || tp > 4096) throw std::invalid_argument("--tp must be in 1..4096, got " + std::to_string(tp));
  for (int a : spec.axes)
    if (a != 0 && a != 1) throw std::invalid_argument("--axis must be 0 or 1, got " + std::to_string(a));
  std::vector<Kernel> kernels;
  for (const auto& k : spec.kernels) kernels.push_back(parse_kernel(k));
  std::vector<Strategy> strategies;
  for (const auto& s : spec.strategies) strategies.push_back(parse_strategy(s));
  std::vector<DType> dtypes;
  for (const auto& d : spec.dtypes) dtypes.push_back(parse_dtype(d));
  const Accumulate accumulate = parse_accumulate(spec.accumulate);
  const Products products = parse_products(spec.products);
  for (int st : spec.steps)
    if (st < 0 || st > 1000) throw std::invalid_argument("--steps must be in 0..1000, got " + std::to_string(st));
  std::vector<ReductionOrder> orders;
  for (const auto& o : spec.orders) orders.push_back(parse_reduction_order(o));
  std::vector<CoeffSchedule> schedules;
  for (const auto& c : spec.coeffs) schedules.push_back(resolve_schedule(c));
  // Spectra: canonical names; a file spectrum is read now, so a missing or malformed file fails
  // before anything is written, and its shape decides which --shapes it applies to.
  std::vector<Spectrum> spectra;
  std::map<std::string, std::pair<std::int64_t, std::int64_t>> file_shapes;
  for (const auto& s : spec.spectra) {
    Spectrum sp = parse_spectrum(s);
    if (sp.kind == Spectrum::Kind::file) {
      const MatD m = read_npy(sp.path).matrix();
      file_shapes[sp.path] = {m.rows(), m.cols()};
    }
    spectra.push_back(sp);
  }
  // Heads lie along the split axis (q/k/v on dim 0, o_proj on dim 1): they must divide it.
  if (spec.heads > 0)
    for (const auto& [r, c] : shapes)
      for (int a : spec.axes) head_geometry(a == 0 ? r : c, spec.heads, spec.kv_heads, a);

  SweepPlan plan;
  std::set<std::string> seen;
  for (const auto& [rows, cols] : shapes)
    for (const auto& sp : spectra) {
      const bool file_shape_differs = sp.kind == Spectrum::Kind::file && file_shapes[sp.path] != std::pair{rows, cols};
      for (int seed = 0; seed < spec.seeds; ++seed) {
        const bool file_repeat = sp.kind == Spectrum::Kind::file && seed > 0;
        for (Kernel k : kernels)
          for (DType d : dtypes)
            for (int st : spec.steps)
              for (const auto& sched : schedules)
                for (int tp : spec.tps)
                  for (int axis : spec.axes)
                    for (Strategy s : strategies)
                      for (std::size_t oi = 0; oi < orders.size(); ++oi) {
                        if (file_shape_differs) {
                          ++plan.skipped["file spectrum: the file's matrix has another shape than this --shapes entry"];
                          continue;
                        }
                        if (file_repeat) {
                          ++plan.skipped["file spectrum: a file is one matrix, seeds after 0 would repeat it"];
                          continue;
                        }
                        if (s == Strategy::per_head && axis == 1) {
                          ++plan.skipped["per_head on a dim-1 (row-parallel) split: heads are not on dim 0"];
                          continue;
                        }
                        if (s == Strategy::per_head && spec.heads == 0) {
                          ++plan.skipped["per_head without --heads"];
                          continue;
                        }
                        if (oi > 0 && !uses_all_reduce(s)) {
                          ++plan.skipped["reduction order has no effect: strategy without an all-reduce"];
                          continue;
                        }
                        SweepCase c;
                        c.rows = rows;
                        c.cols = cols;
                        c.spectrum = sp.text();
                        c.seed = static_cast<std::uint64_t>(seed);
                        c.ns.kernel = k;
                        c.ns.dtype = d;
                        c.ns.accumulate = accumulate;
                        c.ns.products = products;
                        c.ns.steps = st;
                        c.ns.coeffs = sched;
                        c.ns.restart_at = spec.restart_at;
                        c.ns.validate();
                        c.tp = tp;
                        c.axis = axis;
                        c.grain = spec.grain;
                        if (spec.heads > 0) {
                          const HeadGeometry geo = head_geometry(axis == 0 ? rows : cols, spec.heads, spec.kv_heads, axis);
                          c.heads = geo.heads;
                          c.kv_heads = geo.kv_groups;
                          c.head_dim = geo.head_dim;
                        }
                        c.strategy = s;
                        c.order = orders[oi];
                        if (!seen.insert(c.key()).second) {
                          ++plan.skipped["duplicate of an earlier case (a value repeated in a list)"];
                          continue;
                        }
                        c.index = plan.cases.size();
                        plan.cases.push_back(std::move(c));
                      }
      }
    }
  return plan;
}

SweepOutcome run_sweep(const SweepSpec& spec, const SweepRunOptions& opt) {
  const auto t0 = std::chrono::steady_clock::now();
  const SweepPlan plan = plan_sweep(spec);  // every input check happens here, before any file is touched
  const std::string header_line = csv_line(kHeader);
  SweepOutcome outcome;
  outcome.skipped = plan.skipped;

  std::unordered_map<std::string, std::size_t> index_of;
  for (const auto& c : plan.cases) index_of[c.key()] = c.index;
  std::vector<std::vector<std::string>> rows(plan.cases.size());
  std::vector<bool> done(plan.cases.size(), false);

  std::unique_ptr<AppendFile> file;
  if (!opt.out.empty()) {
    const bool exists = std::filesystem::exists(opt.out);
    bool fresh = true;
    if (opt.resume && exists) {
      // Validate before modifying anything: header, column count, keys.
      const auto lines = read_lines(opt.out, false, &outcome.dropped_partial_bytes);
      if (!lines.empty()) {
        fresh = false;
        if (lines[0] + "\n" != header_line)
          throw std::invalid_argument(opt.out + " does not start with this version's sweep header; it was not written by "
                                      "`nsv sweep` (or by another version). Use another --out, or drop --resume to overwrite it.");
        for (std::size_t i = 1; i < lines.size(); ++i) {
          auto fields = csv_split(lines[i]);
          if (fields.size() != kHeader.size())
            throw std::invalid_argument(opt.out + " line " + std::to_string(i + 1) + " has " + std::to_string(fields.size()) +
                                        " fields, expected " + std::to_string(kHeader.size()) + "; the file is damaged");
          std::string key = csv_line({fields.begin(), fields.begin() + static_cast<long>(kKeyColumns)});
          key.pop_back();
          const auto it = index_of.find(key);
          if (it == index_of.end())
            throw std::invalid_argument(opt.out + " line " + std::to_string(i + 1) +
                                        " is a case this sweep does not contain (" + key +
                                        "): resume the sweep with the same parameters, or write to another --out");
          if (!done[it->second]) {
            done[it->second] = true;
            rows[it->second] = std::move(fields);
            ++outcome.resumed;
          }
        }
      }
      if (outcome.dropped_partial_bytes > 0) read_lines(opt.out, true);  // cut the partial line off the file
    }
    file = std::make_unique<AppendFile>(opt.out, fresh);
    if (fresh) file->append(header_line);
  }

  std::vector<std::size_t> pending;
  for (const auto& c : plan.cases)
    if (!done[c.index]) pending.push_back(c.index);

  // Shared inputs and references, computed once each (in parallel) before the cases.
  std::vector<std::string> input_keys, target_keys;
  std::unordered_map<std::string, std::size_t> input_at, target_at;
  std::vector<std::size_t> input_example, target_example;
  for (std::size_t i : pending) {
    const auto& c = plan.cases[i];
    if (input_at.emplace(input_key(c), input_keys.size()).second) {
      input_keys.push_back(input_key(c));
      input_example.push_back(i);
    }
    if (target_at.emplace(target_key(c), target_keys.size()).second) {
      target_keys.push_back(target_key(c));
      target_example.push_back(i);
    }
  }
  const auto backend = make_cpu_backend();
  const int threads = opt.threads > 0 ? opt.threads : omp_get_max_threads();
  outcome.threads = threads;
  omp_set_max_active_levels(1);  // each case single-threaded: the library's inner loops run on one thread

  std::mutex error_mutex;
  std::string first_error;
  const auto guarded = [&](auto&& fn) {
    try {
      fn();
    } catch (const std::exception& e) {
      std::lock_guard<std::mutex> lock(error_mutex);
      if (first_error.empty()) first_error = e.what();
    }
  };

  std::vector<MatD> inputs(input_keys.size()), targets(target_keys.size());
  {
    Progress bar(opt.label + ": references", input_keys.size() + target_keys.size(), opt.progress);
    const auto ni = static_cast<std::ptrdiff_t>(input_keys.size());
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
    for (std::ptrdiff_t k = 0; k < ni; ++k) {
      guarded([&] {
        const auto& c = plan.cases[input_example[static_cast<std::size_t>(k)]];
        inputs[static_cast<std::size_t>(k)] = make_matrix(parse_spectrum(c.spectrum), c.rows, c.cols, c.seed);
      });
      bar.advance();
    }
    if (!first_error.empty()) throw std::runtime_error(first_error);
    const auto nt = static_cast<std::ptrdiff_t>(target_keys.size());
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
    for (std::ptrdiff_t k = 0; k < nt; ++k) {
      guarded([&] {
        const auto& c = plan.cases[target_example[static_cast<std::size_t>(k)]];
        targets[static_cast<std::size_t>(k)] = target_result(natural_target(c.strategy), *backend,
                                                             inputs[input_at.at(input_key(c))], c.head_dim, c.ns);
      });
      bar.advance();
    }
    if (!first_error.empty()) throw std::runtime_error(first_error);
  }

  std::mutex write_mutex;
  {
    Progress bar(opt.label + ": cases", pending.size(), opt.progress);
    const auto np = static_cast<std::ptrdiff_t>(pending.size());
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
    for (std::ptrdiff_t k = 0; k < np; ++k) {
      const std::size_t i = pending[static_cast<std::size_t>(k)];
      const auto& c = plan.cases[i];
      guarded([&] {
        auto row = run_case(c, *backend, inputs[input_at.at(input_key(c))], targets[target_at.at(target_key(c))]);
        std::lock_guard<std::mutex> lock(write_mutex);
        if (file) file->append(csv_line(row));  // completion order while running; case order at the end
        rows[i] = std::move(row);
      });
      bar.advance();
    }
  }
  if (!first_error.empty())
    throw std::runtime_error(first_error + (opt.out.empty() ? "" : " (the cases completed so far are in " + opt.out +
                                                                       "; fix the cause and rerun with --resume)"));
  outcome.ran = pending.size();

  if (file) {
    file.reset();
    std::string text = header_line;
    for (const auto& r : rows) text += csv_line(r);
    write_file_atomically(opt.out, text);
  }
  outcome.rows = std::move(rows);
  outcome.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return outcome;
}

const std::string& field(const std::vector<std::string>& row, const std::string& column) {
  const auto it = std::find(kHeader.begin(), kHeader.end(), column);
  if (it == kHeader.end()) throw std::out_of_range("no sweep column '" + column + "'");
  return row.at(static_cast<std::size_t>(it - kHeader.begin()));
}

double number(const std::vector<std::string>& row, const std::string& column) { return std::stod(field(row, column)); }

nlohmann::json row_json(const std::vector<std::string>& fields) {
  static const std::set<std::string> text = {"spectrum", "kernel", "dtype", "accumulate", "products", "coeffs", "strategy", "target",
                                             "reduction_order"};
  nlohmann::json j = nlohmann::json::object();
  for (std::size_t i = 0; i < kHeader.size() && i < fields.size(); ++i) {
    const std::string& name = kHeader[i];
    const std::string& v = fields[i];
    if (text.count(name)) {
      j[name] = v;
    } else if (name == "bit_identical") {
      j[name] = v == "true";
    } else if (name == "rel_diff_ranks") {
      nlohmann::json a = nlohmann::json::array();
      std::size_t at = 0;
      while (at <= v.size()) {
        const std::size_t semi = std::min(v.find(';', at), v.size());
        const std::string part = v.substr(at, semi - at);
        if (part == "-" || part.empty()) a.push_back(nullptr);
        else a.push_back(std::stod(part));
        at = semi + 1;
      }
      j[name] = a;
    } else if (name == "rel_diff_mean" || name == "rel_diff_max" || name == "cosine" || name == "norm_ratio" ||
               name == "seconds") {
      const double d = std::stod(v);
      j[name] = std::isfinite(d) ? nlohmann::json(d) : nlohmann::json(v);
    } else {
      j[name] = static_cast<std::int64_t>(std::stoll(v));
    }
  }
  return j;
}

}  // namespace nsv::cli
