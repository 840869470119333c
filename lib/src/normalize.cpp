#include "normalize.hpp"

#include <cmath>
#include <stdexcept>
#include <type_traits>

namespace nsv::detail {
namespace {

// The values rounded to the normalization dtype nd, in the frame's row-major order. T holds
// every nd value exactly (float for nd = fp32/bf16/fp16, double for fp64), as in `divide`.
template <class T, class View>
Mat<T> rounded_copy(const View& m, DType nd) {
  Mat<T> out(m.rows(), m.cols());
  with_rounding_to(nd, [&](auto rnd) {
    for (Eigen::Index i = 0; i < m.rows(); ++i)
      for (Eigen::Index j = 0; j < m.cols(); ++j) out(i, j) = rnd(static_cast<T>(m(i, j)));
  });
  return out;
}

// Sum of squares in a fixed element order (never vectorized reductions whose order depends on
// memory alignment), accumulated in double: exact to 2^-53 relative per addition, far below
// the compute dtypes' resolution.
template <class T>
double sum_of_squares(const Mat<T>& m) {
  double s = 0.0;
  const T* p = m.data();
  for (Eigen::Index i = 0; i < m.size(); ++i) s += static_cast<double>(p[i]) * static_cast<double>(p[i]);
  return s;
}

// x / denominator as one operation in nd (PyTorch's opmath for bf16/fp16 is float, so the
// quotient is formed in T and then rounded to nd), then rounded to the compute dtype. In place.
template <class T>
void divide(Mat<T>& m, double denominator, DType nd, DType compute) {
  const T d = static_cast<T>(denominator);  // an nd value: exact in T
  T* p = m.data();
  with_rounding_to(nd, [&](auto to_nd) {
    with_rounding_to(compute, [&](auto to_compute) {
      for (Eigen::Index i = 0; i < m.size(); ++i) p[i] = to_compute(to_nd(p[i] / d));
    });
  });
}

}  // namespace

double normalization_denominator(DType nd, double sum_of_squares, double eps) {
  const double norm = round_to(nd, std::sqrt(sum_of_squares));
  const double e = round_to(nd, eps);
  // norm + eps as one addition in nd: in double for fp64, in float (PyTorch's opmath) otherwise
  if (nd == DType::fp64) return norm + e;
  return round_to(nd, static_cast<double>(static_cast<float>(norm) + static_cast<float>(e)));
}

template <class T>
std::vector<Mat<T>> normalize_as(const std::vector<const MatD*>& shards, bool transpose, const NsConfig& cfg,
                                 Communicator* comm) {
  if ((cfg.dtype == DType::fp64) != std::is_same_v<T, double>)
    throw std::logic_error("normalize_as: T must be double for fp64 and float for every other dtype");
  const DType nd = normalization_dtype(cfg);
  std::vector<Mat<T>> out;
  std::vector<double> partial;
  for (const MatD* s : shards) {
    out.push_back(transpose ? rounded_copy<T>(s->transpose(), nd) : rounded_copy<T>(*s, nd));
    partial.push_back(sum_of_squares(out.back()));
  }
  const bool communicates = comm != nullptr && comm->size() > 1;
  const double total = communicates ? comm->all_reduce_scalar(partial, norm_wire_dtype(cfg)) : partial[0];
  const double denominator = normalization_denominator(nd, total, cfg.eps);
  for (auto& m : out) divide(m, denominator, nd, cfg.dtype);
  return out;
}

template std::vector<Mat<float>> normalize_as<float>(const std::vector<const MatD*>&, bool, const NsConfig&,
                                                     Communicator*);
template std::vector<Mat<double>> normalize_as<double>(const std::vector<const MatD*>&, bool, const NsConfig&,
                                                       Communicator*);

}  // namespace nsv::detail
