// nsv sweep: the cartesian product of shapes x TP degrees x split axes x kernels x strategies x
// dtypes x steps x spectra x seeds (x reduction orders x coefficient schedules), run in parallel
// over cases, one CSV row per case (see nsv/engine/sweep_engine.hpp for the file contract and
// resume, sweep_row.hpp for the columns).
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli_checks.hpp"
#include "cli_common.hpp"
#include "commands.hpp"
#include "nsv/config_schema.hpp"
#include "nsv/engine/sweep_engine.hpp"
#include "nsv/engine/sweep_processes.hpp"
#include "nsv/engine/sweep_resume.hpp"

namespace nsv::cli {
namespace {

struct SweepCommand {
  engine::SweepSpec spec;
  std::string out;
  bool resume = false, json = false, quiet = false;
  int threads = 0;

  static std::size_t skipped_total(const engine::SweepOutcome& r) {
    std::size_t n = 0;
    for (const auto& [reason, k] : r.skipped) n += k;
    return n;
  }

  void print_json(const engine::SweepOutcome& r) const {
    nlohmann::json cases = nlohmann::json::array();
    for (const auto& row : r.rows) cases.push_back(engine::sweep_row_json(row));
    nlohmann::json skipped = nlohmann::json::object();
    for (const auto& [reason, n] : r.skipped) skipped[reason] = n;
    const nlohmann::json j = {{"parameters", spec.to_json()},
                              {"summary",
                               {{"cases", r.rows.size()}, {"ran", r.ran}, {"resumed", r.resumed}, {"skipped", skipped},
                                {"seconds", r.seconds}, {"threads", r.threads}, {"processes", r.processes}, {"out", out}}},
                              {"cases", cases}};
    std::printf("%s\n", j.dump(2).c_str());
  }

  static void print_table(const std::vector<engine::SweepRow>& rows) {
    std::printf("%9s %-12s %4s %-8s %-5s %5s %3s %4s %-22s %-8s %12s %12s %9s %10s %s\n", "shape", "spectrum", "seed",
                "kernel", "dtype", "steps", "tp", "axis", "strategy", "order", "rel_diff", "max", "cosine", "norm_ratio",
                "bit-identical");
    for (const auto& row : rows)
      std::printf("%9s %-12s %4llu %-8s %-5s %5d %3d %4d %-22s %-8s %12s %12s %9.6f %10.6f %s\n",
                  (std::to_string(row.rows) + "x" + std::to_string(row.cols)).c_str(), row.spectrum.c_str(),
                  static_cast<unsigned long long>(row.seed), kernel_name(row.kernel).data(), dtype_name(row.dtype).data(),
                  row.steps, row.tp, row.axis, strategy_name(row.strategy).data(),
                  reduction_order_name(row.reduction_order).data(), engine::sweep_field(row, "rel_diff_mean").c_str(),
                  engine::sweep_field(row, "rel_diff_max").c_str(), row.cosine, row.norm_ratio, row.bit_identical ? "yes" : "no");
  }

