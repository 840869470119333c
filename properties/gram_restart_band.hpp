#pragma once
// A bound on the singular values of the Gram loop's output, restarts included, that follows the
// mechanism by which the loop blows up in half precision.
//
// Derivation. The Gram loop keeps X fixed between (re)starts and iterates on R = X X^T and
// Q = a polynomial in R; in exact arithmetic both share X's left singular vectors, an eigenvalue
// lambda = s^2 of R (s a singular value of X) evolves by g(lambda) = lambda F(lambda)^2 with
// F(lambda) = a + b lambda + c lambda^2, Q's matching eigenvalue is the product of the F's, and
// at the next restart (or the end) X = Q X multiplies s by that product. To first order (the
// assumption K5's band makes too: rounding perturbs the eigenvalues, not the shared
// eigenvectors) rounding enters in four places, each bounded by Weyl's inequality from the
// 2-norm of the error it adds:
//   fresh Gram    R = fl(X X^T): ||E||_2 <= ||E||_F <= u_eff ||X||_F^2 (every entry rounded once
//                 to the dtype, u, after an inner product of length m accumulated with
//                 u_acc, sqrt(m) u_acc; ||X X^T||_F <= ||X||_F^2). So lambda lies in
//                 [s_lo^2 - e, s_hi^2 + e]: it can be NEGATIVE when s is below sqrt(e), and
//                 then g drives it ever more negative (|g(-mu)| = mu (a + |b| mu + c mu^2)^2,
//                 a^2 = 11.9 per step for keller) while F grows: the blow-up;
//   R's update    Z = b R + (c R) R, RZ = a R + Z R, R = a RZ + Z RZ: ten stored results, each
//                 rounded once: an error matrix E of 2-norm <= u_eff ||E||_F / ||M||_F-wise
//                 <= u_eff sqrt(p) ||M||_2 (p the short side; ||M||_2 the largest |h(lambda)| of
//                 the polynomial h it is, over every eigenvalue interval). To first order E moves
//                 an eigenvalue lambda of the new R by at most ||E||_2 times the derivative of
//                 the new value with respect to that result, at lambda (the scalar chain rule on
//                 r' = (a + z) rz, rz = (a + z) l, z = b l + (c l) l: 2 F l for Z and its parts,
//                 2 F l^2 for c R, F for Z R, a R and RZ, 1 for the last three). Errors in the
//                 early results thus reach a tiny eigenvalue in proportion to it (or to F ~ a),
//                 the last results' absolutely: ~u_eff (|a RZ| + |Z RZ| + |R|) per update;
//   Q's update    Q = Z + a I, then Q = a Q + Z Q: likewise (derivative q for Z, l q for c R, 1
//                 for Z Q, a Q and Q);
//   X = Q X       ||E||_2 <= ||E||_F <= u ||Q X||_F + sqrt(p) u_acc ||Q||_F ||X||_F (each entry
//                 rounded once to the dtype, after p products accumulated with u_acc), and
//                 ||Q||_F <= sqrt(p) max|Q|: relative to the result, not to Q, whose largest
//                 eigenvalues belong to directions X hardly has.
// The normalization starts s at x_i (1 +- (3 u_norm + sqrt(m n) u64 / 2)) +- u (the cast to the
// dtype: ||fl(X) - X||_2 <= u ||X||_F <= u), as K5's band does.
// Each singular value is tracked as an interval of s, cut into pieces so that lambda stays tied
// to s within a segment (an interval of lambda taken apart from its s would pair the largest s
// with the negative noise, a pairing no direction has); at every (re)start the pieces are
// joined again. F, g and the polynomials are maximized over an interval exactly (ends and
// critical points). The band's top bounds ||NS(G)||_2, sqrt(sum s_hi^2) bounds ||NS(G)||_F.
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "nsv/dtype.hpp"
#include "nsv/kernels.hpp"
#include "svd_error.hpp"
#include "convergence_band.hpp"
#include "premises.hpp"

