// nsv report: the default job. Runs the standard sweeps, the seed tables, the real-gradient Muon
// step, the reduction-order amplification study and the audits of the bundled model configs;
// writes their CSV/JSON into the output folder with report.json (every statistic the README
// cites, nsv/engine/report_stats.hpp), then draws the figures (tools/plot_report.py) and renders README.md
// from report.json (tools/report/render_report.py, Jinja2 templates). No prose is written here.
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <functional>
#include <map>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>

#include "cli_checks.hpp"
#include "cli_common.hpp"
#include "commands.hpp"
#include "nsv/engine/report_audits.hpp"
#include "nsv/engine/report_diagnosis.hpp"
#include "nsv/engine/report_plan.hpp"
#include "nsv/engine/report_schedules.hpp"
#include "nsv/engine/report_sections.hpp"
#include "nsv/engine/report_stats.hpp"
#include "nsv/engine/report_training.hpp"
#include "nsv/input_file.hpp"
#include "nsv/npy.hpp"
#include "nsv/strategy.hpp"

namespace nsv::cli {
namespace fs = std::filesystem;
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

const std::string kDefaultGrads = "fixtures/grads", kDefaultModels = "fixtures/models", kDefaultRuns = "fixtures/runs",
                  kDefaultTraining = "fixtures/training";

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

json strategy_table() {
  json t = json::array();
  for (const StrategyRecord& r : strategy_records())
    t.push_back({{"name", r.name}, {"short_name", r.short_name}, {"target", target_name(r.target)},
                 {"promise", promise_name(r.promise)}, {"summary", r.summary}});
  return t;
}

struct ReportCommand {
  std::string out_dir = "reports", grads = kDefaultGrads, models = kDefaultModels, runs = kDefaultRuns, training = kDefaultTraining,
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
    if (grads != kDefaultGrads) c += " --grads " + shell_quote(grads);
    if (models != kDefaultModels) c += " --models " + shell_quote(models);
    if (runs != kDefaultRuns) c += " --runs " + shell_quote(runs);
    if (training != kDefaultTraining) c += " --training " + shell_quote(training);
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

  // The sections --only can rerun on their own: the report.json object each writes, and how.
  // gram_stress reruns Dao-AILab's stress test (minutes) before the Gram stability section, which
  // reads its CSV.
  struct PartialSection {
    std::string key;
    std::function<json(const ReportCommand&, const engine::ReportPlan&)> run;
  };
  // report.json's statistics of the four sweeps.
  static json sweep_statistics(const engine::ReportPlan& plan, const engine::SweepOutcome& main, const engine::SweepOutcome& seed,
                               const engine::SweepOutcome& aspect, const engine::SweepOutcome& spectrum) {
    return {{"seed_tables", engine::seed_table_stats(seed.rows)},
            {"strategy_checks", engine::strategy_check_stats(main.rows, main.skipped)},
            {"divergence", engine::divergence_stats(plan, main.rows, aspect.rows, spectrum.rows)},
            {"communication", engine::communication_stats(main.rows)}};
  }

  // A section with an empty key writes several of report.json's keys: its result's.
  static const std::map<std::string, PartialSection>& partial_sections() {
    static const std::map<std::string, PartialSection> sections = {
        // the sweeps' statistics from their CSVs in --out-dir (resumed: only missing cases run)
        {"sweeps", {"", [](const ReportCommand& c, const engine::ReportPlan& p) {
                      engine::SectionOptions o = c.section_options();
                      o.resume = true;
                      return sweep_statistics(p, engine::run_report_sweep(p.main, "sweep", o), engine::run_report_sweep(p.seed, "seed_sweep", o),
                                              engine::run_report_sweep(p.aspect, "aspect_sweep", o),
                                              engine::run_report_sweep(p.spectrum, "spectrum_sweep", o));
                    }}},
        {"audits", {"audits", [](const ReportCommand& c, const engine::ReportPlan& p) {
                      return engine::run_report_audits(c.models, p.audit_tps, c.out_dir, error_text);
                    }}},
        {"diagnosis", {"diagnosis", [](const ReportCommand& c, const engine::ReportPlan&) {
                         return engine::run_report_diagnosis(c.runs, (fs::path(c.models) / "tiny-llama.json").string(), c.out_dir);
                       }}},
        {"step", {"step", [](const ReportCommand& c, const engine::ReportPlan& p) {
                    return engine::step_stats(engine::run_report_steps(p, c.grads, c.section_options()), c.grads);
                  }}},
        {"schedules", {"schedules", [](const ReportCommand& c, const engine::ReportPlan& p) { return engine::run_report_schedules(p.schedules, c.section_options()); }}},
        {"gram_stability", {"gram_stability", [](const ReportCommand& c, const engine::ReportPlan& p) { return engine::run_report_gram_stability(p, c.section_options()); }}},
        {"training", {"training", [](const ReportCommand& c, const engine::ReportPlan& p) {
                        return engine::training_stats(engine::run_report_training(p, c.training, c.section_options()));
                      }}},
        {"gram_stress", {"gram_stability", [](const ReportCommand& c, const engine::ReportPlan& p) {
                           engine::run_report_gram_stress(p, c.section_options());
                           return engine::run_report_gram_stability(p, c.section_options());
                         }}},
    };
    return sections;
  }