  void run() const {
    if (resume && out.empty()) throw std::invalid_argument("--resume needs --out FILE.csv (the file to continue)");
    std::vector<std::pair<std::string, std::string>> inputs;
    for (const auto& sp : spec.spectra)
      if (sp.rfind("file:", 0) == 0) inputs.emplace_back("--spectrum", sp.substr(5));
    for (const auto& c : spec.coeffs) inputs.emplace_back("--coeffs", c);
    refuse_output_over_inputs("--out", out, inputs);
    refuse_output_over_inputs("--out", engine::partial_sweep_path(out), inputs);
    engine::SweepRunOptions opt;
    opt.out = out;
    opt.resume = resume;
    opt.progress = !quiet;
    opt.threads = threads;
    const auto processes = engine::mpi_sweep_processes();  // under mpirun: cases spread over the job's processes
    opt.processes = processes.get();
    const engine::SweepOutcome r = engine::run_sweep(spec, opt);
    if (processes && !processes->is_writer()) return;  // world rank 0 reports
    if (json) {
      print_json(r);
      return;
    }
    if (out.empty()) print_table(r.rows);
    std::printf("%zu cases: %zu run, %zu resumed from %s; %zu skipped as inapplicable%s\n", r.rows.size(), r.ran,
                r.resumed, out.empty() ? "-" : out.c_str(), skipped_total(r), r.skipped.empty() ? "" : ":");
    for (const auto& [reason, n] : r.skipped) std::printf("  %6zu  %s\n", n, reason.c_str());
    if (r.dropped_partial_bytes > 0)
      std::printf("dropped a partial last line (%zu bytes) left by an interrupted run\n", r.dropped_partial_bytes);
    const std::string where = r.processes > 1 ? std::to_string(r.processes) + " MPI processes" : std::to_string(r.threads) + " thread(s)";
    std::printf("%.1f s on %s%s\n", r.seconds, where.c_str(), out.empty() ? "" : ("; wrote " + out).c_str());
  }
};

}  // namespace

void add_sweep_command(CLI::App& app) {
  auto st = std::make_shared<SweepCommand>();
  auto* cmd = app.add_subcommand(
      "sweep",
      "Cartesian product of shapes x tp x axes x kernels x strategies x dtypes x steps x spectra x seeds, "
      "parallel over cases; one CSV row per case, resumable");
  auto& s = st->spec;
  cmd->add_option("--shapes", s.shapes, "ROWSxCOLS list, e.g. 256x256,512x1024")->delimiter(',')->capture_default_str();
  cmd->add_option("--tp", s.tps, "tensor-parallel degrees, e.g. 1,2,4,8")->delimiter(',')->check(integer_in(1, 4096))->capture_default_str();
  cmd->add_option("--axis", s.axes, "split axes: 0 = rows (column-parallel), 1 = cols (row-parallel)")->delimiter(',')->check(integer_in(0, 1))->capture_default_str();
  cmd->add_option("--kernel", s.kernels, choices_text<Kernel>(","))->delimiter(',')->capture_default_str();
  cmd->add_option("--strategy", s.strategies,
                  choices_text<Strategy>(",") + " or " + std::string(engine::kEveryStrategy) +
                      " (per_head needs --heads; skipped on axis 1)")->delimiter(',')->capture_default_str();
  cmd->add_option("--dtype", s.dtypes, "compute dtypes: " + choices_text<DType>(","))->delimiter(',')->capture_default_str();
  cmd->add_option("--steps", s.steps, "NS step counts, e.g. 1,3,5")->delimiter(',')->check(integer_in(0, 1000))->capture_default_str();
  cmd->add_option("--spectrum", s.spectra, "gaussian,lowrank:R,powerlaw:ALPHA,file:PATH (a file applies to its own shape)")
      ->delimiter(',')->capture_default_str();
  cmd->add_option("--seeds", s.seeds, "N: seeds 0..N-1 of the generated matrices")->check(integer_in(1, kMaxSweepSeeds))->capture_default_str();
  cmd->add_option("--reduction-order", s.orders,
                  "all-reduce orders: " + choices_text<ReductionOrder>(",") + " (only the all-reduce strategies vary with it)")
      ->delimiter(',')->capture_default_str();
  cmd->add_option("--coeffs", s.coeffs, "coefficient schedules: " + schedule_choices(",") + ",FILE")->delimiter(',')->capture_default_str();
  cmd->add_option("--fused", s.fused,
                  "fused projections cut as AutoTP cuts them (dim-0 cases only): none,qkv:glm,qkv:qwen,qkv:phi3,qkv:bloom,"
                  "qkv:bigcode ([Q;K;V] of --heads query and --kv-heads KV heads),gate_up ([gate;up], no heads)")
      ->delimiter(',')->capture_default_str();
  cmd->add_option("--heads", s.heads, "attention heads along the split axis: head-aligned shards, enables per_head")->check(integer_in(1, kMaxCount));
  cmd->add_option("--kv-heads", s.kv_heads, "KV heads (GQA): shards cut on KV-group boundaries (default: --heads)")->check(integer_in(1, kMaxCount));
  cmd->add_option("--grain", s.grain, "tp_grain_size of the grain rule (1 training, 64 inference)")->check(integer_in(1, kMaxCount))->capture_default_str();
  cmd->add_option("--accumulate", s.accumulate, "GEMM accumulation: " + choices_text<Accumulate>(" | "))->capture_default_str();
  cmd->add_option("--products", s.products, "n x n products: symmetric (fast) | full (PyTorch's bits)")
      ->check(CLI::IsMember(choices_of<Products>()))->capture_default_str();
  cmd->add_option("--restart-at", s.restart_at, "gram kernel: the steps it restarts before, e.g. 2 or 2,4,6 (none: never)")
      ->check(restart_list())->capture_default_str();
  cmd->add_option("--out", st->out,
                  "CSV file: one row per case, in case order, written when the sweep completes (rows are appended to "
                  "FILE.partial as cases finish; a failed or killed run leaves FILE as it was)");
  cmd->add_flag("--resume", st->resume,
                "continue an interrupted sweep: keep the rows already in --out and --out.partial, drop a partial last line, run the rest");
  cmd->add_option("--threads", st->threads, "OpenMP threads over cases (default: OMP_NUM_THREADS or all cores)")->check(thread_count());
  cmd->add_flag("--json", st->json, "print every case and a summary as JSON on stdout");
  cmd->add_flag("--quiet", st->quiet, "no progress bar");
  cmd->callback([st] { st->run(); });
}

}  // namespace nsv::cli
