#include "nsv/engine/sweep_engine.hpp"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <unordered_map>

#include "nsv/backend.hpp"
#include "nsv/spectra.hpp"
#include "nsv/engine/progress.hpp"
#include "nsv/engine/sweep_resume.hpp"

namespace nsv::engine {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Runs fn(0..n-1) over `threads` threads, one item at a time, advancing the bar after each.
// Returns the first error an item threw ("" when none did); the other items still run.
std::string parallel_for(std::size_t n, int threads, Progress& bar, const std::function<void(std::size_t)>& fn) {
  std::mutex error_mutex;
  std::string first_error;
  const auto count = static_cast<std::ptrdiff_t>(n);
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
  for (std::ptrdiff_t k = 0; k < count; ++k) {
    try {
      fn(static_cast<std::size_t>(k));
    } catch (const std::exception& e) {
      std::lock_guard<std::mutex> lock(error_mutex);
      if (first_error.empty()) first_error = e.what();
    }
    bar.advance();
  }
  return first_error;
}

// ---- references: the inputs and targets the cases share, each computed once ------------------

std::string input_key(const SweepCase& c) {
  return std::to_string(c.rows) + "x" + std::to_string(c.cols) + "|" + c.spectrum + "|" + std::to_string(c.seed);
}

std::string target_key(const SweepCase& c) {
  const Target t = natural_target(c.strategy);
  return input_key(c) + "|" + std::string(kernel_name(c.ns.kernel)) + "|" + std::string(dtype_name(c.ns.dtype)) + "|" +
         std::to_string(c.ns.steps) + "|" + c.ns.coeffs.name + "|" + std::string(target_name(t)) + "|" +
         (t == Target::per_head ? std::to_string(c.head_dim) : "0");
}

// Matrices keyed by a text, each computed from the first case that needs it.
struct SharedMatrices {
  std::unordered_map<std::string, std::size_t> at;
  std::vector<std::size_t> example;  // a case that needs matrix i
  std::vector<MatD> matrices;

