// nsv audit: what TP does to Muon for a Hugging Face Llama-family config (SPEC §6), per Muon
// matrix and for the whole model: roles, shard sizes, exact strategies, costs, recommendation.
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "cli_checks.hpp"
#include "cli_common.hpp"
#include "commands.hpp"
#include "nsv/analysis/audit.hpp"
#include "nsv/backend.hpp"
#include "nsv/config_schema.hpp"
#include "nsv/engine/progress.hpp"
#include "nsv/analysis/model_config.hpp"
#include "nsv/render/audit.hpp"

namespace nsv::cli {
namespace {

// Every flag's default is the library's (DeepSpeed's gram NS in fp16 on a GPU, SPEC §1.5).
const AuditOptions& library_defaults() {
  static const AuditOptions defaults;
  return defaults;
}

struct AuditCommand {
  NsOptions ns{library_defaults().ns};
  std::string config, backend = std::string(name_of(kDefaultBackend));
  int tp = library_defaults().tp, dp = library_defaults().dp;
  std::string dp_partition = std::string(name_of(library_defaults().dp_partition));
  std::int64_t grain = library_defaults().grain, measure_max_elements = library_defaults().measure_max_elements;
  std::uint64_t seed = library_defaults().seed;
  CostParams cost = library_defaults().cost;
  bool measure = false, json = false, markdown = false, per_rank = false, quiet = false;

  void run() const {
    const ModelConfig model = load_model_config(config);
    AuditOptions o;
    o.tp = tp;
    o.dp = dp;
    o.dp_partition = parse_named<DpPartition>(dp_partition);
    o.grain = grain;
    o.ns = ns.config();
    o.cost = cost;
    o.measure = measure;
    o.measure_max_elements = measure_max_elements;
    o.seed = seed;
    std::unique_ptr<Backend> measuring;
    std::unique_ptr<engine::Progress> progress;
    if (measure) {
      measuring = make_backend(backend);
      o.backend = measuring.get();
      progress = std::make_unique<engine::Progress>("measuring shard divergence", model.layer_params().size(), !quiet);
      o.on_measured = [&progress] { progress->advance(); };
    }
    const AuditResult a = run_audit(model, o);
    if (progress) progress->finish();
    if (json)
      std::printf("%s\n", audit_json(a).dump(2).c_str());
    else if (markdown)
      std::printf("%s", audit_markdown(a).c_str());
    else
      std::printf("%s", audit_text(a, per_rank).c_str());
  }
};

}  // namespace

void add_audit_command(CLI::App& app) {
  auto st = std::make_shared<AuditCommand>();
  auto* cmd = app.add_subcommand(
      "audit",
      "Audit a Hugging Face Llama-family config.json (Llama, Mistral, Qwen2/2.5, Qwen3): per Muon matrix the AutoTP role "
      "and shard sizes, which strategies are exact, per-rank FLOPs/bytes/messages/memory/time of each strategy, the "
      "cheapest exact one; whole-model totals per optimizer step and a recommendation");
  cmd->add_option("--config", st->config, "the model's config.json")->required();
  cmd->add_option("--tp", st->tp, "tensor-parallel degree")->check(CLI::Range(1, 1024))->capture_default_str();
  cmd->add_option("--dp", st->dp,
                  "data-parallel degree of a TP x DP mesh: above 1, the mesh strategies (DP stage + TP strategy), their "
                  "per-rank costs and the owner-over-DP load balance are added (at most 65536 ranks: tp x dp)")
      ->check(CLI::Range(1, 16384))->capture_default_str();
  cmd->add_option("--dp-partition", st->dp_partition,
                  "how DP partitions each TP shard: " + choices_text<DpPartition>(" | ", true))
      ->check(CLI::IsMember(choices_of<DpPartition>()))->capture_default_str();
  cmd->add_option("--grain", st->grain, "tp_grain_size of the grain rule (MLP matrices): 1 training, 64 inference")
      ->check(integer_in(1, kMaxCount))->capture_default_str();
  st->ns.add_to(*cmd);
  cmd->add_option("--latency-us", st->cost.latency_us, "alpha: latency per message, microseconds (assumed NCCL intra-node order)")
      ->check(finite_in(0, 1e9))->capture_default_str();
  cmd->add_option("--link-gbps", st->cost.link_gbps, "beta: link bandwidth per direction, GB/s (NVLink 4 on H100/H200: 450)")
      ->check(finite_in(1e-6, 1e9))->capture_default_str();
  cmd->add_option("--tflops", st->cost.tflops,
                  "GEMM throughput per rank, TFLOP/s (H200 dense FP16/BF16 tensor-core peak: 989; FP32: ~67, TF32: ~494)")
      ->check(finite_in(1e-6, 1e9))->capture_default_str();
  cmd->add_flag("--measure", st->measure, "measure the `shard` divergence of every matrix (Gaussian gradient; CPU reference)");
  cmd->add_option("--measure-max-elements", st->measure_max_elements,
                  "with --measure: larger matrices are measured on a scaled-down proxy with the same aspect ratio and heads")
      ->check(integer_in(1, std::int64_t{1} << 30))->capture_default_str();
  cmd->add_option("--seed", st->seed, "seed of the measured gradients")->check(integer_in(0, kMaxSeed))->capture_default_str();
  cmd->add_option("--backend", st->backend, "backend of --measure: cpu | cuda")->capture_default_str();
  auto* j = cmd->add_flag("--json", st->json, "machine-readable output (schema nsv.audit/1)");
  auto* m = cmd->add_flag("--markdown", st->markdown, "markdown tables (for reports)");
  j->excludes(m);
  cmd->add_flag("--per-rank", st->per_rank, "terminal output: per-rank FLOPs, bytes, messages, memory and time of every strategy");
  cmd->add_flag("--quiet", st->quiet, "no progress messages on stderr");
  cmd->callback([st] { st->run(); });
}

}  // namespace nsv::cli
