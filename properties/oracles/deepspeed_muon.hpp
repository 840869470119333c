#pragma once
// A direct transcription of DeepSpeed's Muon step (oracle O2, issue 13), written from
// deepspeedai/DeepSpeed deepspeed/runtime/zero/muon/original_muon.py at commit 15e3bf4f5770
// (functions muon_update, _per_head_orthogonalize, SingleDeviceMuon.step) and from what the
// PyTorch operations it calls do on fp32 tensors. Facts, not code, carry over:
//
//   muon_update:    momentum.lerp_(grad, 1 - beta)
//                   update = grad.lerp_(momentum, beta) if nesterov else momentum
//     per head:     scale = max(1, head_dim / in_features)**0.5
//                   ns_fn(update.view(num_heads, head_dim, in_features)) * scale, .to(fp32)
//     whole matrix: update = ns_fn(update); update *= max(1, grad.size(-2) / grad.size(-1))**0.5
//                   .to(fp32)
//   step:           p.mul_(1 - lr * weight_decay); p.add_(update, alpha=-lr)
//
// PyTorch's arithmetic for those (CPU, as the golden fixtures ran). Checked on this machine's
// PyTorch 1.13 (Debian python3-torch): p.add_(u, alpha=-0.02) on 4099 Gaussian floats equals the
// fused fma(u, -0.02f, p) in every element and the two-rounding form differs in 144; a bf16
// tensor [1.0078125, 0.5] *= 2**0.5 gives [1.421875, 0.70703125], the bf16 roundings of the float
// products 1.42526 and 0.707107:
//   lerp (aten/src/ATen/native/cpu/LerpKernel.cpp, lerp_vec): fmadd(coeff, end - start, base),
//       coeff = w, base = start when |w| < 0.5, else coeff = w - 1, base = end: one subtraction
//       and one fused multiply-add, the Python weight converted to float.
//   ns_fn returns its result in the compute dtype (bf16/fp16/fp32), and `update *= s` on it, like
//       `* scale`, is a float product of the element and float(s), rounded to the compute dtype.
//   p.mul_(c): one fp32 product with float(c); p.add_(u, alpha=a) (aten/src/ATen/native/ufunc/
//       add.h, vectorized): fmadd(u, float(a), p), one rounding.
//
// The Newton-Schulz map itself is the one thing taken from nsv (nsv::newton_schulz on the CPU
// backend, one matrix at a time): its kernels have their own oracles (checks/reference_runs.hpp,
// kernel_*.cpp, golden.cpp). Everything around it is re-derived here.
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>

#include "nsv/backend.hpp"
#include "nsv/dtype.hpp"
#include "nsv/matrix.hpp"

namespace nsv::checks::ds {

// What a deliberately wrong variant changes (negative controls only; `none` is DeepSpeed).
enum class Deviation { none, unfused_lerp, unfused_add, scale_in_fp32, per_head_unscaled };

struct Hyper {
  double beta = 0.95, lr = 0.02, weight_decay = 0.0;
  bool nesterov = true;
  std::int64_t num_heads = 0;  // 0: None (whole-matrix path)
  // The shape grad.size(-2), grad.size(-1) is read from for the whole-matrix scale; 0 x 0: the
  // gradient's own (DeepSpeed). A TP-aware variant passes the unsharded shape.
  std::int64_t scale_rows = 0, scale_cols = 0;
  Deviation deviation = Deviation::none;
};

inline float torch_lerp(float start, float end, double weight_py, Deviation dev) {
  const auto w = static_cast<float>(weight_py);
  const float diff = end - start;
  if (dev == Deviation::unfused_lerp) return std::abs(w) < 0.5f ? start + w * diff : end - diff * (1.0f - w);
  return std::abs(w) < 0.5f ? std::fma(w, diff, start) : std::fma(w - 1.0f, diff, end);
}

// A float rounded to the compute dtype by Eigen's own conversions.
inline float to_compute_dtype(DType d, float v) {
  if (d == DType::bf16) return static_cast<float>(Eigen::bfloat16(v));
  if (d == DType::fp16) return static_cast<float>(Eigen::half(v));
  return v;
}

// Python's max(1, a / b)**0.5, in double.
inline double python_scale(std::int64_t a, std::int64_t b) {
  return std::pow(std::max(1.0, static_cast<double>(a) / static_cast<double>(b)), 0.5);
}

// `x * scale` on a compute-dtype tensor x (then .to(fp32), exact).
inline MatD times_scale(const MatD& x, double scale, DType compute, Deviation dev) {
  MatD out(x.rows(), x.cols());
  for (Eigen::Index i = 0; i < x.rows(); ++i)
    for (Eigen::Index j = 0; j < x.cols(); ++j) {
      const float product = static_cast<float>(x(i, j)) * static_cast<float>(scale);
      out(i, j) = dev == Deviation::scale_in_fp32 ? product : to_compute_dtype(compute, product);
    }
  return out;
}

struct Step {
  MatD momentum;  // after the step
  MatD update;    // muon_update's return value, fp32
};

// muon_update(grad, momentum, beta, nesterov, num_heads) with ns_fn = nsv's NS under `ns`.
inline Step muon_update(const Backend& backend, const MatD& momentum, const MatD& grad, const Hyper& h, const NsConfig& ns) {
  Step s{MatD(grad.rows(), grad.cols()), MatD()};
  MatD update(grad.rows(), grad.cols());
  for (Eigen::Index i = 0; i < grad.rows(); ++i)
    for (Eigen::Index j = 0; j < grad.cols(); ++j) {
      const auto g = static_cast<float>(grad(i, j));
      const float m = torch_lerp(static_cast<float>(momentum(i, j)), g, 1.0 - h.beta, h.deviation);
      s.momentum(i, j) = m;
      update(i, j) = h.nesterov ? torch_lerp(g, m, h.beta, h.deviation) : m;
    }
  if (h.num_heads > 0) {
    const std::int64_t head_dim = grad.rows() / h.num_heads, in = grad.cols();
    const double scale = h.deviation == Deviation::per_head_unscaled ? 1.0 : python_scale(head_dim, in);
    s.update = MatD(grad.rows(), grad.cols());
    for (std::int64_t k = 0; k < h.num_heads; ++k) {
      const MatD head = update.middleRows(k * head_dim, head_dim);
      s.update.middleRows(k * head_dim, head_dim) = times_scale(newton_schulz(backend, head, ns), scale, ns.dtype, h.deviation);
    }
    return s;
  }
  const bool own_shape = h.scale_rows == 0 && h.scale_cols == 0;
  const double scale = own_shape ? python_scale(grad.rows(), grad.cols()) : python_scale(h.scale_rows, h.scale_cols);
  s.update = times_scale(newton_schulz(backend, update, ns), scale, ns.dtype, h.deviation);
  return s;
}

// SingleDeviceMuon.step's parameter update: p.mul_(1 - lr wd); p.add_(update, alpha=-lr).
inline MatD apply_step(const MatD& param, const MatD& update, const Hyper& h) {
  const auto decay = static_cast<float>(1.0 - h.lr * h.weight_decay), alpha = static_cast<float>(-h.lr);
  MatD out(param.rows(), param.cols());
  for (Eigen::Index i = 0; i < param.rows(); ++i)
    for (Eigen::Index j = 0; j < param.cols(); ++j) {
      const float p = static_cast<float>(param(i, j)) * decay, u = static_cast<float>(update(i, j));
      out(i, j) = h.deviation == Deviation::unfused_add ? p + u * alpha : std::fma(u, alpha, p);
    }
  return out;
}

}  // namespace nsv::checks::ds