  // --only SECTION: that section into an existing report (report.json's other sections kept),
  // then the figures and README.md again.
  void run_only() {
    const std::string path = (fs::path(out_dir) / "report.json").string();
    report = json::parse(read_input_file(path, "report", std::uint64_t{64} << 20, FileRole::earlier_output));
    const engine::ReportPlan plan = engine::make_report_plan(quick);
    const auto t0 = Clock::now();
    const PartialSection& section = partial_sections().at(only);
    if (section.key.empty())
      report.update(section.run(*this, plan));
    else
      report[section.key] = section.run(*this, plan);
    report["plan"] = engine::plan_json(plan);
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
    const engine::SectionOptions o = section_options();
    report = {{"schema", "nsv.report/1"}, {"run", {{"timings", json::array()}}}, {"strategies", strategy_table()},
              {"plan", engine::plan_json(plan)}};

    auto t0 = Clock::now();
    const engine::SweepOutcome main = engine::run_report_sweep(plan.main, "sweep", o);
    section_time(fmt::format("main sweep ({} cases)", main.rows.size()), t0);
    t0 = Clock::now();
    const engine::SweepOutcome seed = engine::run_report_sweep(plan.seed, "seed_sweep", o);
    const engine::SweepOutcome aspect = engine::run_report_sweep(plan.aspect, "aspect_sweep", o);
    const engine::SweepOutcome spectrum = engine::run_report_sweep(plan.spectrum, "spectrum_sweep", o);
    section_time(fmt::format("seed, aspect and spectrum sweeps ({} cases)", seed.rows.size() + aspect.rows.size() + spectrum.rows.size()), t0);
    t0 = Clock::now();
    const auto amp = engine::run_report_amplification(plan.amp, o);
    section_time("reduction-order amplification study", t0);
    t0 = Clock::now();
    report["gram_stability"] = partial_sections().at("gram_stability").run(*this, plan);
    section_time("Gram NS stability study", t0);
    t0 = Clock::now();
    report["schedules"] = partial_sections().at("schedules").run(*this, plan);
    section_time("coefficient schedules under sharding", t0);
    t0 = Clock::now();
    report["step"] = partial_sections().at("step").run(*this, plan);
    section_time("real-gradient Muon step", t0);
    t0 = Clock::now();
    report["audits"] = partial_sections().at("audits").run(*this, plan);
    section_time("model audits", t0);
    t0 = Clock::now();
    report["diagnosis"] = partial_sections().at("diagnosis").run(*this, plan);
    section_time("diagnosis of the training-run dumps", t0);
    t0 = Clock::now();
    report["training"] = partial_sections().at("training").run(*this, plan);
    section_time("gradients from training", t0);

    report.update(sweep_statistics(plan, main, seed, aspect, spectrum));
    report["amplification"] = engine::amplification_stats(plan.amp, amp);
    report["run"].update({{"command", user_command()}, {"quick", quick}, {"threads", main.threads}});
    report["run"].update(provenance(out_dir));
    write_report_json();  // the figures read the strategy table from it

    t0 = Clock::now();
    report["run"]["plot_note"] = run_plots();
    section_time("figures", t0);
    write_report_json();
    render_readme();
    std::printf("wrote %s/README.md (%zu + %zu + %zu + %zu sweep cases) in %.1f s\n", out_dir.c_str(), main.rows.size(),
                seed.rows.size(), aspect.rows.size(), spectrum.rows.size(), elapsed());
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
  for (const auto& [name, run] : ReportCommand::partial_sections()) sections.push_back(name);
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
