// nsv step: k Muon steps of a Llama layer's seven matrices at tp = 1 and tp = N under a strategy,
// compared parameter by parameter (update rel. diff, cosine, update norms), beside the seed's
// DeepSpeed figures for q_proj.
#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "cli_checks.hpp"
#include "cli_common.hpp"
#include "commands.hpp"
#include "nsv/config_schema.hpp"
#include "nsv/engine/step_engine.hpp"

namespace nsv::cli {
namespace {

struct StepCommand {
  NsOptions ns;
  engine::StepSpec spec;
  std::string grads, scale_from = "local";
  bool generate = false, no_nesterov = false, json = false;
  double lr = 0.05, momentum = 0.95, weight_decay = 0.0;

  void run() {
    if (generate && !grads.empty()) throw std::invalid_argument("give either --grads DIR or --generate, not both");
    if (!generate) {
      spec.grads_dir = grads.empty() ? "fixtures/grads" : grads;
      if (!std::filesystem::is_directory(spec.grads_dir))
        throw std::invalid_argument("no gradient folder " + spec.grads_dir +
                                    ": make one with `/usr/bin/python3 tools/make_grads.py --out " + spec.grads_dir + "` "
                                    "(needs PyTorch), pass --grads DIR, or use --generate for Gaussian gradients");
    }
    spec.muon.ns = ns.config();
    spec.muon.lr = lr;
    spec.muon.beta = momentum;
    spec.muon.nesterov = !no_nesterov;
    spec.muon.weight_decay = weight_decay;
    spec.muon.scale_from = parse_scale_from(scale_from);
    const engine::StepOutcome out = engine::run_step(spec);
    if (json) {
      std::printf("%s\n", out.to_json(spec).dump(2).c_str());
      return;
    }
    std::printf("Muon step%s on %s: model hidden %lld, %lld heads x %lld (kv %lld), intermediate %lld\n",
                spec.steps_k > 1 ? "s" : "", out.source.c_str(), static_cast<long long>(out.dims.hidden),
                static_cast<long long>(out.dims.heads), static_cast<long long>(out.dims.head_dim),
                static_cast<long long>(out.dims.kv_heads), static_cast<long long>(out.dims.intermediate));
    std::printf("tp=1 vs tp=%d, strategy %s (fallback %s), AutoTP layout, scale from %s shape, %s NS %d steps %s, lr %g, "
                "momentum %g%s\n",
                spec.tp, spec.strategy.c_str(), spec.fallback.c_str(), scale_from.c_str(), kernel_name(spec.muon.ns.kernel).data(),
                spec.muon.ns.steps, dtype_name(spec.muon.ns.dtype).data(), lr, momentum, spec.muon.nesterov ? " nesterov" : "");
    std::printf("measure: dw = w_after - w_before of each step (%s weights); rel_diff = ||dw_tpN - dw_tp1|| / ||dw_tp1||\n",
                out.real_weights ? "real" : "zero");
    for (std::size_t s = 0; s < out.steps.size(); ++s) {
      std::printf("\nstep %zu\n%-10s %9s %-15s %-16s %-14s %10s %8s %10s %10s %7s %6s %s\n", s, "param", "shape", "role",
                  "shards", "strategy", "rel_diff", "cosine", "|dw| tp1", "|dw| tpN", "ratio", "scale", "");
      for (const auto& r : out.steps[s]) {
        std::string widths;
        for (auto w : r.widths) {
          if (!widths.empty()) widths += '/';
          widths += std::to_string(w);
        }
        char scale[32];
        std::snprintf(scale, sizeof scale, "%.3g>%.3g", r.scale_1, r.scales_n.empty() ? 1.0 : r.scales_n[0]);
        std::printf("%-10s %4lldx%-4lld %-15s %-16s %-14s %10.4g %8.5f %10.5g %10.5g %+6.1f%% %6s %s%s\n", r.param.name.c_str(),
                    static_cast<long long>(r.param.rows), static_cast<long long>(r.param.cols), role_name(r.param.role).c_str(),
                    widths.c_str(), r.strategy.c_str(), r.rel_diff, r.cosine, r.norm_1, r.norm_n, (r.norm_ratio - 1) * 100,
                    scale, r.bit_identical ? "bit-identical " : "", r.note.c_str());
      }
    }
    std::printf("\nseed (DeepSpeed, full step with ZeRO-1 clipping, real Llama, tp=2): q_proj rel_diff %.2f  cosine %.3f  "
                "|dw| %.4f vs %.4f (%+.0f%%)\n",
                engine::SeedStepFigures::rel_diff, engine::SeedStepFigures::cosine, engine::SeedStepFigures::norm_1, engine::SeedStepFigures::norm_2,
                (engine::SeedStepFigures::norm_2 / engine::SeedStepFigures::norm_1 - 1) * 100);
    std::printf("minimal PyTorch Llama, NS update alone (SPEC 5): q_proj rel_diff ~%.2f  cosine ~%.2f. The gradient, "
                "the clipping and lr set the norms, so compare the rel_diff/cosine/ratio, not |dw|.\n",
                engine::SeedStepFigures::torch_rel_diff, engine::SeedStepFigures::torch_cosine);
  }
};

}  // namespace

void add_step_command(CLI::App& app) {
  auto st = std::make_shared<StepCommand>();
  auto* cmd = app.add_subcommand("step",
                                 "k Muon steps of a Llama layer's 7 matrices at tp=1 and tp=N under a strategy; "
                                 "per-parameter update difference");
  st->ns.add_to(*cmd);
  cmd->add_option("--grads", st->grads,
                  "folder with step0/<name>.npy ... (+ weights/, grads.json) from tools/make_grads.py (default: fixtures/grads)");
  cmd->add_flag("--generate", st->generate, "use generated Gaussian gradients instead of a folder");
  cmd->add_option("--seed", st->spec.seed, "seed of the generated gradients")->check(integer_in(0, kMaxSeed))->capture_default_str();
  cmd->add_option("--hidden", st->spec.dims.hidden, "generated: hidden size")->check(integer_in(1, kMaxCount))->capture_default_str();
  cmd->add_option("--heads", st->spec.dims.heads, "generated: attention heads")->check(integer_in(1, kMaxCount))->capture_default_str();
  cmd->add_option("--kv-heads", st->spec.dims.kv_heads, "generated: KV heads")->check(integer_in(1, kMaxCount))->capture_default_str();
  cmd->add_option("--head-dim", st->spec.dims.head_dim, "generated: head dimension")->check(integer_in(1, kMaxCount))->capture_default_str();
  cmd->add_option("--intermediate", st->spec.dims.intermediate, "generated: MLP intermediate size")->check(integer_in(1, kMaxCount))->capture_default_str();
  cmd->add_option("--tp", st->spec.tp, "tensor-parallel degree N compared with tp=1")->check(CLI::Range(1, 4096))->capture_default_str();
  cmd->add_option("--steps-k", st->spec.steps_k, "Muon steps (momentum carried), one gradient folder each")->check(CLI::Range(1, 1000))->capture_default_str();
  cmd->add_option("--strategy", st->spec.strategy, choices_text<Strategy>(" | "))->check(CLI::IsMember(choices_of<Strategy>()))->capture_default_str();
  cmd->add_option("--fallback", st->spec.fallback, "strategy for matrices per_head does not apply to (o_proj, MLP)")
      ->check(CLI::IsMember(whole_target_strategies()))->capture_default_str();
  cmd->add_option("--reduction-order", st->spec.order, "all-reduce order: " + choices_text<ReductionOrder>(" | ", true))
      ->check(CLI::IsMember(choices_of<ReductionOrder>()))->capture_default_str();
  cmd->add_option("--scale-from", st->scale_from, "sqrt(rows/cols) scale from the local shard (DeepSpeed today) or the global shape")
      ->check(CLI::IsMember({"local", "global"}))->capture_default_str();
  cmd->add_option("--lr", st->lr, "learning rate")->check(finite_in(0, 1e6))->capture_default_str();
  cmd->add_option("--momentum", st->momentum, "momentum beta")->check(finite_in(0, 1))->capture_default_str();
  cmd->add_option("--weight-decay", st->weight_decay, "decoupled weight decay")->check(finite_in(0, 1e6))->capture_default_str();
  cmd->add_flag("--no-nesterov", st->no_nesterov, "plain momentum instead of Nesterov");
  cmd->add_flag("--json", st->json, "machine-readable output");
  cmd->callback([st] { st->run(); });
}

}  // namespace nsv::cli