  void need(const std::string& key, std::size_t case_index) {
    if (at.emplace(key, example.size()).second) example.push_back(case_index);
  }
  const MatD& of(const std::string& key) const { return matrices[at.at(key)]; }
};

struct References {
  SharedMatrices inputs, targets;
  const MatD& input(const SweepCase& c) const { return inputs.of(input_key(c)); }
  const MatD& target(const SweepCase& c) const { return targets.of(target_key(c)); }
};

// A matrix as bytes, for the processes of a distributed sweep: rows, cols, the row-major values.
std::string matrix_bytes(const MatD& m) {
  const std::int64_t shape[2] = {m.rows(), m.cols()};
  std::string out(sizeof shape + sizeof(double) * static_cast<std::size_t>(m.size()), '\0');
  std::memcpy(out.data(), shape, sizeof shape);
  std::memcpy(out.data() + sizeof shape, m.data(), sizeof(double) * static_cast<std::size_t>(m.size()));
  return out;
}

MatD matrix_from_bytes(const std::string& bytes) {
  std::int64_t shape[2];
  std::memcpy(shape, bytes.data(), sizeof shape);
  MatD m(shape[0], shape[1]);
  std::memcpy(m.data(), bytes.data() + sizeof shape, sizeof(double) * static_cast<std::size_t>(m.size()));
  return m;
}

// A row's fields as bytes (each length-prefixed, so no field content can be mistaken for a
// separator), and back.
std::string row_bytes(const SweepRow& row) {
  std::string out;
  for (const std::string& f : encode_sweep_row(row)) {
    const std::uint64_t n = f.size();
    out.append(reinterpret_cast<const char*>(&n), sizeof n).append(f);
  }
  return out;
}

SweepRow row_from_bytes(const std::string& bytes) {
  std::vector<std::string> fields;
  for (std::size_t at = 0; at < bytes.size();) {
    std::uint64_t n = 0;
    std::memcpy(&n, bytes.data() + at, sizeof n);
    fields.push_back(bytes.substr(at + sizeof n, n));
    at += sizeof n + n;
  }
  return decode_sweep_row(fields);
}

void compute(SharedMatrices& m, int threads, SweepProcesses* processes, Progress& bar,
             const std::function<MatD(std::size_t)>& make) {
  m.matrices.resize(m.example.size());
  std::string error;
  if (processes) {
    std::vector<std::string> bytes(m.example.size());
    error = processes->run(
        m.example.size(), [&](std::size_t i) { return matrix_bytes(make(m.example[i])); },
        [&](std::size_t i, std::string&& b) {
          bytes[i] = std::move(b);
          bar.advance();
        });
    if (error.empty()) {
      processes->share(bytes);
      for (std::size_t i = 0; i < bytes.size(); ++i) m.matrices[i] = matrix_from_bytes(bytes[i]);
    }
  } else {
    error = parallel_for(m.example.size(), threads, bar, [&](std::size_t i) { m.matrices[i] = make(m.example[i]); });
  }
  if (!error.empty()) throw std::runtime_error(error);
}

References compute_references(const SweepPlan& plan, const std::vector<std::size_t>& pending, const Backend& backend,
                              int threads, const SweepRunOptions& opt) {
  References refs;
  for (std::size_t i : pending) {
    refs.inputs.need(input_key(plan.cases[i]), i);
    refs.targets.need(target_key(plan.cases[i]), i);
  }
  Progress bar(opt.label + ": references", refs.inputs.example.size() + refs.targets.example.size(), opt.progress);
  compute(refs.inputs, threads, opt.processes, bar, [&](std::size_t i) {
    const SweepCase& c = plan.cases[i];
    return make_matrix(parse_spectrum(c.spectrum), c.rows, c.cols, c.seed);
  });
  compute(refs.targets, threads, opt.processes, bar, [&](std::size_t i) {
    const SweepCase& c = plan.cases[i];
    return target_result(natural_target(c.strategy), backend, refs.input(c), c.head_dim, c.ns);
  });
  return refs;
}

// ---- cases ------------------------------------------------------------------------------------

// The row of one case: its parameters and the comparison of the strategy's result with its target.
SweepRow run_case(const SweepCase& c, const Backend& b, const MatD& g, const MatD& target) {
  const auto t0 = std::chrono::steady_clock::now();
  const Layout layout = c.layout();
  const ShardedMatrix m = shard_matrix(g, layout, c.axis == 0 ? c.head_dim : 0);
  const StrategyRun run = run_strategy(c.strategy, b, m, c.ns, {c.order, DType::fp32});
  const Comparison cmp = compare_with_target(run, target, layout);
  SweepRow row = c.parameters();
  row.seconds = seconds_since(t0);
  row.rel_diff_mean = cmp.rel_diff_mean;
  row.rel_diff_max = cmp.rel_diff_max;
  int counted = 0;
  for (const auto& r : cmp.ranks) {
    if (r.rows * r.cols > 0) {
      row.cosine += r.cosine;
      row.norm_ratio += r.norm_ratio;
      ++counted;
      row.rel_diff_ranks.emplace_back(r.rel_diff);
    } else {
      row.rel_diff_ranks.emplace_back(std::nullopt);  // a rank holding nothing
    }
    row.bytes_sent = std::max(row.bytes_sent, r.traffic.bytes_sent);
    row.bytes_received = std::max(row.bytes_received, r.traffic.bytes_received);
    row.messages = std::max(row.messages, r.traffic.messages);
    row.flops = std::max(row.flops, r.flops);
    row.extra_memory = std::max(row.extra_memory, r.extra_memory);
  }
  if (counted) {
    row.cosine /= counted;
    row.norm_ratio /= counted;
  }
  for (int k : cmp.collectives) row.collectives += k;
  // Bits can agree on NaN too; a case whose outputs are not finite is not called bit-identical.
  row.bit_identical = cmp.bit_identical && std::isfinite(cmp.rel_diff_max);
  return decode_sweep_row(encode_sweep_row(row));  // as the CSV holds it, so it equals the row a resume reads back
}

void run_cases(const SweepPlan& plan, const std::vector<std::size_t>& pending, const References& refs,
               const Backend& backend, int threads, const SweepRunOptions& opt, AppendFile* file,
               std::vector<std::optional<SweepRow>>& rows) {
  std::mutex write_mutex;
  Progress bar(opt.label + ": cases", pending.size(), opt.progress);
  const auto keep = [&](std::size_t k, SweepRow&& row) {
    if (file) file->append(sweep_csv_line(row));  // completion order while running; case order at the end
    rows[plan.cases[pending[k]].index] = std::move(row);
  };
  const auto run_one = [&](std::size_t k) {
    const SweepCase& c = plan.cases[pending[k]];
    return run_case(c, backend, refs.input(c), refs.target(c));
  };
  const std::string error =
      opt.processes ? opt.processes->run(
                          pending.size(), [&](std::size_t k) { return row_bytes(run_one(k)); },
                          [&](std::size_t k, std::string&& b) {
                            keep(k, row_from_bytes(b));
                            bar.advance();
                          })
                    : parallel_for(pending.size(), threads, bar, [&](std::size_t k) {
                        SweepRow row = run_one(k);
                        std::lock_guard<std::mutex> lock(write_mutex);
                        keep(k, std::move(row));
                      });
  if (!error.empty())
    throw std::runtime_error(error + (opt.out.empty() ? "" : " (the cases completed so far are in " + partial_sweep_path(opt.out) +
                                                                  "; fix the cause and rerun with --resume)"));
}

}  // namespace

