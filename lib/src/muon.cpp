#include "nsv/muon.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

#include "nsv/metrics.hpp"
#include "nsv/per_head.hpp"

namespace nsv {

ScaleFrom parse_scale_from(std::string_view s) {
  if (s == "local") return ScaleFrom::local;
  if (s == "global") return ScaleFrom::global;
  throw std::invalid_argument("unknown scale source '" + std::string(s) + "': expected local or global");
}
std::string_view scale_from_name(ScaleFrom s) { return s == ScaleFrom::local ? "local" : "global"; }

double aspect_scale(std::int64_t rows, std::int64_t cols) {
  if (rows == 0 || cols == 0) return 1.0;  // an empty (zero-width) shard has no aspect to scale by
  return rows > cols ? std::sqrt(static_cast<double>(rows) / static_cast<double>(cols)) : 1.0;
}

// PyTorch's CPU kernel (aten/src/ATen/native/cpu/LerpKernel.cpp, lerp_vec) computes each branch
// as one fused multiply-add, fmadd(coeff, end - start, base), rounded once; two separate
// roundings differ from it by up to thousands of ulps where the sum cancels (DeepSpeed's golden
// momenta, fixtures/golden/deepspeed/mu_0*, match the fused form bit for bit; the unfused form differs
// in about 28% of their elements from the second step on).
float lerp_fp32(float start, float end, float weight) {
  const float diff = end - start;
  return std::abs(weight) < 0.5f ? std::fma(weight, diff, start) : std::fma(weight - 1.0f, diff, end);
}

MatD momentum_and_blend(MatD& momentum, const MatD& grad, const MuonConfig& cfg) {
  if (momentum.rows() != grad.rows() || momentum.cols() != grad.cols())
    throw std::invalid_argument("momentum and gradient differ in shape");
  // Python computes 1 - beta in double; PyTorch converts the scalar weight to float.
  const auto w_momentum = static_cast<float>(1.0 - cfg.beta);
  const auto ema = [&](double m, double g) {
    return double(lerp_fp32(static_cast<float>(m), static_cast<float>(g), w_momentum));
  };
  const bool finite = all_finite(grad);
  if (finite) momentum = momentum.binaryExpr(grad, ema);
  // Without Nesterov the update is the momentum. When the step is skipped, return the momentum
  // the step would have produced (non-finite where the gradient is), never the stale momentum,
  // which would be a silent finite update (SPEC §1.4: a non-finite grad yields a non-finite update).
  if (!cfg.nesterov) return finite ? momentum : MatD(momentum.binaryExpr(grad, ema));
  return blend_of(grad, momentum, cfg);
}

MatD blend_of(const MatD& grad, const MatD& momentum_after, const MuonConfig& cfg) {
  if (momentum_after.rows() != grad.rows() || momentum_after.cols() != grad.cols())
    throw std::invalid_argument("momentum and gradient differ in shape");
  if (!cfg.nesterov) return momentum_after;
  const auto w_blend = static_cast<float>(cfg.beta);
  return grad.binaryExpr(momentum_after, [&](double g, double m) {
    return double(lerp_fp32(static_cast<float>(g), static_cast<float>(m), w_blend));
  });
}

namespace {

// DeepSpeed scales the NS result in its compute dtype (`update *= max(1, rows/cols)**0.5` on the
// bf16/fp16/fp32 tensor ns_fn returns): a float product rounded back to that dtype (fp32 and fp64
// results stay the fp32 product).
MatD scaled_in_compute_dtype(const MatD& x, double scale, DType compute) {
  if (scale == 1.0) return x;
  const auto s = static_cast<float>(scale);
  return x.unaryExpr([s, compute](double v) { return double(round_to(compute, static_cast<float>(v) * s)); });
}

// The NS result is stored back in the gradient's dtype (fp32).
MatD to_fp32(const MatD& x) {
  return x.unaryExpr([](double v) { return double(static_cast<float>(v)); });
}

}  // namespace

MatD muon_update(const Backend& b, MatD& momentum, const MatD& grad, const MuonConfig& cfg, std::int64_t heads) {
  const MatD blend = momentum_and_blend(momentum, grad, cfg);
  if (!all_finite(grad)) return blend;
  if (heads > 0) return to_fp32(per_head_ns(b, blend, heads, cfg.ns));
  return scaled_in_compute_dtype(to_fp32(newton_schulz(b, blend, cfg.ns)), aspect_scale(grad.rows(), grad.cols()), cfg.ns.dtype);
}

ShardedUpdate sharded_muon_update(const Backend& b, std::vector<MatD>& momentum_shards, const std::vector<MatD>& grad_shards,
                                  const Layout& layout, std::int64_t head_dim, Strategy strategy, const MuonConfig& cfg,
                                  const StrategyOptions& opt) {
  if (momentum_shards.size() != grad_shards.size() || static_cast<int>(grad_shards.size()) != layout.tp())
    throw std::invalid_argument("one gradient and one momentum shard per rank are required");
  std::vector<MatD> blends;
  for (std::size_t r = 0; r < grad_shards.size(); ++r) blends.push_back(momentum_and_blend(momentum_shards[r], grad_shards[r], cfg));
  return sharded_update_from_blends(b, blends, layout, head_dim, strategy, cfg, opt);
}

ShardedUpdate sharded_update_from_blends(const Backend& b, const std::vector<MatD>& blend_shards, const Layout& layout,
                                         std::int64_t head_dim, Strategy strategy, const MuonConfig& cfg,
                                         const StrategyOptions& opt) {
  if (static_cast<int>(blend_shards.size()) != layout.tp()) throw std::invalid_argument("one blend shard per rank is required");
  ShardedUpdate out;
  out.run = run_strategy(strategy, b, ShardedMatrix{blend_shards, layout, head_dim}, cfg.ns, opt);
  const MatD whole_shape = assemble(blend_shards, layout);
  for (std::size_t r = 0; r < blend_shards.size(); ++r) {
    const MatD& blend = blend_shards[r];
    // A non-finite blend comes from a non-finite gradient (the momentum only ever takes finite
    // ones): this rank's guard skips the step, the update stays non-finite.
    if (!all_finite(blend)) {
      out.updates.push_back(blend);
      out.scales.push_back(1.0);
      continue;
    }
    const double scale = strategy == Strategy::per_head ? 1.0  // per-head scales each head block itself
                         : cfg.scale_from == ScaleFrom::local ? aspect_scale(blend.rows(), blend.cols())
                                                              : aspect_scale(whole_shape.rows(), whole_shape.cols());
    out.updates.push_back(scaled_in_compute_dtype(to_fp32(out.run.outputs[r]), scale, cfg.ns.dtype));
    out.scales.push_back(scale);
  }
  return out;
}

void apply_update(MatD& param, const MatD& update, const MuonConfig& cfg) {
  const auto decay = static_cast<float>(1.0 - cfg.lr * cfg.weight_decay), lr = static_cast<float>(cfg.lr);
  param = param.binaryExpr(update, [&](double p, double u) {
    // p.mul_(decay), then p.add_(u, alpha=-lr): PyTorch's add with alpha is one fused
    // multiply-add (fmadd(u, alpha, p), aten/src/ATen/native/ufunc/add.h), rounded once.
    return double(std::fma(static_cast<float>(u), -lr, static_cast<float>(p) * decay));
  });
}

}  // namespace nsv
