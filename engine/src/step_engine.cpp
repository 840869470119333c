#include "nsv/engine/step_engine.hpp"

#include <algorithm>
#include <filesystem>
#include <stdexcept>

#include "nsv/backend.hpp"
#include "nsv/config_schema.hpp"
#include "nsv/cost_model.hpp"
#include "nsv/engine/grads_description.hpp"
#include "nsv/input_file.hpp"
#include "nsv/invalid_field.hpp"
#include "nsv/layout.hpp"
#include "nsv/metrics.hpp"
#include "nsv/npy.hpp"
#include "nsv/resources.hpp"
#include "nsv/spectra.hpp"
#include "nsv/strategies.hpp"

namespace nsv::engine {
namespace fs = std::filesystem;
namespace {

MatD fp32_delta(const MatD& after, const MatD& before) {
  return after.binaryExpr(before, [](double a, double b) { return double(static_cast<float>(a) - static_cast<float>(b)); });
}

// w_after - w_before of one step, from the real weights when there are any, else from zero
// weights (then it is -lr * update, rounded to fp32).
MatD apply_and_delta(MatD& w, const MatD& update, const MuonConfig& cfg) {
  const MatD before = w;
  apply_update(w, update, cfg);
  return fp32_delta(w, before);
}

// The model's dimensions (and the initializer's standard deviation) from DIR/grads.json.
void read_description(const std::string& dir, StepOutcome& out) {
  const fs::path p = fs::path(dir) / "grads.json";
  if (!fs::exists(p)) return;
  const GradsDescription d = parse_grads_description(read_input_file(p.string(), "gradient description"), p.string(), out.dims);
  out.dims = d.dims;
  out.initializer_range = d.initializer_range;
}

// Generated gradients are allocated from the dimensions alone: check they fit first. Per matrix
// the engine holds steps_k gradients, the weights and 6 state copies (3 momenta, 3 weights), and
// the whole-matrix and sharded NS of one matrix at a time.
void require_generated_model_fits(const std::vector<MuonParam>& params, int steps_k) {
  std::uint64_t bytes = 0, largest_ns = 0;
  for (const MuonParam& p : params) {
    const std::uint64_t copies = static_cast<std::uint64_t>(steps_k) + 7;
    bytes += saturating_product(saturating_product(copies, static_cast<std::uint64_t>(p.elements())), sizeof(double));
    largest_ns = std::max(largest_ns, ns_working_bytes(p.rows, p.cols));
  }
  require_memory(bytes + largest_ns, "hidden",
                 "a generated layer of " + std::to_string(params.size()) + " Muon matrices (hidden, heads, head dim and intermediate "
                 "size fix their shapes)");
}

}  // namespace

std::string StepSpec::source() const {
  return grads_dir.empty() ? "generated Gaussian gradients (seed " + std::to_string(seed) + ")" : grads_dir;
}

int available_grad_steps(const std::string& dir) {
  int n = 0;
  while (fs::is_directory(fs::path(dir) / ("step" + std::to_string(n)))) ++n;
  return n;
}

StepOutcome run_step(const StepSpec& spec) {
  if (spec.tp < 1) throw InvalidField("tp", "must be >= 1, got " + std::to_string(spec.tp));
  if (spec.steps_k < 1) throw InvalidField("steps_k", "must be >= 1");
  const Strategy strategy = parse_named<Strategy>(spec.strategy), fallback = parse_named<Strategy>(spec.fallback, "fallback");
  if (fallback == Strategy::per_head) throw InvalidField("fallback", "cannot be per_head (it is what needs a fallback)");
  const ReductionOrder order = parse_named<ReductionOrder>(spec.order);
  spec.muon.ns.validate();

  StepOutcome out;
  out.dims = spec.dims;
  out.source = spec.source();
  if (!spec.grads_dir.empty()) {
    if (!fs::is_directory(spec.grads_dir))
      throw InvalidField("grads", spec.grads_dir + " is not a folder (make one with: /usr/bin/python3 tools/make_grads.py --out " +
                                      spec.grads_dir + ")");
    read_description(spec.grads_dir, out);
    const int have = available_grad_steps(spec.grads_dir);
    if (have < spec.steps_k)
      throw InvalidField("steps_k", "is " + std::to_string(spec.steps_k) + ", but " + spec.grads_dir + " holds " + std::to_string(have) +
                                        " gradient step folder(s) (step0..)");
  }
  const auto params = llama_layer_params(out.dims);
  if (spec.grads_dir.empty()) require_generated_model_fits(params, spec.steps_k);
  const auto backend = make_cpu_backend();

  // Load (or generate) everything first, so a missing or malformed file fails before any work.
  std::vector<std::vector<MatD>> grads(static_cast<std::size_t>(spec.steps_k));
  std::vector<MatD> weights;
  out.real_weights = !spec.grads_dir.empty() && fs::is_directory(fs::path(spec.grads_dir) / "weights");
  for (std::size_t i = 0; i < params.size(); ++i) {
    const auto& p = params[i];
    const auto check = [&](const MatD& m, const std::string& file) {
      if (m.rows() != p.rows || m.cols() != p.cols)
        throw std::invalid_argument(file + " is " + std::to_string(m.rows()) + "x" + std::to_string(m.cols()) + ", but " + p.name +
                                    " of this model is " + std::to_string(p.rows) + "x" + std::to_string(p.cols));
      if (!all_finite(m)) throw std::invalid_argument(file + " holds NaN or Inf");
    };
    for (int s = 0; s < spec.steps_k; ++s) {
      MatD g;
      if (spec.grads_dir.empty()) {
        g = gaussian_matrix(p.rows, p.cols, spec.seed * 1000003ULL + static_cast<std::uint64_t>(s) * 101 + i);
        g = g.unaryExpr([](double v) { return double(static_cast<float>(v * 1e-3)); });
      } else {
        const std::string file = (fs::path(spec.grads_dir) / ("step" + std::to_string(s)) / (p.name + ".npy")).string();
        g = read_npy(file).matrix();
        check(g, file);
      }
      grads[static_cast<std::size_t>(s)].push_back(std::move(g));
    }
    if (out.real_weights) {
      const std::string file = (fs::path(spec.grads_dir) / "weights" / (p.name + ".npy")).string();
      weights.push_back(read_npy(file).matrix());
      check(weights.back(), file);
    } else {
      weights.push_back(MatD::Zero(p.rows, p.cols));
    }
  }

  struct State {
    MatD mom1, mom_whole, w1, w_whole, wn;
    std::vector<MatD> mom_n;
  };
  std::vector<State> state;
  for (std::size_t i = 0; i < params.size(); ++i) {
    const Layout layout = autotp_layout(params[i], spec.tp);
    const MatD zero = MatD::Zero(params[i].rows, params[i].cols);
    state.push_back({zero, zero, weights[i], weights[i], weights[i], split(zero, layout)});
  }

  for (int s = 0; s < spec.steps_k; ++s) {
    std::vector<ParamStep> rows;
    for (std::size_t i = 0; i < params.size(); ++i) {
      const MuonParam& p = params[i];
      State& st = state[i];
      const MatD& g = grads[static_cast<std::size_t>(s)][i];
      ParamStep r;
      r.param = p;
      const Layout layout = autotp_layout(p, spec.tp);
      r.widths = layout.widths();
      r.rank0_shard = shard_shape(layout, p.rows, p.cols, 0);
      Strategy used = strategy;
      if (strategy == Strategy::per_head && !p.heads_on_rows()) {
        used = fallback;
        r.note = p.heads > 0 ? "per_head n/a: heads on dim 1 (row-parallel); ran " + std::string(strategy_name(fallback))
                             : "per_head n/a: no head structure; ran " + std::string(strategy_name(fallback));
      }
      r.strategy = std::string(strategy_name(used));
      const std::int64_t heads_1 = used == Strategy::per_head ? p.heads : 0;
      // tp = 1 under the same semantics (per-head NS for per_head, whole-matrix NS otherwise).
      const MatD u1 = muon_update(*backend, st.mom1, g, spec.muon, heads_1);
      r.scale_1 = heads_1 > 0 ? 1.0 : aspect_scale(p.rows, p.cols);
      const MatD d1 = apply_and_delta(st.w1, u1, spec.muon);
      // tp = N.
      const auto g_shards = split(g, layout);
      const ShardedUpdate sh = sharded_muon_update(*backend, st.mom_n, g_shards, layout, p.heads_on_rows() ? p.head_dim : 0,
                                                   used, spec.muon, {order, DType::fp32});
      const MatD un = assemble(sh.updates, layout);
      r.scales_n = sh.scales;
      const MatD dn = apply_and_delta(st.wn, un, spec.muon);
      r.rel_diff = rel_diff(dn, d1);
      r.cosine = cosine(dn, d1);
      r.norm_1 = d1.norm();
      r.norm_n = dn.norm();
      r.norm_ratio = norm_ratio(dn, d1);
      r.bit_identical = compare_bits(dn, d1, DType::fp32).identical;
      if (heads_1 > 0) {  // also against the whole-matrix optimizer at tp = 1
        const MatD uw = muon_update(*backend, st.mom_whole, g, spec.muon, 0);
        r.rel_diff_vs_whole = rel_diff(dn, apply_and_delta(st.w_whole, uw, spec.muon));
      } else {
        r.rel_diff_vs_whole = r.rel_diff;
      }
      for (const auto& t : sh.run.ledger.ranks) r.bytes_sent = std::max(r.bytes_sent, t.bytes_sent);
      for (auto f : sh.run.flops) r.flops = std::max(r.flops, f);
      r.collectives = sh.run.ledger.total_calls();
      rows.push_back(std::move(r));
    }
    out.steps.push_back(std::move(rows));
  }
  return out;
}

nlohmann::json StepOutcome::to_json(const StepSpec& spec) const {
  nlohmann::json steps_j = nlohmann::json::array();
  for (std::size_t s = 0; s < steps.size(); ++s) {
    nlohmann::json ps = nlohmann::json::array();
    for (const auto& r : steps[s])
      ps.push_back({{"name", r.param.name}, {"rows", r.param.rows}, {"cols", r.param.cols}, {"role", role_name(r.param.role)},
                    {"split_axis", r.param.split_axis}, {"shard_widths", r.widths}, {"strategy", r.strategy}, {"note", r.note},
                    {"scale_tp1", r.scale_1}, {"scales_tpN", r.scales_n}, {"rel_diff", r.rel_diff}, {"cosine", r.cosine},
                    {"norm_tp1", r.norm_1}, {"norm_tpN", r.norm_n}, {"norm_ratio", r.norm_ratio},
                    {"bit_identical", r.bit_identical}, {"rel_diff_vs_whole_tp1", r.rel_diff_vs_whole},
                    {"bytes_sent_max", r.bytes_sent}, {"flops_max", r.flops}, {"collectives", r.collectives}});
    steps_j.push_back({{"step", s}, {"params", ps}});
  }
  return {{"source", source},
          {"model", {{"hidden", dims.hidden}, {"heads", dims.heads}, {"kv_heads", dims.kv_heads}, {"head_dim", dims.head_dim},
                     {"intermediate", dims.intermediate}}},
          {"tp", spec.tp}, {"strategy", spec.strategy}, {"fallback", spec.fallback}, {"reduction_order", spec.order},
          {"scale_from", scale_from_name(spec.muon.scale_from)}, {"lr", spec.muon.lr}, {"momentum", spec.muon.beta},
          {"nesterov", spec.muon.nesterov}, {"weight_decay", spec.muon.weight_decay},
          {"kernel", kernel_name(spec.muon.ns.kernel)}, {"ns_steps", spec.muon.ns.steps}, {"dtype", dtype_name(spec.muon.ns.dtype)},
          {"real_weights", real_weights},
          {"measure", "delta_w = w_after - w_before (fp32) of each step; rel_diff = ||dw_N - dw_1|| / ||dw_1||"},
          {"steps", steps_j},
          {"seed_reference",
           {{"param", "q_proj"}, {"tp", 2}, {"rel_diff", SeedStepFigures::rel_diff}, {"cosine", SeedStepFigures::cosine},
            {"norm_tp1", SeedStepFigures::norm_1}, {"norm_tp2", SeedStepFigures::norm_2},
            {"what", "full DeepSpeed step, ZeRO-1 (gradient clipping acts on the orthogonalized update), real Llama"},
            {"torch_minimal_llama_ns_only", {{"rel_diff", SeedStepFigures::torch_rel_diff}, {"cosine", SeedStepFigures::torch_cosine}}}}}};
}

}  // namespace nsv::engine
