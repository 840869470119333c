#pragma once
// A rigorous first-order error bound for NS of a 1 x n matrix, by running error analysis
// (Wilkinson; Higham, "Accuracy and Stability of Numerical Algorithms", §3.3).
//
// A 1 x n row x_j has one singular value, and every operation of either kernel scales all its
// elements by the same scalar, so the kernel reduces to a scalar recurrence on the row's norm.
// Each rounded operation of that recurrence is replayed here on a value together with a bound
// on its absolute error: |fl(x op y) - (x op y)| <= u |x op y| plus the propagated errors.
// Unlike the general B(G) of tolerances.hpp, this bound sees the intermediates' true sizes:
// with the `you` schedule phi(1) = 0.117 is a difference of terms of size 4..7, so a relative
// error of u in each term is 50 u relative to the result.
#include <cmath>
#include <cstdint>

#include "nsv/dtype.hpp"
#include "nsv/kernels.hpp"

namespace nsv::checks {

struct ErrVal {
  double v = 0;  // the exact value of this stage
  double e = 0;  // bound on |computed - exact|
};

class RowVectorErrorBound {
 public:
  RowVectorErrorBound(const NsConfig& cfg, std::int64_t n) : cfg_(cfg), n_(static_cast<double>(n)) {
    const bool narrow = cfg.dtype != DType::fp64 && cfg.dtype != DType::fp32;
    // An elementwise op computes in float (double for fp64) and rounds to the dtype: two
    // roundings for the 16-bit dtypes.
    u_el_ = unit_roundoff(cfg.dtype) + (narrow ? unit_roundoff(DType::fp32) : 0.0);
    u_acc_ = cfg.dtype == DType::fp64 ? unit_roundoff(DType::fp64)
             : cfg.accumulate == Accumulate::fp32 ? unit_roundoff(DType::fp32)
                                                  : unit_roundoff(cfg.dtype);
  }

  // Relative error bound of NS(g) for a row g of norm `norm` (the exact result is
  // phi(norm / (norm + eps)) g / norm with cfg's coefficients in float64).
  double relative(double norm) const {
    ErrVal x = normalized(norm);
    const bool gram_loop = cfg_.kernel == Kernel::gram && n_ > 1;
    x = gram_loop ? gram(x) : standard(x);
    const double first_order = x.v == 0 ? 0 : x.e / std::abs(x.v);
    return first_order * (1.0 + first_order);  // second-order terms, while first_order < 1
  }

 private:
  ErrVal mul(ErrVal x, ErrVal y, double u) const {
    const double v = x.v * y.v;
    return {v, std::abs(x.v) * y.e + std::abs(y.v) * x.e + u * std::abs(v)};
  }
  ErrVal add(ErrVal x, ErrVal y, double u) const {
    const double v = x.v + y.v;
    return {v, x.e + y.e + u * std::abs(v)};
  }
  // A coefficient as the kernel holds it: cast to float (double for fp64).
  ErrVal coefficient(double k) const {
    const double held = cfg_.dtype == DType::fp64 ? k : static_cast<double>(static_cast<float>(k));
    return {k, std::abs(held - k)};
  }
  // x x^T of the row: an inner product of length n (worst case n u_acc, each product rounded
  // too when accumulating in the compute dtype), rounded once to the dtype.
  ErrVal gram_of(ErrVal x) const {
    const double v = x.v * x.v;
    const double sum_error = n_ * u_acc_ * (cfg_.accumulate == Accumulate::compute ? 2 : 1);
    return {v, 2 * std::abs(x.v) * x.e + (sum_error + u_el_) * v};
  }
  // The normalized row's norm x = ||g|| / (||g|| + eps), with the kernel's roundings:
  // elements cast to the normalization dtype nd (u_nd each), the norm (sum in double, sqrt and
  // rounding to nd), eps rounded to nd and added (float add then nd), the quotient (float
  // division then nd), then the cast to the compute dtype.
  ErrVal normalized(double norm) const {
    const DType nd = normalization_dtype(cfg_);
    const bool narrow_nd = nd != DType::fp64 && nd != DType::fp32;
    const double u_nd = unit_roundoff(nd), u_nd_op = u_nd + (narrow_nd ? unit_roundoff(DType::fp32) : 0.0);
    const double exact = norm / (norm + cfg_.eps);
    const double eps_held = round_to(nd, cfg_.eps);
    const double norm_error = (u_nd + 0.5 * n_ * unit_roundoff(DType::fp64)) * norm + u_nd * norm;  // cast + sum + sqrt/round
    const double den = norm + cfg_.eps;
    const double den_error = norm_error + std::abs(eps_held - cfg_.eps) + u_nd_op * den;
    // relative error of each quotient: element cast (u_nd) + denominator + division, then the cast to c
    const double rel = u_nd + den_error / den + u_nd_op + (nd == cfg_.dtype ? 0.0 : u_el_);
    return {exact, rel * exact};
  }
  ErrVal polynomial(ErrVal r, const Coeffs& k) const {  // b R + (c R) R
    const ErrVal cr = mul(coefficient(k.c), r, u_el_), crr = mul(cr, r, u_el_);
    return add(mul(coefficient(k.b), r, u_el_), crr, u_el_);
  }
  ErrVal lincomb(double a, ErrVal x, ErrVal p) const {  // a X + P
    return add(mul(coefficient(a), x, u_el_), p, u_el_);
  }
  ErrVal standard(ErrVal x) const {
    for (int s = 0; s < cfg_.steps; ++s) {
      const Coeffs& k = cfg_.coeffs.at_step(s);
      const ErrVal b = polynomial(gram_of(x), k);
      x = lincomb(k.a, x, mul(b, x, u_el_));
    }
    return x;
  }
  ErrVal gram(ErrVal x) const {
    if (cfg_.steps == 0) return x;
    ErrVal r = gram_of(x), q{};
    bool have_q = false;
    for (int i = 0; i < cfg_.steps; ++i) {
      const Coeffs& k = cfg_.coeffs.at_step(i);
      if (cfg_.restarts_before(i)) {
        x = mul(q, x, u_el_);
        r = gram_of(x);
        have_q = false;
      }
      const ErrVal z = polynomial(r, k);
      q = have_q ? lincomb(k.a, q, mul(z, q, u_el_)) : add(z, coefficient(k.a), u_el_);
      have_q = true;
      if (i < cfg_.steps - 1 && !cfg_.restarts_before(i + 1)) {
        const ErrVal rz = lincomb(k.a, r, mul(z, r, u_el_));
        r = lincomb(k.a, rz, mul(z, rz, u_el_));
      }
    }
    return mul(q, x, u_el_);
  }

  const NsConfig& cfg_;
  double n_;
  double u_el_ = 0, u_acc_ = 0;
};

}  // namespace nsv::checks
