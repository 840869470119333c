// nsv report: the default job. Runs the standard sweeps, the seed tables, the real-gradient Muon
// step, the reduction-order amplification study and the audits of the bundled model configs,
// and writes reports/ (README.md with tables and explanations, CSV/JSON beside it, figures from
// tools/plot_report.py).
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <stdexcept>

#include "amplification.hpp"
#include "cli_common.hpp"
#include "commands.hpp"
#include "csv.hpp"
#include "nsv/npy.hpp"
#include "step_engine.hpp"
#include "sweep_engine.hpp"

namespace nsv::cli {
namespace fs = std::filesystem;
namespace {

// ---- small formatting helpers ------------------------------------------------------------------

std::string rel(double v) {
  if (v == 0.0) return "0 (exact)";
  if (std::abs(v) < 1e-3) return fmt::format("{:.2e}", v);
  return fmt::format("{:.4f}", v);
}
std::string f4(double v) { return fmt::format("{:.4f}", v); }
std::string f3(double v) { return fmt::format("{:.3f}", v); }
std::string sci(double v) { return fmt::format("{:.2e}", v); }
std::string bytes_text(double b) {
  if (b == 0) return "0";
  if (b < 1024) return fmt::format("{:.0f} B", b);
  if (b < 1024.0 * 1024) return fmt::format("{:.1f} KiB", b / 1024);
  return fmt::format("{:.2f} MiB", b / 1024 / 1024);
}

struct MdTable {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::string str() const {
    std::string s = "|";
    for (const auto& h : header) s += " " + h + " |";
    s += "\n|";
    for (std::size_t i = 0; i < header.size(); ++i) s += i == 0 ? "---|" : "---:|";
    s += "\n";
    for (const auto& r : rows) {
      s += "|";
      for (const auto& c : r) s += " " + c + " |";
      s += "\n";
    }
    return s;
  }
};

struct Stats {
  double mean = 0, sd = 0, min = 0, max = 0;
  std::size_t n = 0;
};
Stats stats(const std::vector<double>& v) {
  Stats s;
  s.n = v.size();
  if (v.empty()) return s;
  s.min = *std::min_element(v.begin(), v.end());
  s.max = *std::max_element(v.begin(), v.end());
  for (double x : v) s.mean += x;
  s.mean /= static_cast<double>(v.size());
  for (double x : v) s.sd += (x - s.mean) * (x - s.mean);
  s.sd = v.size() > 1 ? std::sqrt(s.sd / static_cast<double>(v.size() - 1)) : 0.0;
  return s;
}

std::string shell_quote(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:,+") == std::string::npos)
    return s;
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// The command line of this process, as the user typed it (from /proc/self/cmdline).
std::string own_command_line() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string out;
  std::size_t at = 0;
  while (at < all.size()) {
    const std::size_t end = all.find('\0', at);
    const std::string arg = all.substr(at, end == std::string::npos ? std::string::npos : end - at);
    out += (out.empty() ? "" : " ") + shell_quote(arg);
    if (end == std::string::npos) break;
    at = end + 1;
  }
  return out.empty() ? "nsv report" : out;
}

// Runs a shell command, returns its exit status and combined output.
int capture(const std::string& command, std::string& output) {
  output.clear();
  FILE* p = ::popen((command + " 2>&1").c_str(), "r");
  if (!p) return -1;
  std::array<char, 4096> buf{};
  while (std::fgets(buf.data(), buf.size(), p)) output += buf.data();
  const int status = ::pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// ---- sweep rows, parsed -------------------------------------------------------------------------

struct Row {
  std::int64_t rows = 0, cols = 0;
  std::string spectrum, kernel, dtype, strategy;
  int seed = 0, steps = 0, tp = 0, axis = 0;
  double rd = 0, rd_max = 0, cosine = 0, ratio = 0;
  double bytes_sent = 0, bytes_received = 0, messages = 0, flops = 0, extra = 0, collectives = 0;
  bool bit = false;
  std::vector<double> ranks;
  std::string shape() const { return std::to_string(rows) + "x" + std::to_string(cols); }
};

std::vector<Row> parse_rows(const std::vector<SweepRow>& sweep) {
  std::vector<Row> out;
  for (const auto& f : sweep) {
    Row r;
    r.rows = f.rows;
    r.cols = f.cols;
    r.spectrum = f.spectrum;
    r.kernel = kernel_name(f.kernel);
    r.dtype = dtype_name(f.dtype);
    r.strategy = strategy_name(f.strategy);
    r.seed = static_cast<int>(f.seed);
    r.steps = f.steps;
    r.tp = f.tp;
    r.axis = f.axis;
    r.rd = f.rel_diff_mean;
    r.rd_max = f.rel_diff_max;
    r.cosine = f.cosine;
    r.ratio = f.norm_ratio;
    r.bytes_sent = static_cast<double>(f.bytes_sent);
    r.bytes_received = static_cast<double>(f.bytes_received);
    r.messages = static_cast<double>(f.messages);
    r.flops = static_cast<double>(f.flops);
    r.extra = static_cast<double>(f.extra_memory);
    r.collectives = f.collectives;
    r.bit = f.bit_identical;
    for (const auto& rank : f.rel_diff_ranks) r.ranks.push_back(rank.value_or(NAN));
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<double> collect(const std::vector<Row>& rows, const std::function<bool(const Row&)>& keep,
                            const std::function<double(const Row&)>& value = [](const Row& r) { return r.rd; }) {
  std::vector<double> v;
  for (const auto& r : rows)
    if (keep(r)) v.push_back(value(r));
  return v;
}

// ---- the report -----------------------------------------------------------------------------------

struct Plan {
  SweepSpec main, seed, aspect, spectrum;
  AmplificationSpec amp;
  std::vector<int> step_tps;
};

Plan make_plan(bool quick) {
  Plan p;
  p.main.shapes = {"256x256", "512x1024", "1024x256", "128x1024"};
  p.main.tps = {1, 2, 4, 8};
  p.main.axes = {0, 1};
  p.main.kernels = {"standard", "gram"};
  p.main.strategies = {"shard", "gather", "per_head", "gram_allreduce", "gram_restart_allreduce", "owner"};
  p.main.spectra = {"gaussian", "lowrank:16", "powerlaw:1"};
  p.main.heads = 8;
  p.main.seeds = quick ? 1 : 2;
  if (quick) {
    p.main.kernels = {"gram"};
    p.main.spectra = {"gaussian", "lowrank:16"};
  }

  p.seed.shapes = {"256x256", "512x1024"};
  p.seed.tps = {2, 4};
  p.seed.axes = {0, 1};
  p.seed.kernels = {"standard", "gram"};
  p.seed.strategies = {"shard"};
  p.seed.spectra = {"gaussian"};
  p.seed.seeds = quick ? 2 : 5;

  p.aspect.shapes = {"2048x256", "1024x256", "512x256", "256x256", "256x512", "256x1024", "256x2048"};
  p.aspect.tps = quick ? std::vector<int>{2, 4} : std::vector<int>{2, 4, 8};
  p.aspect.axes = {0, 1};
  p.aspect.kernels = {"gram"};
  p.aspect.strategies = {"shard"};
  p.aspect.seeds = quick ? 1 : 3;

  p.spectrum.shapes = {"512x1024"};
  p.spectrum.tps = quick ? std::vector<int>{2, 4} : std::vector<int>{2, 4, 8};
  p.spectrum.axes = {0, 1};
  p.spectrum.kernels = {"gram"};
  p.spectrum.strategies = {"shard"};
  p.spectrum.spectra = {"gaussian", "lowrank:4", "lowrank:16", "lowrank:64", "powerlaw:0.5", "powerlaw:1", "powerlaw:2"};
  p.spectrum.seeds = quick ? 1 : 3;

  p.amp.seeds = quick ? 1 : 2;
  p.amp.axes = quick ? std::vector<int>{0} : std::vector<int>{0, 1};
  p.step_tps = quick ? std::vector<int>{2} : std::vector<int>{2, 4, 8};
  return p;
}

struct ReportCommand {
  std::string out_dir = "reports", grads = "fixtures/grads", models = "fixtures/models", python = "/usr/bin/python3",
              plot_script = "tools/plot_report.py";
  bool quick = false, quiet = false, no_plots = false, resume = false;
  int threads = 0;
  CLI::App* app = nullptr;

  std::string md;          // README.md being built
  nlohmann::json summary;  // report.json
  std::vector<std::pair<std::string, double>> timings;

  void section_time(const std::string& what, std::chrono::steady_clock::time_point t0) {
    timings.emplace_back(what, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    if (!quiet) std::fprintf(stderr, "nsv report: %s done in %.1f s\n", what.c_str(), timings.back().second);
  }

  SweepOutcome sweep(const SweepSpec& spec, const std::string& name) {
    SweepRunOptions opt;
    opt.out = (fs::path(out_dir) / (name + ".csv")).string();
    opt.resume = resume;
    opt.progress = !quiet;
    opt.threads = threads;
    opt.label = name;
    return run_sweep(spec, opt);
  }

  bool plots_ok = false;

  std::string figure(const std::string& stem, const std::string& alt) const {
    if (!plots_ok || !fs::exists(fs::path(out_dir) / "figures" / (stem + ".png"))) return "";
    return fmt::format("\n![{}](figures/{}.png)\n\n*Figure: `figures/{}.png` (also `.svg`).*\n", alt, stem, stem);
  }

  void run() {
    const auto t_all = std::chrono::steady_clock::now();
    const Plan plan = make_plan(quick);
    // Check every input before writing anything.
    for (const SweepSpec* s : {&plan.main, &plan.seed, &plan.aspect, &plan.spectrum}) plan_sweep(*s);
    fs::create_directories(out_dir);
    if (!fs::is_directory(out_dir)) throw std::invalid_argument("--out-dir " + out_dir + " is not a folder");
    plan_amp_ = plan.amp;
    plan_amp_.threads = threads;
    plan_amp_.progress = !quiet;

    auto t0 = std::chrono::steady_clock::now();
    const SweepOutcome main = sweep(plan.main, "sweep");
    section_time("main sweep (" + std::to_string(main.rows.size()) + " cases)", t0);
    t0 = std::chrono::steady_clock::now();
    const SweepOutcome seed = sweep(plan.seed, "seed_sweep");
    const SweepOutcome aspect = sweep(plan.aspect, "aspect_sweep");
    const SweepOutcome spectrum = sweep(plan.spectrum, "spectrum_sweep");
    section_time("seed, aspect and spectrum sweeps (" +
                     std::to_string(seed.rows.size() + aspect.rows.size() + spectrum.rows.size()) + " cases)",
                 t0);

    t0 = std::chrono::steady_clock::now();
    const auto amp = run_amplification(plan_amp_);
    {
      std::string text = csv_line(amplification_header());
      for (const auto& r : amp) text += csv_line(amplification_fields(plan_amp_, r));
      write_file_atomically((fs::path(out_dir) / "amplification.csv").string(), text);
    }
    section_time("reduction-order amplification study", t0);

    t0 = std::chrono::steady_clock::now();
    const bool have_grads = fs::is_directory(grads) && available_grad_steps(grads) >= 1;
    std::vector<std::pair<StepSpec, StepOutcome>> steps;
    if (have_grads) {
      for (int tp : plan.step_tps)
        for (const char* scale : {"global", "local"})
          for (Strategy s : kAllStrategies) {
            StepSpec spec;
            spec.grads_dir = grads;
            spec.tp = tp;
            spec.strategy = std::string(strategy_name(s));
            spec.muon.lr = 0.05;
            spec.muon.beta = 0.95;
            spec.muon.scale_from = parse_scale_from(scale);
            steps.emplace_back(spec, run_step(spec));
          }
      write_step_files(steps);
    }
    section_time("real-gradient Muon step", t0);

    t0 = std::chrono::steady_clock::now();
    const std::string audits = run_audits();
    section_time("model audits", t0);

    // Figures read the CSV/JSON files written above; the README then links whichever exist.
    t0 = std::chrono::steady_clock::now();
    const std::string plot_note = run_plots();
    plots_ok = plot_note.empty();
    section_time("figures", t0);

    const auto rows_main = parse_rows(main.rows), rows_seed = parse_rows(seed.rows), rows_aspect = parse_rows(aspect.rows),
               rows_spectrum = parse_rows(spectrum.rows);
    write_readme(plan, main, rows_main, rows_seed, rows_aspect, rows_spectrum, amp, steps, have_grads, audits, plot_note,
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - t_all).count());
    std::printf("wrote %s/README.md (%zu + %zu + %zu + %zu sweep cases) in %.1f s\n", out_dir.c_str(), main.rows.size(),
                seed.rows.size(), aspect.rows.size(), spectrum.rows.size(),
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t_all).count());
  }

  AmplificationSpec plan_amp_;

  void write_step_files(const std::vector<std::pair<StepSpec, StepOutcome>>& steps) {
    nlohmann::json all = nlohmann::json::array();
    std::string csv = csv_line({"param", "rows", "cols", "role", "split_axis", "tp", "strategy_requested", "strategy_used",
                                "scale_from", "rel_diff", "cosine", "norm_tp1", "norm_tpN", "norm_ratio", "bit_identical",
                                "rel_diff_vs_whole_tp1", "bytes_sent_max", "flops_max", "note"});
    for (const auto& [spec, out] : steps) {
      all.push_back(out.to_json(spec));
      for (const auto& r : out.steps[0])
        csv += csv_line({r.param.name, std::to_string(r.param.rows), std::to_string(r.param.cols), role_name(r.param.role),
                         std::to_string(r.param.split_axis), std::to_string(spec.tp), spec.strategy, r.strategy,
                         std::string(scale_from_name(spec.muon.scale_from)), fmt::format("{:.9g}", r.rel_diff),
                         fmt::format("{:.9g}", r.cosine), fmt::format("{:.9g}", r.norm_1), fmt::format("{:.9g}", r.norm_n),
                         fmt::format("{:.9g}", r.norm_ratio), r.bit_identical ? "true" : "false",
                         fmt::format("{:.9g}", r.rel_diff_vs_whole), std::to_string(r.bytes_sent), std::to_string(r.flops),
                         r.note});
    }
    write_file_atomically((fs::path(out_dir) / "step.csv").string(), csv);
    write_file_atomically((fs::path(out_dir) / "step.json").string(), all.dump(1) + "\n");
  }

  // The hook for `nsv audit` (another subcommand): runs it on every bundled config when both the
  // subcommand and configs exist, and says which is missing otherwise.
  std::string run_audits() {
    bool have_audit = false;
    try {
      have_audit = app != nullptr && app->get_subcommand("audit") != nullptr;
    } catch (const std::exception&) {
      have_audit = false;
    }
    std::vector<fs::path> configs;
    if (fs::is_directory(models))
      for (const auto& e : fs::directory_iterator(models))
        if (e.path().extension() == ".json") configs.push_back(e.path());
    std::sort(configs.begin(), configs.end());
    if (!have_audit)
      return "`nsv audit` is not available in this build, so the per-model audits were not run. Once it is, `nsv report` "
             "runs `nsv audit --config FILE --tp N --markdown` for every `" + models + "/*.json` at tp 2, 4 and 8.\n";
    if (configs.empty())
      return "No model configs in `" + models + "/` (Hugging Face `config.json` files, `*.json`), so no audits were run. "
             "Add some and rerun, or run `nsv audit --config FILE --tp N` by hand.\n";
    std::error_code ec;
    const fs::path self = fs::read_symlink("/proc/self/exe", ec);
    const std::string exe = ec ? "nsv" : self.string();
    fs::create_directories(fs::path(out_dir) / "audit");
    std::string text;
    for (const auto& cfg : configs) {
      text += fmt::format("#### {}\n\n", cfg.filename().string());
      for (int tp : {2, 4, 8}) {
        const fs::path file = fs::path(out_dir) / "audit" / fmt::format("{}_tp{}.md", cfg.stem().string(), tp);
        const std::string cmd = fmt::format("{} audit --config {} --tp {} --markdown", shell_quote(exe), shell_quote(cfg.string()), tp);
        std::string output;
        const int rc = capture(cmd, output);
        if (rc != 0) {
          text += fmt::format("- tp={}: `nsv audit` failed (exit {}): {}\n", tp, rc, trim(output).substr(0, 400));
          continue;
        }
        write_file_atomically(file.string(), output);
        // The same audit as JSON, for the step-time figure (plot_report.py: step_time_vs_tp).
        std::string json;
        if (capture(fmt::format("{} audit --config {} --tp {} --json", shell_quote(exe), shell_quote(cfg.string()), tp), json) == 0)
          write_file_atomically((fs::path(file).replace_extension(".json")).string(), json);
        text += fmt::format("- tp={}: [`audit/{}`](audit/{})\n", tp, file.filename().string(), file.filename().string());
        const auto rec = output.find("**Recommendation.**");
        if (rec != std::string::npos) {
          const auto end = output.find('\n', rec);
          text += "  " + output.substr(rec, end == std::string::npos ? std::string::npos : end - rec) + "\n";
        }
      }
      text += "\n";
    }
    return text;
  }

  std::string run_plots() {
    if (no_plots) return "Figures were not drawn (--no-plots). Draw them with `" + python + " " + plot_script + " " + out_dir + "`.";
    if (!fs::exists(plot_script))
      return "Figures were not drawn: " + plot_script + " was not found (run `nsv report` from the repository root, or pass --plot-script).";
    if (::access(python.c_str(), X_OK) != 0) return "Figures were not drawn: " + python + " is not an executable Python interpreter.";
    std::string output;
    const int rc = capture(shell_quote(python) + " " + shell_quote(plot_script) + " " + shell_quote(out_dir), output);
    if (!quiet && !output.empty()) std::fprintf(stderr, "%s", output.c_str());
    if (rc == 3) return "Figures were not drawn: " + trim(output);
    if (rc != 0) return fmt::format("Figures failed (plot_report.py exit {}): {}", rc, trim(output).substr(0, 600));
    return "";
  }

  // ---- README ----------------------------------------------------------------------------------

  void write_readme(const Plan& plan, const SweepOutcome& main, const std::vector<Row>& rm, const std::vector<Row>& rs,
                    const std::vector<Row>& ra, const std::vector<Row>& rsp, const std::vector<AmplificationRow>& amp,
                    const std::vector<std::pair<StepSpec, StepOutcome>>& steps, bool have_grads, const std::string& audits,
                    const std::string& plot_note, double total_seconds) {
    std::string commit, dirty;
    if (capture("git rev-parse --short HEAD", commit) != 0) commit = "unknown (not a git checkout)";
    commit = trim(commit);
    std::string status;
    // The report's own outputs (the output folder) are not changes to the code that produced it.
    if (capture("git status --porcelain --untracked-files=no -- . " + shell_quote(":(exclude)" + out_dir), status) == 0 &&
        !trim(status).empty())
      dirty = " (with uncommitted changes in tracked files)";
    const std::string command = own_command_line();
    std::string& o = md;
    o.clear();
    o += "# nsverify report: Muon's Newton-Schulz under tensor parallelism\n\n";
    o += fmt::format("Generated by `{}` at git commit `{}`{}{}, in {:.0f} s on {} thread(s). Every number below comes from "
                     "the CSV/JSON files in this folder; rerun the command to regenerate all of it.\n\n",
                     command, commit, dirty, quick ? " (**--quick**: fewer seeds and TP degrees)" : "", total_seconds,
                     main.threads);
    if (!plot_note.empty()) o += "**Figures:** " + plot_note + "\n\n";
    o += "Question (seed issue `muon-autotp-issue.txt`): *does the update Muon applies depend on how the matrix is sharded, "
         "by how much, and which way of sharding the computation removes the dependence at what cost?* Relative difference "
         "is ||A - B||_F / ||B||_F with B the reference (the matching block of NS of the whole matrix, or the tp=1 update).\n\n";

    // ----- headline numbers
    const auto tp2g = [&](int axis) {
      return stats(collect(rs, [&](const Row& r) {
        return r.rows == 512 && r.cols == 1024 && r.tp == 2 && r.axis == axis && r.kernel == "gram";
      })).mean;
    };
    const auto exact_count = [&](const std::string& s) {
      std::size_t bit = 0, n = 0;
      for (const auto& r : rm)
        if (r.strategy == s) {
          ++n;
          bit += r.bit ? 1 : 0;
        }
      return std::pair{bit, n};
    };
    const auto [gather_bit, gather_n] = exact_count("gather");
    const auto [owner_bit, owner_n] = exact_count("owner");
    const auto [ph_bit, ph_n] = exact_count("per_head");
    const double ar_max = stats(collect(rm, [](const Row& r) { return r.strategy == "gram_allreduce"; }, [](const Row& r) { return r.rd_max; })).max;
    const double rs_max = stats(collect(rm, [](const Row& r) { return r.strategy == "gram_restart_allreduce"; }, [](const Row& r) { return r.rd_max; })).max;
    const Stats shard_g = stats(collect(rm, [](const Row& r) { return r.strategy == "shard" && r.tp >= 2 && r.spectrum == "gaussian"; }));
    o += "## Summary\n\n";
    o += fmt::format("- **`shard` (AutoTP today) changes the update.** On Gaussian inputs at tp >= 2 its relative difference from "
                     "the whole-matrix result is {:.2f} to {:.2f} (512x1024, tp=2: {:.3f} for a dim-0 split, {:.3f} for dim-1, "
                     "the seed's 0.3435 / 0.6831).\n",
                     shard_g.min, shard_g.max, tp2g(0), tp2g(1));
    o += fmt::format("- **`gather` and `owner` are exact**: bit-identical to the whole-matrix result in {}/{} and {}/{} cases "
                     "(every shape, tp, axis, kernel, spectrum).\n",
                     gather_bit, gather_n, owner_bit, owner_n);
    o += fmt::format("- **`per_head` is exact against per-head NS** in {}/{} applicable cases (dim-0 splits; it is a different "
                     "optimizer, and does not apply to o_proj or the MLP).\n",
                     ph_bit, ph_n);
    o += fmt::format("- **`gram_allreduce` / `gram_restart_allreduce` equal the whole-matrix result up to fp32 rounding**: "
                     "worst relative difference {} / {} over all cases, without gathering the matrix.\n",
                     sci(ar_max), sci(rs_max));
    if (have_grads) {
      for (const auto& [spec, out] : steps)
        if (spec.tp == 2 && spec.strategy == "shard" && spec.muon.scale_from == ScaleFrom::local) {
          const auto& q = out.steps[0][0];
          o += fmt::format("- **On a real gradient** (tiny Llama, q_proj, tp=2, AutoTP as DeepSpeed runs it) the update differs "
                           "by {:.3f} (cosine {:.3f}), the seed's DeepSpeed run by 0.39 (cosine 0.936), a minimal PyTorch Llama "
                           "by ~0.73 (cosine ~0.86); see §5 for why.\n",
                           q.rel_diff, q.cosine);
        }
    }
    o += "\n";

    // ----- 1. seed tables
    o += "## 1. The seed's tables, reproduced\n\n";
    o += fmt::format("Shard NS (`shard`) vs the matching block of whole-matrix NS, Gaussian matrices, fp32, 5 NS steps, mean "
                     "(± sample s.d.) over {} seeds (`seed_sweep.csv`). The seed measured one random matrix per cell; Gaussian "
                     "expectations agree with it to about ±0.01.\n\n",
                     plan.seed.seeds);
    static const std::map<std::tuple<std::string, int, int>, double> seed_512 = {
        {{"gram", 2, 0}, 0.3435}, {{"gram", 2, 1}, 0.6831}, {{"gram", 4, 0}, 0.3821}, {{"gram", 4, 1}, 0.6646},
        {{"standard", 2, 0}, 0.3418}, {{"standard", 2, 1}, 0.6758}, {{"standard", 4, 0}, 0.3809}, {{"standard", 4, 1}, 0.6602}};
    MdTable t1{{"kernel", "tp", "dim-0 seed", "dim-0 nsv", "Δ", "dim-1 seed", "dim-1 nsv", "Δ", "within ±0.02"}, {}};
    nlohmann::json seed_json = nlohmann::json::array();
    bool all_within = true;
    for (const char* k : {"gram", "standard"})
      for (int tp : {2, 4}) {
        std::vector<std::string> row{k, std::to_string(tp)};
        bool ok = true;
        for (int axis : {0, 1}) {
          const Stats s = stats(collect(rs, [&](const Row& r) {
            return r.rows == 512 && r.cols == 1024 && r.tp == tp && r.axis == axis && r.kernel == k;
          }));
          const double ref = seed_512.at({k, tp, axis});
          ok = ok && std::abs(s.mean - ref) <= 0.02;
          row.push_back(f4(ref));
          row.push_back(fmt::format("{:.4f} ± {:.4f}", s.mean, s.sd));
          row.push_back(fmt::format("{:+.4f}", s.mean - ref));
          seed_json.push_back({{"shape", "512x1024"}, {"kernel", k}, {"tp", tp}, {"axis", axis}, {"seed", ref}, {"mean", s.mean},
                               {"sd", s.sd}, {"n", s.n}});
        }
        all_within = all_within && ok;
        row.push_back(ok ? "yes" : "**no**");
        t1.rows.push_back(row);
      }
    o += "**512x1024** (seed: second comment of the issue)\n\n" + t1.str() + "\n";
    MdTable t2{{"kernel", "rank 0 seed", "rank 0 nsv", "rank 1 seed", "rank 1 nsv", "mean nsv", "within ±0.02"}, {}};
    for (const char* k : {"gram", "standard"}) {
      std::vector<double> r0, r1, m;
      for (const auto& r : rs)
        if (r.rows == 256 && r.cols == 256 && r.tp == 2 && r.axis == 0 && r.kernel == k && r.ranks.size() == 2) {
          r0.push_back(r.ranks[0]);
          r1.push_back(r.ranks[1]);
          m.push_back(r.rd);
        }
      const Stats a = stats(r0), b = stats(r1), c = stats(m);
      const bool ok = std::abs(a.mean - 0.5273) <= 0.02 && std::abs(b.mean - 0.5234) <= 0.02;
      all_within = all_within && ok;
      t2.rows.push_back({k, "0.5273", fmt::format("{:.4f} ± {:.4f}", a.mean, a.sd), "0.5234", fmt::format("{:.4f} ± {:.4f}", b.mean, b.sd),
                         f4(c.mean), ok ? "yes" : "**no**"});
      seed_json.push_back({{"shape", "256x256"}, {"kernel", k}, {"tp", 2}, {"axis", 0}, {"seed_rank0", 0.5273}, {"seed_rank1", 0.5234},
                           {"mean_rank0", a.mean}, {"mean_rank1", b.mean}, {"n", a.n}});
    }
    o += "**256x256, tp=2, dim-0 split** (seed: the issue body; \"gram and standard give 0.53 and 0.53\")\n\n" + t2.str() + "\n";
    o += fmt::format(
        "*What to conclude:* the suite reproduces the seed's kernel-level measurements {} and with them the rule behind them: "
        "splitting the long axis of a matrix (dim 1 of a wide 512x1024) diverges about twice as much as splitting the short one, "
        "for both kernels. Gram and standard NS are the same map, so their rows agree to ~1e-5 here; the seed's small "
        "gram-vs-standard gaps (0.002-0.007) are within the ±0.01 spread of a single random matrix. The seed's numbers are "
        "matrix-specific, so a 5-seed mean is the right comparison, not one seed.\n\n",
        all_within ? "within ±0.02 in every cell" : "**not everywhere within ±0.02 (see the cells marked no)**");
    summary["seed_tables"] = seed_json;
    summary["seed_tables_within_0.02"] = all_within;

    // ----- 2. strategies
    o += "## 2. What each strategy promises, checked on every case\n\n";
    o += fmt::format("All {} cases of the main sweep (`sweep.csv`: shapes {}, tp {}, split axes 0 and 1, kernels standard and "
                     "gram, spectra {}, {} seed(s), fp32, 5 steps; heads 8 along the split axis for per_head), compared with "
                     "each strategy's own target (whole-matrix NS, or per-head NS for `per_head`).",
                     rm.size(), fmt::join(plan.main.shapes, ", "), fmt::join(plan.main.tps, ","), fmt::join(plan.main.spectra, ", "),
                     plan.main.seeds);
    if (!main.skipped.empty()) {
      o += " Skipped as inapplicable, not run:";
      for (const auto& [reason, n] : main.skipped) o += fmt::format(" {} ({});", reason, n);
      o.back() = '.';
    }
    o += "\n\n";
    MdTable t3{{"strategy", "target", "promise (SPEC §3)", "cases tp>=2", "bit-identical", "max rel. diff", "median rel. diff", "holds"}, {}};
    nlohmann::json strat_json = nlohmann::json::array();
    for (Strategy s : kAllStrategies) {
      const std::string name(strategy_name(s));
      std::vector<double> v;
      std::size_t bit = 0;
      for (const auto& r : rm)
        if (r.strategy == name && r.tp >= 2) {
          v.push_back(r.rd_max);
          bit += r.bit;
        }
      std::vector<double> sorted = v;
      std::sort(sorted.begin(), sorted.end());
      const double median = sorted.empty() ? 0 : sorted[sorted.size() / 2];
      const Stats st = stats(v);
      std::size_t tp1_bit = 0, tp1_n = 0;
      for (const auto& r : rm)
        if (r.strategy == name && r.tp == 1) {
          ++tp1_n;
          tp1_bit += r.bit;
        }
      std::string holds;
      const Promise p = promise_of(s);
      if (p == Promise::bit_identical) holds = bit == v.size() ? "yes (exact)" : "**NO**";
      else if (p == Promise::exact_arithmetic) holds = st.max < 1e-4 ? "yes (fp32 noise, see §6)" : "**check**";
      else {
        const double gmin = stats(collect(rm, [&](const Row& r) { return r.strategy == name && r.tp >= 2 && r.spectrum == "gaussian"; })).min;
        holds = fmt::format("diverges (Gaussian min {:.3f} > 0.1: S6)", gmin);
      }
      t3.rows.push_back({"`" + name + "`", std::string(target_name(natural_target(s))), std::string(promise_name(p)),
                         std::to_string(v.size()), fmt::format("{}/{}", bit, v.size()), rel(st.max), rel(median), holds});
      strat_json.push_back({{"strategy", name}, {"cases", v.size()}, {"bit_identical", bit}, {"max_rel_diff", st.max},
                            {"median_rel_diff", median}, {"tp1_bit_identical", tp1_bit}, {"tp1_cases", tp1_n}});
    }
    o += t3.str();
    std::size_t tp1_bit = 0, tp1_n = 0;
    for (const auto& r : rm)
      if (r.tp == 1) {
        ++tp1_n;
        tp1_bit += r.bit;
      }
    o += fmt::format("\nAt tp = 1 every strategy equals its target bit for bit in {}/{} cases (S1).\n\n", tp1_bit, tp1_n);
    o += "*What to conclude:* the only strategy that changes Muon's semantics is `shard`, which is what AutoTP does today. "
         "`gather` and `owner` restore the whole-matrix update exactly; `per_head` is exact, but against a different optimizer "
         "(per-head NS) and only for matrices with heads on dim 0; the two all-reduce strategies reproduce the whole-matrix "
         "update to fp32 rounding while every rank keeps only its shard.\n\n";
    summary["strategies"] = strat_json;

    // ----- 3. divergence vs tp / aspect / spectrum
    o += "## 3. How far `shard` is off: TP degree, split axis, aspect ratio, spectrum\n\n";
    MdTable t4{{"shape", "split", "tp=1", "tp=2", "tp=4", "tp=8"}, {}};
    for (const auto& shape : plan.main.shapes)
      for (int axis : {0, 1}) {
        std::vector<std::string> row{shape, axis == 0 ? "dim 0 (column-par.)" : "dim 1 (row-par.)"};
        for (int tp : {1, 2, 4, 8}) {
          const Stats s = stats(collect(rm, [&](const Row& r) {
            return r.shape() == shape && r.axis == axis && r.tp == tp && r.strategy == "shard" && r.kernel == "gram" &&
                   r.spectrum == "gaussian";
          }));
          row.push_back(s.n ? rel(s.mean) : "-");
        }
        t4.rows.push_back(row);
      }
    double kernel_gap = 0;
    std::size_t kernel_pairs = 0;
    {
      std::map<std::string, double> gram_rd;
      for (const auto& r : rm)
        if (r.strategy == "shard" && r.kernel == "gram")
          gram_rd[fmt::format("{}|{}|{}|{}|{}", r.shape(), r.spectrum, r.seed, r.tp, r.axis)] = r.rd;
      for (const auto& r : rm)
        if (r.strategy == "shard" && r.kernel == "standard") {
          const auto it = gram_rd.find(fmt::format("{}|{}|{}|{}|{}", r.shape(), r.spectrum, r.seed, r.tp, r.axis));
          if (it != gram_rd.end()) {
            kernel_gap = std::max(kernel_gap, std::abs(it->second - r.rd));
            ++kernel_pairs;
          }
        }
    }
    o += "**vs TP degree and split axis** (gram kernel, Gaussian, mean over seeds; `sweep.csv`)\n\n" + t4.str();
    if (kernel_pairs > 0)
      o += fmt::format("\nThe standard kernel gives the same divergence to within {} (largest gap over all {} shard cases run "
                       "with both kernels), so only gram is shown.\n",
                       sci(kernel_gap), kernel_pairs);
    o += figure("divergence_vs_tp", "shard divergence vs tp");
    {
      // Long-axis vs short-axis cuts over the non-square shapes, tp >= 2.
      const auto long_cut = [](const Row& r) { return (r.cols > r.rows && r.axis == 1) || (r.rows > r.cols && r.axis == 0); };
      const auto sel = [&](bool want_long) {
        return stats(collect(rm, [&](const Row& r) {
          return r.strategy == "shard" && r.kernel == "gram" && r.spectrum == "gaussian" && r.tp >= 2 && r.rows != r.cols &&
                 long_cut(r) == want_long;
        }));
      };
      const Stats lo = sel(true), sh = sel(false);
      o += fmt::format(
          "\n*What to conclude:* the divergence is large from tp=2 on, and which axis is cut matters more than how many "
          "ranks there are. Cutting a rectangular matrix's *short* axis (dim 0 of a wide matrix, dim 1 of a tall one) gives "
          "{:.2f}-{:.2f} and stays flat with tp; cutting its *long* axis gives {:.2f}-{:.2f}, growing with tp. Square "
          "matrices are cut equally badly either way (~0.53-0.59). In a Llama layer the long axis is cut for down_proj "
          "(wide, row-parallel) and for gate/up (tall, column-parallel): the larger share of the Muon parameters.\n\n",
          sh.min, sh.max, lo.min, lo.max);
    }

    MdTable t5{{"shape", "cols/rows"}, {}};
    for (int tp : plan.aspect.tps)
      for (int axis : {0, 1}) t5.header.push_back(fmt::format("tp={} dim {}", tp, axis));
    for (const auto& shape : plan.aspect.shapes) {
      const auto [r0, c0] = parse_shape(shape);
      std::vector<std::string> row{shape, fmt::format("{:g}", static_cast<double>(c0) / static_cast<double>(r0))};
      for (int tp : plan.aspect.tps)
        for (int axis : {0, 1})
        {
          const auto keep = [&](const Row& r) { return r.shape() == shape && r.tp == tp && r.axis == axis; };
          row.push_back(fmt::format("{:.3f} (×{:.2f})", stats(collect(ra, keep)).mean,
                                    stats(collect(ra, keep, [](const Row& r) { return r.ratio; })).mean));
        }
      t5.rows.push_back(row);
    }
    o += "**vs aspect ratio** (gram, Gaussian, mean over seeds; `aspect_sweep.csv`; in parentheses the norm ratio "
         "‖NS(shard)‖ / ‖block of NS(whole)‖)\n\n" + t5.str();
    o += figure("divergence_vs_aspect", "shard divergence vs aspect ratio");
    {
      const auto long_cut = [](const Row& r) { return (r.cols > r.rows && r.axis == 1) || (r.rows > r.cols && r.axis == 0); };
      const auto pick = [&](bool want_long, bool ratio) {
        return stats(collect(ra, [&](const Row& r) { return r.rows != r.cols && long_cut(r) == want_long; },
                             [&](const Row& r) { return ratio ? r.ratio : r.rd; }));
      };
      const Stats sr = pick(false, false), sq = pick(false, true), lr = pick(true, false), lq = pick(true, true);
      o += fmt::format(
          "\n*What to conclude:* cutting the short axis, every shard keeps the whole long axis; its NS and the matching block "
          "of the whole NS both have orthonormal rows (columns), so their norms agree (ratio {:.2f}-{:.2f}) and only the "
          "direction differs: rel. diff {:.2f}-{:.2f}, smaller the more rectangular the matrix. Cutting the long axis, each "
          "shard is orthogonalized to full norm on its own (min(short side, long side/tp) unit singular values) while the "
          "block of the whole holds only its 1/tp share, so the shard's update is too large by about sqrt(min(tp, aspect)) "
          "(ratio {:.2f}-{:.2f}) and the rel. diff reaches {:.2f}-{:.2f}. The table is symmetric under transposition "
          "(K1: NS(Gᵀ) = NS(G)ᵀ): 2048x256 cut on dim 0 behaves like 256x2048 cut on dim 1.\n\n",
          sq.min, sq.max, sr.min, sr.max, lq.min, lq.max, lr.min, lr.max);
    }

    MdTable t6{{"spectrum"}, {}};
    for (int tp : plan.spectrum.tps)
      for (int axis : {0, 1}) t6.header.push_back(fmt::format("tp={} dim {}", tp, axis));
    for (const auto& sp : plan.spectrum.spectra) {
      std::vector<std::string> row{sp};
      for (int tp : plan.spectrum.tps)
        for (int axis : {0, 1})
        {
          const auto keep = [&](const Row& r) { return r.spectrum == sp && r.tp == tp && r.axis == axis; };
          row.push_back(fmt::format("{:.3f} / {:.2f}", stats(collect(rsp, keep)).mean,
                                    stats(collect(rsp, keep, [](const Row& r) { return r.cosine; })).mean));
        }
      t6.rows.push_back(row);
    }
    o += "**vs gradient spectrum** (512x1024, gram, mean over seeds; `spectrum_sweep.csv`; lowrank:R = product of Gaussian "
         "factors of rank R, powerlaw:α = singular values (i+1)^-α with random singular vectors); each cell: rel. diff / cosine\n\n" + t6.str();
    o += figure("divergence_vs_spectrum", "shard divergence vs spectrum");
    {
      const auto at = [&](const std::string& sp, int tp, bool cos) {
        return stats(collect(rsp, [&](const Row& r) { return r.spectrum == sp && r.tp == tp; },
                             [&](const Row& r) { return cos ? r.cosine : r.rd; }));
      };
      const int tmax = plan.spectrum.tps.back();
      const Stats g = at("gaussian", tmax, false), l = at("lowrank:16", tmax, false), lc = at("lowrank:16", tmax, true),
                  gc = at("gaussian", tmax, true);
      o += fmt::format(
          "\n*What to conclude:* the spectrum changes the picture. With few significant singular values (low rank, steep power "
          "law) each shard's NS has as many unit singular values as the whole's, so the shard's update is far too large: at "
          "tp={} the rel. diff is {:.2f} for lowrank:16 against {:.2f} for Gaussian, although the direction is closer (cosine "
          "{:.2f} against {:.2f}). Real gradients are closer to the low-rank, decaying end, so the Gaussian numbers of the "
          "seed's tables are not an upper bound for training: measure on the model's gradients (§5).\n\n",
          tmax, l.mean, g.mean, lc.mean, gc.mean);
    }

    // ----- 4. communication
    o += "## 4. What exactness costs: communication per rank\n\n";
    o += "Bytes each rank sends (maximum over ranks) to orthogonalize one 512x1024 fp32 matrix (the whole matrix is 2 MiB), "
         "from the simulated communicator's ledger (`sweep.csv`, gram kernel, Gaussian seed 0; the ring all-reduce model "
         "sends 2(tp-1)/tp of the buffer). Messages in parentheses.\n\n";
    MdTable t7{{"strategy"}, {}};
    for (int axis : {0, 1})
      for (int tp : {2, 4, 8}) t7.header.push_back(fmt::format("dim {} tp={}", axis, tp));
    t7.header.push_back("GFLOP/rank (dim 0, tp=8)");
    t7.header.push_back("extra memory/rank (dim 0, tp=8)");
    for (Strategy s : kAllStrategies) {
      const std::string name(strategy_name(s));
      std::vector<std::string> row{"`" + name + "`"};
      for (int axis : {0, 1})
        for (int tp : {2, 4, 8}) {
          const Row* hit = nullptr;
          for (const auto& r : rm)
            if (r.strategy == name && r.rows == 512 && r.cols == 1024 && r.axis == axis && r.tp == tp && r.kernel == "gram" &&
                r.spectrum == "gaussian" && r.seed == 0)
              hit = &r;
          row.push_back(hit ? fmt::format("{} ({:.0f})", bytes_text(hit->bytes_sent), hit->messages) : "n/a");
        }
      const Row* hit = nullptr;
      for (const auto& r : rm)
        if (r.strategy == name && r.rows == 512 && r.cols == 1024 && r.axis == 0 && r.tp == 8 && r.kernel == "gram" &&
            r.spectrum == "gaussian" && r.seed == 0)
          hit = &r;
      row.push_back(hit ? fmt::format("{:.2f}", hit->flops / 1e9) : "n/a");
      row.push_back(hit ? bytes_text(hit->extra) : "n/a");
      t7.rows.push_back(row);
    }
    o += t7.str();
    o += figure("bytes_vs_tp", "bytes per rank vs tp");
    o += "\n*What to conclude:* `gather` and `owner` move (tp-1)/tp of the matrix once (the busiest rank: 1-1.75 MiB here); "
         "`gather` then repeats the full NS on every rank, `owner` does it once on one rank (balanced only when a step has "
         "many matrices to hand out). The all-reduce strategies move a Gram matrix of the *unsharded* axis per step "
         "(`gram_allreduce`: one per step; `gram_restart_allreduce`: two in all): for this shape that is 2-20x more bytes "
         "than `gather`, least when the long axis is split (a 512x512 Gram), and more FLOPs per rank; what they buy is that "
         "no rank ever holds the whole matrix (extra memory: the Gram and its polynomial). They beat gather on bytes only "
         "when the Gram is much smaller than the matrix (long-axis splits of strongly rectangular matrices in low precision); "
         "the per-model audits (§7) weigh this for real shapes. `shard` and `per_head` send nothing.\n\n";

    // ----- 5. real-gradient step
    o += "## 5. One Muon step on real gradients of a tiny Llama\n\n";
    if (!have_grads) {
      o += "No gradient fixtures were found in `" + grads + "`. Make them with `/usr/bin/python3 tools/make_grads.py --out " +
           grads + "` (needs PyTorch; writes step0..2/<name>.npy, weights/ and grads.json), then rerun `nsv report`. "
           "`nsv step --generate` runs the same comparison on Gaussian gradients.\n\n";
    } else {
      append_step_section(o, steps);
    }

    // ----- 6. amplification
    append_amplification(o, amp);

    // ----- 7. audits
    o += "## 7. Per-model audits (`nsv audit`)\n\n";
    o += "For each bundled Hugging Face config in `" + models + "/`, `nsv audit --config FILE --tp N --markdown` lists every Muon "
         "matrix of a layer with its AutoTP role and shard sizes, which strategies are exact for it, and each strategy's "
         "bytes, FLOPs and memory; below are its recommendations at tp 2, 4 and 8, with the full audits linked.\n\n" +
         audits + "\n";
    o += figure("step_time_vs_tp", "estimated optimizer-step time per strategy vs tp");
    o += "\n*Estimated NS time per optimizer step* (all layers, alpha-beta model of `nsv audit`: the busiest rank's FLOPs at "
         "an H200's dense bf16 rate, plus per-message latency and bytes over an NVLink-class link; flags of `nsv audit` "
         "change all three): `shard` is the inexact baseline, the exact plans are compared with it.\n\n";
    o += "*What to conclude:* per-head NS covers only q/k/v, a minority of each model's Muon parameters and NS FLOPs; making "
         "the whole layer tp-independent needs one of the exact strategies for o_proj and the MLP, and the audits give its "
         "cost against today's `shard` path for real shapes.\n\n";

    // ----- files
    o += "## Files\n\n";
    o += "| file | what |\n|---|---|\n";
    o += "| `sweep.csv` | main sweep, one row per case (columns: every parameter, then rel_diff_mean/max, per-rank rel diffs, "
         "cosine and norm ratio (mean over ranks), bytes sent/received and messages (max over ranks), FLOPs (max over ranks), "
         "extra memory, collective calls, bit_identical, seconds) |\n";
    o += "| `seed_sweep.csv`, `aspect_sweep.csv`, `spectrum_sweep.csv` | the sweeps behind §1 and §3, same columns |\n";
    o += "| `amplification.csv` | §6, one row per spectrum, seed, split axis and NS step count |\n";
    o += "| `step.csv`, `step.json` | §5, every strategy x tp x scale source, per parameter |\n";
    o += "| `report.json` | the tables of this page as data, plus timings |\n";
    o += "| `figures/*.png`, `figures/*.svg` | drawn by `tools/plot_report.py` from the files above |\n\n";
    o += "The `seconds` column is the only one that changes between runs (wall time); every other column is a deterministic "
         "function of the parameters, independent of the thread count. `nsv sweep --resume` relies on that (see "
         "`tools/check_resume.sh`).\n\n";
    if (!plot_note.empty()) o += "**Figures:** " + plot_note + "\n\n";
    o += "Timings of this run:\n\n";
    for (const auto& [what, s] : timings) o += fmt::format("- {}: {:.1f} s\n", what, s);
    o += "\n";

    write_file_atomically((fs::path(out_dir) / "README.md").string(), o);
    summary["command"] = command;
    summary["commit"] = commit;
    summary["quick"] = quick;
    summary["threads"] = main.threads;
    summary["seconds"] = total_seconds;
    nlohmann::json tj = nlohmann::json::object();
    for (const auto& [what, s] : timings) tj[what] = s;
    summary["timings"] = tj;
    summary["plot_note"] = plot_note;
    write_file_atomically((fs::path(out_dir) / "report.json").string(), summary.dump(1) + "\n");
  }

  void append_step_section(std::string& o, const std::vector<std::pair<StepSpec, StepOutcome>>& steps) {
    const auto find = [&](int tp, const std::string& strategy, ScaleFrom scale) -> const StepOutcome* {
      for (const auto& [spec, out] : steps)
        if (spec.tp == tp && spec.strategy == strategy && spec.muon.scale_from == scale) return &out;
      return nullptr;
    };
    const StepOutcome* today = find(2, "shard", ScaleFrom::local);
    const StepOutcome* shard_global = find(2, "shard", ScaleFrom::global);
    if (!today || !shard_global) return;
    const auto& d = today->dims;
    o += fmt::format("Gradients: `{}` (from `tools/make_grads.py`: a 1-layer Llama, hidden {}, {} heads x {}, intermediate {}, "
                     "std-0.02 init, one batch of random tokens, loss ~ ln 128). One Muon step (lr 0.05, momentum 0.95, "
                     "Nesterov, gram NS, 5 steps, fp32) at tp=1 and tp=N on the same gradient; compared is "
                     "Δw = w_after - w_before, as in the seed. AutoTP layout per parameter (head-aligned for attention).\n\n",
                     grads, d.hidden, d.heads, d.head_dim, d.intermediate);
    const auto& q = today->steps[0][0];
    MdTable side{{"q_proj, tp=1 vs tp=2", "update rel. diff", "cosine", "‖Δw‖ tp=1", "‖Δw‖ tp=2", "norm change",
                  "rel. diff at the seed's norm ratio"},
                 {}};
    const auto implied = [](double cos, double ratio) { return std::sqrt(std::max(0.0, 1 + ratio * ratio - 2 * ratio * cos)); };
    side.rows.push_back({"seed: DeepSpeed, full step, ZeRO-1 + clipping, HF Llama", "0.39", "0.936", "0.0145", "0.0161", "+11%",
                         "0.39"});
    side.rows.push_back({"SPEC §5: minimal PyTorch Llama, NS update alone", "~0.73", "~0.86", "-", "-", "-", "-"});
    side.rows.push_back({"nsv: AutoTP today (`shard`, scale from the shard shape)", f3(q.rel_diff), f3(q.cosine), f4(q.norm_1),
                         f4(q.norm_n), fmt::format("{:+.0f}%", (q.norm_ratio - 1) * 100), f3(implied(q.cosine, 0.0161 / 0.0145))});
    o += side.str();
    o += fmt::format(
        "\n*Why the numbers differ from the seed, and what to compare:* the seed's figure is w_after - w_before of a full "
        "DeepSpeed step: ZeRO-1's gradient clipping acts on the *orthogonalized* updates of all parameters together, so it "
        "rescales every update by one global factor that itself depends on tp (the tp=2 updates are larger, so they are clipped "
        "harder). A global rescaling leaves the cosine unchanged but pulls the norm ratio towards 1, and the relative "
        "difference follows from the two: rel = sqrt(1 + ρ² - 2ρ·cos). The norms (0.0145 vs ours {:.3f}) are set by clipping and "
        "lr, not by sharding. So the comparable quantity is the cosine: ours {:.3f} matches the minimal PyTorch Llama of SPEC §5 "
        "(~0.86, rel. diff ~0.73, NS update alone, the same setting as ours), and at the seed's norm ratio (+11%) our cosine "
        "would give a rel. diff of {:.2f}. The remaining gap to the seed's 0.936 is the gradient itself: a HF model with its own "
        "init, batch and sequence length has a different spectrum, and §3 shows the divergence depends on the spectrum. The "
        "suite does not try to hit 0.39: it reports the same quantities for every Muon parameter of the layer.\n\n",
        q.norm_1, q.cosine, implied(q.cosine, 0.0161 / 0.0145));

    // per-parameter, per-strategy table at tp=2, global scale
    MdTable t{{"param", "shape", "role"}, {}};
    t.header.push_back("AutoTP today: `shard`, local scale");
    for (Strategy s : kAllStrategies) t.header.push_back("`" + std::string(strategy_name(s)) + "`");
    const auto& params = today->steps[0];
    for (std::size_t i = 0; i < params.size(); ++i) {
      const auto& p = params[i].param;
      std::vector<std::string> row{p.name, fmt::format("{}x{}", p.rows, p.cols), p.split_axis == 0 ? "col-par. (dim 0)" : "row-par. (dim 1)"};
      row.push_back(fmt::format("{} (cos {})", rel(params[i].rel_diff), f3(params[i].cosine)));
      for (Strategy s : kAllStrategies) {
        const StepOutcome* out = find(2, std::string(strategy_name(s)), ScaleFrom::global);
        if (!out) {
          row.push_back("-");
          continue;
        }
        const auto& r = out->steps[0][i];
        if (!r.note.empty()) row.push_back("n/a (heads not on dim 0)");
        else row.push_back(r.bit_identical ? "0 (bit-identical)" : rel(r.rel_diff));
      }
      t.rows.push_back(row);
    }
    o += "**Every Muon parameter, tp=2: update rel. diff tp=2 vs tp=1** (strategy columns use the sqrt(rows/cols) scale of "
         "the *global* shape, to isolate the orthogonalization; `per_head` is compared with per-head Muon at tp=1)\n\n" + t.str();
    {
      std::string lucky;
      for (Strategy s : {Strategy::gram_allreduce, Strategy::gram_restart_allreduce})
        if (const StepOutcome* out = find(2, std::string(strategy_name(s)), ScaleFrom::global))
          for (const auto& r : out->steps[0])
            if (r.bit_identical) lucky += fmt::format("{}`{}` on {}", lucky.empty() ? "" : ", ", strategy_name(s), r.param.name);
      if (!lucky.empty())
        o += "\nBit-identical results of an all-reduce strategy (" + lucky +
             ") are a coincidence of this shape, not a promise: the fp32 sum of the two ranks' Gram matrices happens to "
             "round exactly like the BLAS's own blocked sum over the whole inner dimension; at tp=4 they differ at the "
             "1e-5 level (`step.csv`).\n";
    }
    // scale effect
    const StepOutcome* gather_local = find(2, "gather", ScaleFrom::local);
    if (gather_local) {
      o += "\n**The aspect-ratio scale alone** (`gather`, exact NS, but the scale sqrt(rows/cols) taken from the shard's shape as "
           "DeepSpeed does today, tp=2):";
      for (const auto& r : gather_local->steps[0])
        if (!r.bit_identical)
          o += fmt::format(" {} {} (norm {:+.0f}%, scale {:.3g} -> {:.3g});", r.param.name, rel(r.rel_diff), (r.norm_ratio - 1) * 100,
                           r.scale_1, r.scales_n.empty() ? 1.0 : r.scales_n[0]);
      o.back() = '.';
      o += " A shard is tall where the whole matrix is not (o_proj 256x128 at tp=2) or square where the whole is tall "
           "(gate/up 256x256 of 512x256), so the scale changes with tp even when NS is exact (M2): an exact strategy must also "
           "take the scale from the global shape.\n\n";
    }
    // per_head vs whole optimizer
    const StepOutcome* ph = find(2, "per_head", ScaleFrom::global);
    if (ph) {
      o += "`per_head` is bit-identical to per-head Muon at tp=1, but per-head Muon is a different optimizer: its q/k/v "
           "updates differ from whole-matrix Muon's by";
      for (const auto& r : ph->steps[0])
        if (r.note.empty()) o += fmt::format(" {} {};", r.param.name, f3(r.rel_diff_vs_whole));
      o.back() = '.';
      o += " It says nothing about o_proj and the MLP (shown n/a; `nsv step --strategy per_head` runs `--fallback` there).\n\n";
    }
    // shard vs tp
    MdTable tt{{"param"}, {}};
    std::vector<int> tps;
    for (const auto& [spec, out] : steps)
      if (std::find(tps.begin(), tps.end(), spec.tp) == tps.end()) tps.push_back(spec.tp);
    for (int tp : tps) tt.header.push_back(fmt::format("tp={} local scale", tp));
    for (int tp : tps) tt.header.push_back(fmt::format("tp={} global scale", tp));
    for (std::size_t i = 0; i < params.size(); ++i) {
      std::vector<std::string> row{params[i].param.name};
      for (ScaleFrom sc : {ScaleFrom::local, ScaleFrom::global})
        for (int tp : tps) {
          const StepOutcome* out = find(tp, "shard", sc);
          row.push_back(out ? fmt::format("{} / {}", f3(out->steps[0][i].rel_diff), f3(out->steps[0][i].cosine)) : "-");
        }
      tt.rows.push_back(row);
    }
    o += "**`shard` (AutoTP today) vs tp: update rel. diff / cosine**\n\n" + tt.str();
    o += figure("step_strategies", "strategy comparison per Llama parameter");
    o += "\n*What to conclude:* on a real gradient every Muon matrix of the layer, not just q_proj, gets a different update "
         "under AutoTP (cosine 0.8-0.9 at tp=2), and the local aspect-ratio scale adds a further, separate error for o_proj "
         "and gate/up. `gather`/`owner` (with the global scale) remove the difference exactly; the all-reduce strategies to "
         "~1e-5; `per_head` fixes q/k/v only, and only by changing the optimizer.\n\n";
  }

  void append_amplification(std::string& o, const std::vector<AmplificationRow>& amp) {
    o += "## 6. Reduction-order noise and how NS amplifies it\n\n";
    o += fmt::format(
        "A gradient formed by an all-reduce of {} partial gradients (fp32) in rank order vs reverse order differs only by "
        "rounding (the seed saw 7e-7 between tp=1 and tp=2). Each column divides a relative difference of the NS output "
        "by that gradient-level relative difference (`amplification.csv`; {}x{}, mean over {} seed(s) and split axes "
        "{}). *Whole NS*: NS of the two gradients. *order*: the all-reduce strategy on the same gradient, its Gram all-reduces "
        "in rank vs reverse order. *vs whole*: the strategy vs whole-matrix NS of the same kernel loop (standard loop for "
        "`gram_allreduce`, gram loop with restart for `gram_restart_allreduce`). *fp32 kernel error*: whole-matrix fp32 NS vs "
        "fp64 NS, on the same scale — the yardstick of S5.\n\n",
        plan_amp_.tp, plan_amp_.rows, plan_amp_.cols, plan_amp_.seeds, fmt::join(plan_amp_.axes, ", "));
    MdTable t{{"spectrum", "NS steps", "grad rel. diff", "a^k", "whole NS", "`gram_allreduce` order", "`gram_allreduce` vs whole",
               "`gram_restart` order", "`gram_restart` vs whole", "fp32 kernel error (std / gram)"},
              {}};
    for (const auto& sp : plan_amp_.spectra)
      for (int k = 1; k <= plan_amp_.max_steps; ++k) {
        std::vector<const AmplificationRow*> sel;
        for (const auto& r : amp)
          if (r.spectrum == sp && r.steps == k) sel.push_back(&r);
        const auto mean = [&](auto member) {
          double s = 0;
          for (const auto* r : sel) s += r->*member;
          return sel.empty() ? 0.0 : s / static_cast<double>(sel.size());
        };
        t.rows.push_back({sp, std::to_string(k), sci(mean(&AmplificationRow::grad_rel)), fmt::format("{:.0f}", std::pow(3.4445, k)),
                          fmt::format("{:.1f}x", mean(&AmplificationRow::whole_amp)),
                          fmt::format("{:.1f}x", mean(&AmplificationRow::ar_order_amp)), fmt::format("{:.1f}x", mean(&AmplificationRow::ar_vs_whole)),
                          fmt::format("{:.1f}x", mean(&AmplificationRow::rs_order_amp)), fmt::format("{:.1f}x", mean(&AmplificationRow::rs_vs_whole)),
                          fmt::format("{:.1f}x / {:.1f}x", mean(&AmplificationRow::kernel_err_standard), mean(&AmplificationRow::kernel_err_gram))});
      }
    o += t.str();
    o += figure("amplification", "reduction-order noise amplification over NS steps");
    double worst_ratio = 0;
    std::map<std::string, double> whole5;
    for (const auto& r : amp) {
      worst_ratio = std::max(worst_ratio, r.ar_vs_whole / std::max(r.kernel_err_standard, 1e-300));
      worst_ratio = std::max(worst_ratio, r.rs_vs_whole / std::max(r.kernel_err_gram, 1e-300));
      if (r.steps == plan_amp_.max_steps) whole5[r.spectrum] = std::max(whole5[r.spectrum], r.whole_amp);
    }
    std::string w5;
    for (const auto& [sp, v] : whole5) w5 += fmt::format("{}{:.0f}x for {}", w5.empty() ? "" : ", ", v, sp);
    o += fmt::format(
        "\n*What to conclude:* NS itself amplifies a rounding-level difference in its input, and the amplification grows "
        "geometrically with the step count: after {} steps up to {}. The growth is bounded by a^k (a = 3.4445, the slope of "
        "the NS polynomial at 0): directions in which the gradient has little energy are multiplied by ~a per step, which is "
        "why low-rank inputs amplify the most. The all-reduce strategies' own reduction-order noise is of the same size, and "
        "their distance from whole-matrix NS never exceeds {:.2f}x the kernel's own fp32-vs-fp64 error in any row: they are "
        "\"equal to `whole` within the kernel's rounding noise\" (S5), orders of magnitude below `shard`'s 0.3-2.\n\n",
        plan_amp_.max_steps, w5, worst_ratio);
    summary["amplification_worst_ratio_to_kernel_error"] = worst_ratio;
  }
};

}  // namespace

void add_report_command(CLI::App& app) {
  auto st = std::make_shared<ReportCommand>();
  st->app = &app;
  auto* cmd = app.add_subcommand("report",
                                 "The default job: standard sweeps, seed tables, real-gradient step, amplification study, "
                                 "audits; writes reports/ (README.md, CSV, JSON, figures)");
  cmd->add_option("--out-dir", st->out_dir, "output folder")->capture_default_str();
  cmd->add_flag("--quick", st->quick, "a smaller run (fewer seeds and TP degrees) for a fast look");
  cmd->add_option("--grads", st->grads, "real-gradient fixtures (tools/make_grads.py)")->capture_default_str();
  cmd->add_option("--models", st->models, "model configs for `nsv audit` (*.json)")->capture_default_str();
  cmd->add_option("--python", st->python, "Python with matplotlib, for the figures")->capture_default_str();
  cmd->add_option("--plot-script", st->plot_script, "the plotting script")->capture_default_str();
  cmd->add_flag("--no-plots", st->no_plots, "skip the figures");
  cmd->add_flag("--resume", st->resume, "continue interrupted sweeps from the CSVs already in --out-dir");
  cmd->add_option("--threads", st->threads, "OpenMP threads (default: OMP_NUM_THREADS or all cores)");
  cmd->add_flag("--quiet", st->quiet, "no progress output");
  cmd->callback([st] { st->run(); });
}

}  // namespace nsv::cli
