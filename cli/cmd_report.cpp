// nsv report: the default job. The engine computes every section into report.json
// (nsv/engine/report_document.hpp: the sweeps, the seed tables, the real-gradient Muon step, the
// studies and the audits of the bundled model configs, with their CSV/JSON in the output folder);
// this front end times them, records the command and the commit, draws the figures
// (tools/plot_report.py) and renders README.md from report.json (tools/report/render_report.py,
// Jinja2 templates). No figure is computed and no prose is written here.
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>

#include "cli_checks.hpp"
#include "cli_common.hpp"
#include "commands.hpp"
#include "nsv/engine/report_document.hpp"
#include "nsv/engine/report_plan.hpp"
#include "nsv/input_file.hpp"
#include "nsv/npy.hpp"

namespace nsv::cli {
namespace fs = std::filesystem;
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

// The fixtures the report reads unless told otherwise (the engine's defaults).
const engine::ReportInputs kDefaults;

std::string shell_quote(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:,+") == std::string::npos)
    return s;
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// Runs a shell command; its exit status and combined output.
struct Captured {
  int status = -1;
  std::string output;
};
Captured capture(const std::string& command) {
  Captured c;
  FILE* p = ::popen((command + " 2>&1").c_str(), "r");
  if (!p) return c;
  std::array<char, 4096> buf{};
  while (std::fgets(buf.data(), buf.size(), p)) c.output += buf.data();
  const int status = ::pclose(p);
  c.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return c;
}

// The commit the report was made from, and whether tracked files differ from it (the report's
// own output folder excluded: its files are not changes to the code that produced them).
json provenance(const std::string& out_dir) {
  const Captured commit = capture("git rev-parse --short HEAD");
  const Captured status = capture("git status --porcelain --untracked-files=no -- . " + shell_quote(":(exclude)" + out_dir));
  return {{"commit", commit.status == 0 ? trim(commit.output) : "unknown (not a git checkout)"},
          {"dirty", status.status == 0 && !trim(status.output).empty()}};
}

struct ReportCommand {
  std::string out_dir = "reports", grads = kDefaults.grads, models = kDefaults.models, runs = kDefaults.runs, training = kDefaults.training,
              python = "/usr/bin/python3",
              plot_script = "tools/plot_report.py", render_script = "tools/report/render_report.py";
  bool quick = false, quiet = false, no_plots = false, resume = false, audits_only = false, print_plan = false;
  std::string only;  // --only SECTION (partial_sections); --audits-only is --only audits
  int threads = 0;

  json report;  // report.json
  Clock::time_point started = Clock::now();

  // The command as a user types it: `nsv` and the options that change what is computed or
  // read. Not the output folder (the report lives in it, whatever its name) nor --python and the
  // script paths, so that no path of this machine ends up in the report.
  std::string user_command() const {
    std::string c = "nsv report";
    if (quick) c += " --quick";
    if (grads != kDefaults.grads) c += " --grads " + shell_quote(grads);
    if (models != kDefaults.models) c += " --models " + shell_quote(models);
    if (runs != kDefaults.runs) c += " --runs " + shell_quote(runs);
    if (training != kDefaults.training) c += " --training " + shell_quote(training);
    if (no_plots) c += " --no-plots";
    if (threads > 0) c += " --threads " + std::to_string(threads);
    return c;
  }

  void section_time(const std::string& what, Clock::time_point t0) {
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    json& timings = report["run"]["timings"];
    for (auto it = timings.begin(); it != timings.end();)  // a rerun section replaces its old time
      it = (*it)["what"] == what ? timings.erase(it) : it + 1;
    timings.push_back({{"what", what}, {"seconds", s}});
    if (!quiet) std::fprintf(stderr, "nsv report: %s done in %.1f s\n", what.c_str(), s);
  }

  engine::SectionOptions section_options() const { return {out_dir, resume, !quiet, threads}; }
  engine::ReportInputs inputs() const { return {grads, models, runs, training, error_text}; }

  // --only SECTION: that section into an existing report (report.json's other sections kept),
  // then the figures and README.md again.
  void run_only() {
    const std::string path = (fs::path(out_dir) / "report.json").string();
    report = json::parse(read_input_file(path, "report", std::uint64_t{64} << 20, FileRole::earlier_output));
    const auto t0 = Clock::now();
    engine::rerun_report_section(report, only, inputs(), engine::make_report_plan(quick), section_options());
    section_time(only + " (--only)", t0);
    write_report_json();
    report["run"]["plot_note"] = run_plots();
    write_report_json();
    render_readme();
    std::printf("wrote the %s section and %s/README.md\n", only.c_str(), out_dir.c_str());
  }

  void run() {
    if (audits_only && !only.empty()) throw std::invalid_argument("give either --audits-only or --only, not both");
    if (audits_only) only = "audits";
    if (print_plan) {
      std::printf("%s\n", engine::plan_json(engine::make_report_plan(quick)).dump(1).c_str());
      return;
    }
    if (!only.empty()) return run_only();
    const engine::ReportPlan plan = engine::make_report_plan(quick);
    // Check every input before writing anything.
    for (const engine::SweepSpec* s : {&plan.main, &plan.seed, &plan.aspect, &plan.spectrum}) engine::plan_sweep(*s);
    fs::create_directories(out_dir);
    if (!fs::is_directory(out_dir)) throw std::invalid_argument("--out-dir " + out_dir + " is not a folder");
    report = engine::report_skeleton(plan);
    const int threads_used = engine::run_full_report(report, inputs(), plan, section_options(), [this](const engine::ReportStep& step) {
      const auto t0 = Clock::now();
      section_time(step(), t0);
    });
    report["run"].update({{"command", user_command()}, {"quick", quick}, {"threads", threads_used}});
    report["run"].update(provenance(out_dir));
    write_report_json();  // the figures read the strategy table from it

    const auto t0 = Clock::now();
    report["run"]["plot_note"] = run_plots();
    section_time("figures", t0);
    write_report_json();
    render_readme();
    std::printf("wrote %s/README.md in %.1f s (the timing of each section is in report.json)\n", out_dir.c_str(), elapsed());
  }

  double elapsed() const { return std::chrono::duration<double>(Clock::now() - started).count(); }

  void write_report_json() {
    if (only.empty()) report["run"]["seconds"] = elapsed();  // --only keeps the full run's time
    write_file_atomically((fs::path(out_dir) / "report.json").string(), report.dump(1) + "\n");
  }

  // Why a Python step cannot run, or nothing.
  std::optional<std::string> python_missing(const std::string& script, const std::string& flag) const {
    if (!fs::exists(script))
      return script + " was not found (run `nsv report` from the repository root, or pass " + flag + ")";
    if (::access(python.c_str(), X_OK) != 0) return python + " is not an executable Python interpreter (pass --python)";
    return std::nullopt;
  }

  Captured run_python(const std::string& script) const {
    return capture(shell_quote(python) + " " + shell_quote(script) + " " + shell_quote(out_dir));
  }

  // Empty when the figures were drawn, otherwise the README's note on why not.
  std::string run_plots() const {
    if (no_plots) return "Figures were not drawn (--no-plots). Draw them with `python3 tools/plot_report.py` on this folder.";
    if (const auto why = python_missing(plot_script, "--plot-script")) return "Figures were not drawn: " + *why + ".";
    const Captured c = run_python(plot_script);
    if (!quiet && !c.output.empty()) std::fprintf(stderr, "%s", c.output.c_str());
    if (c.status == 3) return "Figures were not drawn: " + trim(c.output);
    if (c.status != 0) return fmt::format("Figures failed (plot_report.py exit {}): {}", c.status, trim(c.output).substr(0, 600));
    return "";
  }

  void render_readme() const {
    const std::string data = "the data is in " + out_dir + "/ (CSV, JSON, report.json)";
    if (const auto why = python_missing(render_script, "--render-script"))
      throw std::runtime_error("README.md was not rendered: " + *why + "; " + data);
    const Captured c = run_python(render_script);
    if (c.status != 0)
      throw std::runtime_error(fmt::format("README.md was not rendered ({} exit {}): {}\n{}", render_script, c.status,
                                           trim(c.output), data));
    if (!quiet && !c.output.empty()) std::fprintf(stderr, "%s", c.output.c_str());
  }
};

}  // namespace

void add_report_command(CLI::App& app) {
  auto st = std::make_shared<ReportCommand>();
  auto* cmd = app.add_subcommand("report",
                                 "The default job: standard sweeps, seed tables, real-gradient step, amplification study, "
                                 "audits; writes reports/ (CSV, JSON, report.json with every statistic; figures by "
                                 "tools/plot_report.py; README.md rendered from report.json by tools/report/render_report.py, "
                                 "which needs Jinja2: Debian python3-jinja2)");
  cmd->add_option("--out-dir", st->out_dir, "output folder")->capture_default_str();
  cmd->add_flag("--quick", st->quick, "a smaller run (fewer seeds and TP degrees) for a fast look");
  cmd->add_option("--grads", st->grads, "real-gradient fixtures (tools/make_grads.py)")->capture_default_str();
  cmd->add_option("--models", st->models, "model configs for `nsv audit` (*.json)")->capture_default_str();
  cmd->add_option("--runs", st->runs, "training-run dumps for `nsv diagnose` (tools/make_grads.py --runs)")->capture_default_str();
  cmd->add_option("--training", st->training, "gradients dumped during training (tools/make_grads.py --train)")->capture_default_str();
  cmd->add_option("--python", st->python, "Python with matplotlib (figures) and Jinja2 (README.md)")->capture_default_str();
  cmd->add_option("--plot-script", st->plot_script, "the plotting script")->capture_default_str();
  cmd->add_option("--render-script", st->render_script, "the README renderer")->capture_default_str();
  cmd->add_flag("--no-plots", st->no_plots, "skip the figures");
  cmd->add_flag("--resume", st->resume, "continue interrupted sweeps from the CSVs already in --out-dir");
  cmd->add_flag("--audits-only", st->audits_only,
                "rerun only the model audits into the report already in --out-dir (its report.json kept otherwise), "
                "then redraw the figures and README.md (= --only audits)");
  std::vector<std::string> sections;
  for (const auto& [name, section] : engine::report_sections()) sections.push_back(name);
  cmd->add_option("--only", st->only,
                  "rerun only this section into the report already in --out-dir (its report.json kept otherwise), "
                  "then redraw the figures and README.md")
      ->check(CLI::IsMember(sections));
  cmd->add_option("--threads", st->threads, "OpenMP threads (default: OMP_NUM_THREADS or all cores)")->check(thread_count());
  cmd->add_flag("--quiet", st->quiet, "no progress output");
  cmd->add_flag("--print-plan", st->print_plan,
                "print what the report would run (report.json's \"plan\": every sweep, study and audit) as JSON; run nothing");
  cmd->callback([st] { st->run(); });
}

}  // namespace nsv::cli
