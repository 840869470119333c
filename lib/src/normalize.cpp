#include "normalize.hpp"

#include <cmath>

namespace nsv::detail {
namespace {

// One arithmetic operation in dtype d: narrow dtypes compute in float and round (PyTorch's
// opmath for bf16/fp16 is float), fp32 in float, fp64 in double.
double quotient_in(DType d, double x, double y) {
  if (d == DType::fp64) return x / y;
  return round_to(d, static_cast<double>(static_cast<float>(x) / static_cast<float>(y)));
}
double sum_in(DType d, double x, double y) {
  if (d == DType::fp64) return x + y;
  return round_to(d, static_cast<double>(static_cast<float>(x) + static_cast<float>(y)));
}

// Sum of squares in a fixed element order (never vectorized reductions whose order depends on
// memory alignment), accumulated in double: exact to 2^-53 relative per addition, far below
// the compute dtypes' resolution.
double sum_of_squares(const MatD& m) {
  double s = 0.0;
  const double* p = m.data();
  for (Eigen::Index i = 0; i < m.size(); ++i) s += p[i] * p[i];
  return s;
}

}  // namespace

std::vector<MatD> normalize(const std::vector<MatD>& shards, const NsConfig& cfg, Communicator* comm) {
  const DType nd = normalization_dtype(cfg);
  std::vector<MatD> out;
  out.reserve(shards.size());
  std::vector<double> partial;
  for (const auto& s : shards) {
    out.push_back(s.unaryExpr([nd](double v) { return round_to(nd, v); }));
    partial.push_back(sum_of_squares(out.back()));
  }
  const double total = shards.size() == 1 ? partial[0] : comm->all_reduce_scalar(partial, norm_wire_dtype(cfg));
  const double norm = round_to(nd, std::sqrt(total));
  const double denominator = sum_in(nd, norm, round_to(nd, cfg.eps));
  for (auto& s : out)
    s = s.unaryExpr([&](double v) { return round_to(cfg.dtype, quotient_in(nd, v, denominator)); });
  return out;
}

}  // namespace nsv::detail
