// nsv shard: one matrix, one strategy at one TP degree, compared rank by rank with its target.
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "cli_checks.hpp"
#include "cli_common.hpp"
#include "commands.hpp"
#include "nsv/backend.hpp"
#include "nsv/config_schema.hpp"
#include "nsv/engine/shard_on_mpi.hpp"
#include "nsv/input_limits.hpp"
#include "nsv/layout.hpp"
#include "nsv/metrics.hpp"
#include "nsv/npy.hpp"
#include "nsv/render/comparison_json.hpp"
#include "nsv/render/config_json.hpp"
#include "nsv/spectra.hpp"
#include "nsv/strategies.hpp"

namespace nsv::cli {
namespace {

struct ShardCommand {
  NsOptions ns;
  MatrixSource source;
  int tp = 2, axis = 0;
  std::int64_t heads = 0, kv_heads = 0, grain = 1;
  std::string strategy = "shard", target, order = std::string(name_of(StrategyOptions{}.order)),
              backend = std::string(name_of(kDefaultBackend)), fused = std::string(name_of(FusedKind::none)), comm = "sim",
              mpi_reduction = "fixed";
  bool json = false;

  void run() const {
    const NsConfig cfg = ns.config();
    const MatD g = source.load();
    require_normalizable(g, cfg, source.describe());  // every shard's norm is at most the whole's
    const Strategy s = parse_named<Strategy>(strategy);
    const Target t = target.empty() ? natural_target(s) : parse_named<Target>(target);
    const FusedKind kind = parse_named<FusedKind>(fused);
    const AutoTpSplit split = autotp_split(kind, axis, axis == 0 ? g.rows() : g.cols(), tp, heads, kv_heads, grain);
    const HeadGeometry& geo = split.per_head;
    const Layout& layout = split.layout;
    const auto computing = make_backend(backend);
    const ShardedMatrix m = shard_matrix(g, layout, axis == 0 ? geo.head_dim : 0);
    const StrategyOptions opt{parse_named<ReductionOrder>(order), DType::fp32};
    Comparison c;
    nlohmann::json j;
    if (comm == "mpi") {
      const auto on_mpi = engine::run_shard_on_mpi(s, *computing, g, layout, m.head_dim, cfg, opt, mpi_reduction, t);
      if (!on_mpi) return;  // world rank 0 prints
      c = on_mpi->comparison;
      j = comparison_json(c);
      j["mpi"] = {{"reduction", mpi_reduction}, {"groups", on_mpi->groups}, {"handed", on_mpi->handed}};
    } else {
      c = compare_with_target(run_strategy(s, *computing, m, cfg, opt), target_result(t, *computing, g, geo.head_dim, cfg), layout);
      j = comparison_json(c);
    }
    j["comm"] = comm;
    j["strategy"] = strategy_name(s);
    j["target"] = target_name(t);
    j["promise"] = promise_name(t == natural_target(s) ? promise_of(s) : Promise::none);
    j["shape"] = {g.rows(), g.cols()};
    j["tp"] = tp;
    j["axis"] = axis;
    j["heads"] = geo.heads;
    j["kv_heads"] = geo.kv_groups;
    j["head_dim"] = geo.head_dim;
    j["grain"] = grain;
    j["fused"] = name_of(kind);
    j["shard_sizes"] = layout.widths();
    j["reduction_order"] = order;
    j["config"] = config_json(cfg);
    j["input"] = source.describe();
    if (json) {
      std::printf("%s\n", j.dump(2).c_str());
      return;
    }
    std::printf("%s on %s, tp=%d, axis=%d (%s split), target=%s, %s %s steps=%d, %s\n", strategy_name(s).data(),
                source.describe().c_str(), tp, axis, axis == 0 ? "row / column-parallel" : "column / row-parallel",
                target_name(t).data(), kernel_name(cfg.kernel).data(), dtype_name(cfg.dtype).data(), cfg.steps,
                comm == "mpi" ? ("MPI ranks, " + mpi_reduction + " reduction").c_str() : "simulated ranks");
    print_rank_table(c);
    std::printf("rel_diff mean %.6g  max %.6g  %s\n", c.rel_diff_mean, c.rel_diff_max,
                c.bit_identical ? "(every element bit-identical to the target)" : "");
  }
};

}  // namespace

void add_shard_command(CLI::App& app) {
  auto st = std::make_shared<ShardCommand>();
  auto* cmd = app.add_subcommand("shard", "Run one TP strategy on simulated or MPI ranks and compare each rank with the target");
  st->source.add_to(*cmd);
  st->ns.add_to(*cmd);
  cmd->add_option("--tp", st->tp, "tensor-parallel degree")->check(CLI::Range(1, 4096))->capture_default_str();
  cmd->add_option("--axis", st->axis, "split axis: 0 = rows (column-parallel: q/k/v, gate/up), 1 = cols (row-parallel: o, down)")
      ->check(CLI::IsMember({0, 1}))->capture_default_str();
  cmd->add_option("--heads", st->heads, "attention heads laid along the split axis (head-aligned shards)")->check(integer_in(1, kMaxCount));
  cmd->add_option("--kv-heads", st->kv_heads, "KV heads (GQA); shards are cut on KV-group boundaries (default: --heads)")->check(integer_in(1, kMaxCount));
  cmd->add_option("--fused", st->fused,
                  "a fused projection cut as AutoTP cuts it (needs --axis 0): none | qkv:glm | qkv:qwen | qkv:phi3 | qkv:bloom | "
                  "qkv:bigcode ([Q;K;V] of --heads query and --kv-heads KV heads) | gate_up ([gate;up])")
      ->capture_default_str();
  cmd->add_option("--grain", st->grain, "tp_grain_size of the grain rule: 1 training, 64 inference")->check(integer_in(1, kMaxCount))->capture_default_str();
  cmd->add_option("--strategy", st->strategy, choices_text<Strategy>(" | "))->check(CLI::IsMember(choices_of<Strategy>()))->capture_default_str();
  cmd->add_option("--target", st->target, "compare against: " + choices_text<Target>(" | ") + " (default: the strategy's own semantics)")
      ->check(CLI::IsMember(choices_of<Target>()));
  cmd->add_option("--reduction-order", st->order, "all-reduce order: " + choices_text<ReductionOrder>(" | ", true))
      ->check(CLI::IsMember(choices_of<ReductionOrder>()))->capture_default_str();
  cmd->add_option("--comm", st->comm,
                  "ranks: sim (simulated in this process) | mpi (one per MPI process: mpirun -np TP nsv shard --comm mpi ...)")
      ->check(CLI::IsMember({"sim", "mpi"}))->capture_default_str();
  cmd->add_option("--mpi-reduction", st->mpi_reduction,
                  "with --comm mpi: fixed (--reduction-order reproduced exactly) | native (MPI_Allreduce's own order)")
      ->check(CLI::IsMember({"fixed", "native"}))->capture_default_str();
  cmd->add_option("--backend", st->backend, choices_text<BackendChoice>(" | ", true))->capture_default_str();
  cmd->add_flag("--json", st->json, "machine-readable output (stable schema, see README)");
  cmd->callback([st] { st->run(); });
}

}  // namespace nsv::cli
