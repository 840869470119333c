#include "nsv/engine/report_plan.hpp"

namespace nsv::engine {

ReportPlan make_report_plan(bool quick) {
  ReportPlan p;
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
  if (quick) {
    p.gram.seeds = 1;
    p.gram.short_sides = {2, 8};
  }
  p.schedules = schedule_study_plan(quick);
  return p;
}

ScheduleStudySpec schedule_study_plan(bool quick) {
  ScheduleStudySpec s;
  s.max_steps = 10;
  s.shard.shapes = {"128x256"};
  s.shard.tps = quick ? std::vector<int>{2, 8} : std::vector<int>{2, 4, 8};
  s.shard.axes = {0, 1};
  s.shard.kernels = {"standard"};
  s.shard.strategies = {"shard"};
  s.shard.spectra = {"gaussian", "lowrank:8"};
  s.shard.seeds = 1;
  s.shard.coeffs = s.schedule_names();
  s.shard.steps.clear();
  for (int k = 1; k <= s.max_steps; ++k) s.shard.steps.push_back(k);
  s.amplification.rows = 128;
  s.amplification.cols = 256;
  s.amplification.spectra = {"gaussian", "lowrank:8"};
  s.amplification.axes = {1};
  s.amplification.seeds = 1;
  s.amplification.tp = 4;
  s.megatron_seeds = quick ? 2 : 4;
  return s;
}

nlohmann::json plan_json(const ReportPlan& p) {
  const AmplificationSpec& a = p.amp;
  return {{"main", p.main.to_json()},
          {"seed", p.seed.to_json()},
          {"aspect", p.aspect.to_json()},
          {"spectrum", p.spectrum.to_json()},
          {"amplification",
           {{"rows", a.rows}, {"cols", a.cols}, {"spectra", a.spectra}, {"axes", a.axes}, {"seeds", a.seeds}, {"tp", a.tp},
            {"max_steps", a.max_steps}}},
          {"step", {{"tp", p.step_tps}, {"lr", p.step_lr}, {"momentum", p.step_momentum}}},
          {"audit", {{"tp", p.audit_tps}}},
          {"gram_stability", p.gram.to_json()},
          {"schedules", p.schedules.to_json()}};
}

}  // namespace nsv::engine
