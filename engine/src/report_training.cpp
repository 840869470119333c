#include "nsv/engine/report_training.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <stdexcept>

#include "nsv/engine/csv.hpp"
#include "nsv/input_file.hpp"
#include "nsv/npy.hpp"
#include "nsv/strategy.hpp"

namespace nsv::engine {
namespace fs = std::filesystem;
namespace {

using nlohmann::json;

[[noreturn]] void refuse(const std::string& file, const std::string& where, const std::string& why) {
  throw std::invalid_argument(file + ": " + where + " " + why + " (tools/make_grads.py --train writes this file)");
}

const json& member(const json& obj, const char* key, const std::string& file, const std::string& where) {
  if (!obj.is_object() || !obj.contains(key)) refuse(file, where, std::string("has no \"") + key + "\"");
  return obj[key];
}

int integer(const json& obj, const char* key, int lo, int hi, const std::string& file, const std::string& where) {
  const json& v = member(obj, key, file, where);
  if (!v.is_number_integer() || v.get<long long>() < lo || v.get<long long>() > hi)
    refuse(file, where + "." + key, fmt::format("must be an integer in {}..{}", lo, hi));
  return v.get<int>();
}

// A checkpoint folder named by training.json, which must stay inside DIR.
std::string checkpoint_folder(const std::string& dir, const json& ckpt, const std::string& file, const std::string& where) {
  const json& f = member(ckpt, "folder", file, where);
  if (!f.is_string()) refuse(file, where + ".folder", "must be a string");
  const fs::path rel(f.get<std::string>());
  if (rel.empty() || rel.is_absolute() || rel.lexically_normal().string().rfind("..", 0) == 0)
    refuse(file, where + ".folder", "must be a folder inside " + dir + ", got " + rel.string());
  const fs::path p = fs::path(dir) / rel;
  if (!fs::is_directory(p)) refuse(file, where + ".folder", "names " + p.string() + ", which is not a folder");
  return p.string();
}

// The fields the statistics cite besides the checkpoints: the loss curves, the hyper-parameters,
// the corpus and the torch version.
void require_summary_fields(const json& d, const json& model, const std::string& file, const std::string& where) {
  for (const char* key : {"loss_per_step", "eval_loss"}) {
    const json& v = member(model, key, file, where);
    if (!v.is_array() || v.empty()) refuse(file, where + "." + key, "must be a non-empty array");
  }
  for (const json& v : model["loss_per_step"])
    if (!v.is_number()) refuse(file, where + ".loss_per_step", "must hold numbers only");
  for (const json& v : model["eval_loss"])
    if (!v.is_object() || !v.contains("loss") || !v["loss"].is_number())
      refuse(file, where + ".eval_loss", "must hold {\"step\", \"loss\"} objects");
  if (!member(d, "hyper", file, "the top level").is_object()) refuse(file, "\"hyper\"", "must be an object");
  const json& corpus = member(d, "corpus", file, "the top level");
  member(corpus, "package", file, "\"corpus\"");
  member(corpus, "tokens", file, "\"corpus\"");
  if (!member(corpus, "files", file, "\"corpus\"").is_array()) refuse(file, "corpus.files", "must be an array");
  member(d, "torch_version", file, "the top level");
}

std::vector<TrainingCheckpoint> checkpoints_of(const json& d, const std::string& dir, const std::string& file) {
  const json& models = member(d, "models", file, "the top level");
  if (!models.is_array() || models.empty()) refuse(file, "\"models\"", "must be a non-empty array");
  std::vector<TrainingCheckpoint> out;
  for (std::size_t m = 0; m < models.size(); ++m) {
    const std::string where = fmt::format("models[{}]", m);
    const json& name = member(models[m], "name", file, where);
    if (!name.is_string()) refuse(file, where + ".name", "must be a string");
    const int layers = integer(models[m], "layers", 1, 1024, file, where);
    const int layer = integer(models[m], "dumped_layer", 0, layers - 1, file, where);
    require_summary_fields(d, models[m], file, where);
    const json& ckpts = member(models[m], "checkpoints", file, where);
    if (!ckpts.is_array()) refuse(file, where + ".checkpoints", "must be an array");
    for (std::size_t c = 0; c < ckpts.size(); ++c) {
      const std::string cw = fmt::format("{}.checkpoints[{}]", where, c);
      TrainingCheckpoint ck;
      ck.model = name.get<std::string>();
      ck.layers = layers;
      ck.layer = layer;
      ck.step = integer(ckpts[c], "step", 0, 1'000'000'000, file, cw);
      ck.folder = checkpoint_folder(dir, ckpts[c], file, cw);
      const json& loss = member(ckpts[c], "loss", file, cw);
      if (!loss.is_number()) refuse(file, cw + ".loss", "must be a number");
      ck.loss = loss.get<double>();
      out.push_back(std::move(ck));
    }
  }
  return out;
}

// What runs on each checkpoint: the step table's strategies (every one with the global scale,
// isolating the orthogonalization; `shard` also with the local scale, AutoTP today) at each tp.
std::vector<StepSpec> checkpoint_specs(const ReportPlan& plan, const std::string& folder) {
  std::vector<StepSpec> specs;
  for (int tp : plan.step_tps) {
    specs.push_back(report_step_spec(plan, folder, tp, Strategy::shard, ScaleFrom::local));
    for (Strategy s : kAllStrategies) specs.push_back(report_step_spec(plan, folder, tp, s, ScaleFrom::global));
  }
  return specs;
}

void write_training_csv(const TrainingRuns& t, const SectionOptions& o) {
  std::string csv = csv_line({"model", "layers", "layer", "step", "loss", "param", "rows", "cols", "stable_rank", "effective_rank",
                              "tp", "strategy_requested", "strategy_used", "scale_from", "rel_diff", "cosine", "bit_identical", "note"});
  for (const TrainingCheckpoint& c : t.checkpoints)
    for (const auto& [spec, out] : c.runs)
      for (std::size_t i = 0; i < out.steps[0].size(); ++i) {
        const ParamStep& r = out.steps[0][i];
        const RankMeasures& rm = c.spectra[i].second;
        csv += csv_line({c.model, std::to_string(c.layers), std::to_string(c.layer), std::to_string(c.step), fmt::format("{:.9g}", c.loss),
                         r.param.name, std::to_string(r.param.rows), std::to_string(r.param.cols),
                         fmt::format("{:.9g}", rm.stable_rank), fmt::format("{:.9g}", rm.effective_rank), std::to_string(spec.tp),
                         spec.strategy, r.strategy, std::string(scale_from_name(spec.muon.scale_from)), fmt::format("{:.9g}", r.rel_diff),
                         fmt::format("{:.9g}", r.cosine), r.bit_identical ? "true" : "false", r.note});
      }
  write_file_atomically((fs::path(o.out_dir) / "training.csv").string(), csv);
}

}  // namespace

TrainingRuns run_report_training(const ReportPlan& plan, const std::string& dir, const SectionOptions& o) {
  TrainingRuns t;
  t.dir = dir;
  const std::string file = (fs::path(dir) / "training.json").string();
  if (!fs::exists(file)) return t;
  t.description = json::parse(read_input_file(file, "training description"), nullptr, /*allow_exceptions=*/false);
  if (t.description.is_discarded()) throw std::invalid_argument(file + " is not valid JSON (tools/make_grads.py --train writes it)");
  t.checkpoints = checkpoints_of(t.description, dir, file);
  for (TrainingCheckpoint& c : t.checkpoints) {
    for (const StepSpec& spec : checkpoint_specs(plan, c.folder)) c.runs.emplace_back(spec, run_step(spec));
    for (const ParamStep& r : c.runs.front().second.steps[0]) {
      const std::string npy = (fs::path(c.folder) / "step0" / (r.param.name + ".npy")).string();
      c.spectra.emplace_back(r.param.name, rank_measures(read_npy(npy).matrix()));
    }
  }
  write_training_csv(t, o);
  return t;
}

}  // namespace nsv::engine
