#pragma once
// DeepSpeed's Muon update (SPEC §1.4), for one matrix and for a matrix sharded across
// tensor-parallel ranks under any strategy. All elementwise arithmetic is fp32, as DeepSpeed
// runs it on fp32 gradients and momenta, except the aspect scale: DeepSpeed multiplies the NS
// result in its compute dtype, so the fp32 product is rounded back to bf16/fp16 there.
#include <cstdint>
#include <string_view>
#include <vector>

#include "nsv/backend.hpp"
#include "nsv/strategies.hpp"

namespace nsv {

// Which shape the aspect-ratio scale sqrt(rows/cols) (when rows > cols) is computed from: the
// matrix the rank holds (DeepSpeed under AutoTP today) or the unsharded one.
enum class ScaleFrom { local, global };
ScaleFrom parse_scale_from(std::string_view);
std::string_view scale_from_name(ScaleFrom);

struct MuonConfig {
  double beta = 0.95;
  bool nesterov = true;
  double lr = 0.02;
  double weight_decay = 0.0;
  ScaleFrom scale_from = ScaleFrom::local;
  NsConfig ns;
};

// sqrt(rows/cols) if rows > cols, else 1.
double aspect_scale(std::int64_t rows, std::int64_t cols);

// PyTorch's lerp in fp32: start + w (end - start) for |w| < 0.5, else end - (end - start)(1 - w),
// each computed as one fused multiply-add (one rounding), as PyTorch's CPU kernel does.
float lerp_fp32(float start, float end, float weight);

// momentum <- lerp(momentum, grad, 1 - beta) unless grad holds a non-finite value; returns the
// pre-orthogonalization update: lerp(grad, momentum, beta) with Nesterov, else the momentum (for
// a non-finite grad: the momentum the skipped step would have produced, non-finite).
MatD momentum_and_blend(MatD& momentum, const MatD& grad, const MuonConfig&);
// The pre-orthogonalization update from a gradient and the momentum it produced (the momentum
// buffer after the step, as a run dumps it): lerp(grad, momentum, beta) with Nesterov, else the
// momentum. momentum_and_blend's second half.
MatD blend_of(const MatD& grad, const MatD& momentum_after, const MuonConfig&);

// The whole update of one unsharded matrix (tp = 1). heads > 0 selects per-head NS (heads on
// dim 0, DeepSpeed's `muon_num_heads`). A non-finite gradient yields the non-finite blend.
MatD muon_update(const Backend&, MatD& momentum, const MatD& grad, const MuonConfig&, std::int64_t heads = 0);

// The update each rank applies when the matrix is sharded by `layout` and orthogonalized with
// `strategy`; momentum_shards are updated in place, rank by rank (each rank's finiteness guard
// sees its own shard, as in DeepSpeed).
struct ShardedUpdate {
  std::vector<MatD> updates;
  StrategyRun run;  // the orthogonalization's traffic and FLOPs
  std::vector<double> scales;
};
ShardedUpdate sharded_muon_update(const Backend&, std::vector<MatD>& momentum_shards, const std::vector<MatD>& grad_shards,
                                  const Layout& layout, std::int64_t head_dim, Strategy strategy, const MuonConfig&,
                                  const StrategyOptions& = {});

// The same from each rank's pre-orthogonalization update (blend_of / momentum_and_blend): a rank
// whose blend holds a non-finite value keeps it (its step is skipped).
ShardedUpdate sharded_update_from_blends(const Backend&, const std::vector<MatD>& blend_shards, const Layout& layout,
                                         std::int64_t head_dim, Strategy strategy, const MuonConfig&,
                                         const StrategyOptions& = {});

// p <- p (1 - lr wd) - lr update, in fp32, as SingleDeviceMuon.step: p.mul_(1 - lr wd) rounded, then
// p.add_(update, alpha=-lr) as one fused multiply-add (PyTorch's add kernel).
void apply_update(MatD& param, const MatD& update, const MuonConfig&);

}  // namespace nsv