namespace nsv::checks {

namespace gram_band_detail {

struct Range {
  double lo = 0, hi = 0;
};

// The range of a polynomial with coefficients (c0, c1, ...) over [lo, hi], from its values at the
// ends and at the real roots of its derivative inside (degree <= 5: derivative of degree <= 4,
// whose roots are found by bisection between the roots of its own derivative, recursively).
inline double eval(const std::vector<double>& c, double x) {
  double v = 0;
  for (std::size_t i = c.size(); i-- > 0;) v = v * x + c[i];
  return v;
}
inline std::vector<double> derivative(const std::vector<double>& c) {
  std::vector<double> d;
  for (std::size_t i = 1; i < c.size(); ++i) d.push_back(static_cast<double>(i) * c[i]);
  return d;
}
// The real roots of c inside (lo, hi), in increasing order.
inline std::vector<double> roots(const std::vector<double>& c, double lo, double hi) {
  if (c.size() <= 1) return {};
  std::vector<double> cuts{lo};
  for (double r : roots(derivative(c), lo, hi)) cuts.push_back(r);
  cuts.push_back(hi);
  std::vector<double> out;
  for (std::size_t i = 0; i + 1 < cuts.size(); ++i) {
    double a = cuts[i], b = cuts[i + 1];
    double fa = eval(c, a), fb = eval(c, b);
    if (fa == 0 && a > lo) out.push_back(a);
    if ((fa < 0) == (fb < 0) || fa == 0 || fb == 0) continue;
    for (int it = 0; it < 80 && b - a > 1e-15 * std::max(1.0, std::abs(a)); ++it) {
      const double m = (a + b) / 2, fm = eval(c, m);
      if ((fm < 0) == (fa < 0)) a = m, fa = fm;
      else b = m;
    }
    out.push_back((a + b) / 2);
  }
  return out;
}
inline Range range(const std::vector<double>& c, Range in) {
  std::vector<double> xs{in.lo, in.hi};
  for (double r : roots(derivative(c), in.lo, in.hi)) xs.push_back(r);
  Range out{std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity()};
  for (double x : xs) {
    const double v = eval(c, x);
    out.lo = std::min(out.lo, v);
    out.hi = std::max(out.hi, v);
  }
  return out;
}
inline double max_abs(const std::vector<double>& c, Range in) {
  const Range r = range(c, in);
  return std::max(std::abs(r.lo), std::abs(r.hi));
}
inline double min_abs(const std::vector<double>& c, Range in) {
  const Range r = range(c, in);
  return r.lo <= 0 && r.hi >= 0 ? 0.0 : std::min(std::abs(r.lo), std::abs(r.hi));
}

using Poly = std::vector<double>;  // coefficients, constant first
inline Poly times(const Poly& x, const Poly& y) {
  Poly out(x.size() + y.size() - 1, 0.0);
  for (std::size_t i = 0; i < x.size(); ++i)
    for (std::size_t j = 0; j < y.size(); ++j) out[i + j] += x[i] * y[j];
  return out;
}

// One piece of a singular value: its s interval, its lambda interval and Q's factor interval.
struct Piece {
  Range s, lambda, q;
};

}  // namespace gram_band_detail

struct GramBand {
  double top = 0;        // bound on ||NS(G)||_2
  double frobenius = 0;  // bound on ||NS(G)||_F
  double peak = 0;       // bound on every value X, R and Q take on the way (overflow beyond it)
};

// x: the normalized singular values of the p x m input (p the short side, m the long side),
// all p of them (zeros included: a rank-deficient input). The gram kernel only (rectangular).
inline GramBand gram_restart_band(const Eigen::VectorXd& x, const NsConfig& cfg, Eigen::Index m, int pieces = 256) {
  using namespace gram_band_detail;
  const double p = static_cast<double>(x.size());
  const double u = unit_roundoff(cfg.dtype);
  const double u_eff = effective_unit_roundoff(cfg, m);
  const double ue = u_eff * std::sqrt(p);
  const double w_rel = 3 * unit_roundoff(normalization_dtype(cfg)) + std::sqrt(p * static_cast<double>(m)) * unit_roundoff(DType::fp64) / 2;
  const double svd_slack = svd_error(x.size(), m) * (x.size() ? x.maxCoeff() : 0.0);
  std::vector<Range> s;
  for (Eigen::Index i = 0; i < x.size(); ++i) s.push_back({std::max(0.0, x(i) * (1 - w_rel) - u - svd_slack), x(i) * (1 + w_rel) + u + svd_slack});
  const auto frobenius = [&] {
    double f = 0;
    for (const Range& r : s) f += r.hi * r.hi;
    return std::sqrt(f);
  };
  // a bound past every float64 value: nothing is bounded any more (returned as +inf throughout)
  const double inf = std::numeric_limits<double>::infinity();
  const GramBand diverged{inf, inf, inf};
  double peak = 0;
  int step = 0;
  while (step < cfg.steps) {
    // one segment: from a (re)start to the step before the next restart (or the last step)
    int end = step + 1;
    while (end < cfg.steps && !cfg.restarts_before(end)) ++end;
    const double gram_error = u_eff * frobenius() * frobenius();
    std::vector<std::vector<Piece>> all(s.size());
    for (std::size_t i = 0; i < s.size(); ++i)
      for (int k = 0; k < pieces; ++k) {
        const double lo = s[i].lo + (s[i].hi - s[i].lo) * k / pieces, hi = s[i].lo + (s[i].hi - s[i].lo) * (k + 1) / pieces;
        all[i].push_back({{lo, hi}, {lo * lo - gram_error, hi * hi + gram_error}, {1, 1}});
      }
    for (int i = step; i < end; ++i) {
      const Coeffs& c = cfg.coeffs.at_step(i);
      // the scalar polynomials of one step, in lambda: F = a + b l + c l^2, Z = F - a, R Z, ...
      const Poly f{c.a, c.b, c.c}, z{0, c.b, c.c}, lambda{0, 1};
      const Poly rz = times(lambda, f), zr = times(lambda, z), zrz = times(z, rz), g = times(rz, f);
      // norms of the stored results: polynomials in R, so their largest value over the eigenvalues
      Range hull{std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity()};
      double q_max = 0, zq_max = 0, fq_max = 0;
      for (const auto& ps : all)
        for (const Piece& pc : ps) {
          hull.lo = std::min(hull.lo, pc.lambda.lo);
          hull.hi = std::max(hull.hi, pc.lambda.hi);
          q_max = std::max(q_max, pc.q.hi);
          peak = std::max({peak, pc.q.hi, std::abs(pc.lambda.lo), std::abs(pc.lambda.hi)});
          if (!std::isfinite(pc.q.hi) || !std::isfinite(pc.lambda.lo) || !std::isfinite(pc.lambda.hi)) return diverged;
          zq_max = std::max(zq_max, max_abs(z, pc.lambda) * pc.q.hi);
          fq_max = std::max(fq_max, max_abs(f, pc.lambda) * pc.q.hi);
        }
      const double r = std::max(std::abs(hull.lo), std::abs(hull.hi));
      const double n_br = std::abs(c.b) * r, n_cr = std::abs(c.c) * r, n_crr = std::abs(c.c) * r * r, n_z = max_abs(z, hull);
      const double n_zr = max_abs(zr, hull), n_ar = std::abs(c.a) * r, n_rz = max_abs(rz, hull), n_zrz = max_abs(zrz, hull),
                   n_arz = std::abs(c.a) * n_rz, n_g = max_abs(g, hull);
      const bool fresh_q = i == step, update_r = i + 1 < end;
      for (auto& ps : all)
        for (Piece& pc : ps) {
          const double big_l = std::max(std::abs(pc.lambda.lo), std::abs(pc.lambda.hi));
          // first-order effect on this eigenvalue of every stored result's rounding: its error
          // (at most ue times the result's norm) times the derivative of Q's or R's new value
          // with respect to that result, at this eigenvalue (scalar chain rule: q' = a q + z q,
          // r' = (a + z) rz, rz = a l + z l, z = b l + (c l) l)
          const double dq = fresh_q ? ue * (n_br + n_crr + n_z + n_cr * big_l + max_abs(f, hull))
                                    : ue * (zq_max + std::abs(c.a) * q_max + fq_max + (n_br + n_crr + n_z + n_cr * big_l) * pc.q.hi);
          pc.q = {std::max(0.0, pc.q.lo * min_abs(f, pc.lambda) - dq), pc.q.hi * max_abs(f, pc.lambda) + dq};
          if (update_r) {
            const double dl = ue * ((n_br + n_crr + n_z) * 2 * max_abs(rz, pc.lambda) + n_cr * 2 * max_abs(times(rz, lambda), pc.lambda) +
                                    (n_zr + n_ar + n_rz) * max_abs(f, pc.lambda) + n_zrz + n_arz + n_g);
            const Range next = range(g, pc.lambda);
            pc.lambda = {next.lo - dl, next.hi + dl};
          }
        }
    }
    // X = Q X, then the pieces joined again
    double q_max = 0;
    for (const auto& ps : all)
      for (const Piece& pc : ps) {
        if (!std::isfinite(pc.q.hi) || !std::isfinite(pc.s.hi)) return diverged;
        q_max = std::max(q_max, pc.q.hi);
      }
    peak = std::max(peak, q_max);
    if (!std::isfinite(q_max)) return diverged;
    const double x_frobenius = frobenius();
    for (std::size_t i = 0; i < s.size(); ++i) {
      Range joined{std::numeric_limits<double>::infinity(), 0};
      for (const Piece& pc : all[i]) {
        joined.lo = std::min(joined.lo, pc.s.lo * pc.q.lo);
        joined.hi = std::max(joined.hi, pc.s.hi * pc.q.hi);
      }
      s[i] = joined;
    }
    // fl(Q X): the rounding of each entry to the dtype, relative to Q X itself, and the
    // accumulation over the p terms of each entry
    const double x_error = u * frobenius() + p * u_accumulate(cfg) * q_max * x_frobenius;
    for (Range& r : s) r = {std::max(0.0, r.lo - x_error), r.hi + x_error};
    if (!std::isfinite(frobenius())) return diverged;
    step = end;
  }
  GramBand band;
  for (const Range& r : s) band.top = std::max(band.top, r.hi);
  band.frobenius = frobenius();
  band.peak = std::max(peak, band.top);
  return band;
}

}  // namespace nsv::checks