SweepOutcome run_sweep(const SweepSpec& spec, const SweepRunOptions& opt) {
  const auto t0 = std::chrono::steady_clock::now();
  const SweepPlan plan = plan_sweep(spec);  // every input check happens here, before any file is touched
  if (opt.processes) {  // every process must run this sweep into this file, or none does
    nlohmann::json same = spec.to_json();
    same["out"] = opt.out;
    same["resume"] = opt.resume;
    nlohmann::json& schedules = same["coefficients"];  // a schedule read from a file: its values, not its name
    for (const SweepCase& c : plan.cases)
      if (!schedules.contains(c.ns.coeffs.name))
        for (const Coeffs& t : c.ns.coeffs.triples) schedules[c.ns.coeffs.name].push_back({t.a, t.b, t.c});
    opt.processes->require_same_plan(same);
  }
  SweepOutcome outcome;
  outcome.skipped = plan.skipped;
  const bool writer = opt.processes == nullptr || opt.processes->is_writer();

  // Resume: the rows the file already holds (the writer's file; the other processes learn which
  // cases are pending from it).
  std::optional<SweepFile> file;
  std::vector<std::optional<SweepRow>> rows(plan.cases.size());
  if (!opt.out.empty() && writer) {
    file = open_sweep_file(opt.out, opt.resume, plan);
    rows = std::move(file->rows);
    outcome.resumed = file->resumed;
    outcome.dropped_partial_bytes = file->dropped_partial_bytes;
  }
  std::vector<std::size_t> pending;
  for (const auto& c : plan.cases)
    if (!rows[c.index]) pending.push_back(c.index);
  if (opt.processes) opt.processes->share(pending);

  const auto backend = make_cpu_backend();
  // Over processes, each runs one item at a time on one thread.
  outcome.processes = opt.processes ? opt.processes->count() : 1;
  outcome.threads = opt.processes ? 1 : opt.threads > 0 ? opt.threads : omp_get_max_threads();
  if (opt.processes) omp_set_num_threads(1);
  omp_set_max_active_levels(1);  // each case single-threaded: the library's inner loops run on one thread
  const References refs = compute_references(plan, pending, *backend, outcome.threads, opt);
  run_cases(plan, pending, refs, *backend, outcome.threads, opt, file ? file->file.get() : nullptr, rows);
  outcome.ran = pending.size();
  if (!writer) return outcome;  // the writer holds the rows and the file

  // Finalize: every row in case order, in memory and in the file.
  for (auto& r : rows) outcome.rows.push_back(std::move(*r));
  if (file) {
    file.reset();  // closes the append handle
    finish_sweep_file(opt.out, outcome.rows);
  }
  outcome.seconds = seconds_since(t0);
  return outcome;
}

}  // namespace nsv::engine
