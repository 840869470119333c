#include "nsv/lapack_spectra.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "nsv/blas_threads.hpp"
#include "nsv/input_limits.hpp"
#include "row_panels.hpp"

extern "C" {
void dgesdd_(const char* jobz, const int* m, const int* n, double* a, const int* lda, double* s, double* u, const int* ldu,
             double* vt, const int* ldvt, double* work, const int* lwork, int* iwork, int* info);
void dgesvd_(const char* jobu, const char* jobvt, const int* m, const int* n, double* a, const int* lda, double* s, double* u,
             const int* ldu, double* vt, const int* ldvt, double* work, const int* lwork, int* info);
void dpotrf_(const char* uplo, const int* n, double* a, const int* lda, int* info);
void dsyevd_(const char* jobz, const char* uplo, const int* n, double* a, const int* lda, double* w, double* work, const int* lwork,
             int* iwork, const int* liwork, int* info);
}

namespace nsv {
namespace {

int lapack_int(Eigen::Index v, const char* what) {
  if (v > Eigen::Index{1} << 30) throw std::invalid_argument(std::string(what) + ": a side of more than 2^30 is past LAPACK's int");
  return static_cast<int>(v);
}

void refuse_empty(const MatD& m, const char* what) { require_not_empty(what, InputShape::matrix(m.rows(), m.cols())); }

void succeeded(int info, const char* routine) {
  if (info != 0) throw std::runtime_error(std::string(routine) + " failed (info = " + std::to_string(info) + ")");
}

// The short side's Gram matrix of m, p x p column-major, its lower triangle filled: the upper
// triangle of the row-major Gram, by the fixed row panels of row_panels.hpp (the same bits on
// every thread count, and the panels run on every core where one dsyrk call would not).
struct ShortSideGram {
  int p = 0;
  std::vector<double> lower;
};
ShortSideGram short_side_gram(const MatD& m, const char* what) {
  refuse_empty(m, what);
  // rows <= cols: m m^T, the rows of m; else m^T m, the rows of m^T.
  const bool wide = m.rows() <= m.cols();
  ShortSideGram g;
  g.p = lapack_int(wide ? m.rows() : m.cols(), what);
  const int k = lapack_int(wide ? m.cols() : m.rows(), what);
  g.lower.assign(static_cast<std::size_t>(g.p) * static_cast<std::size_t>(g.p), 0.0);
  detail::upper_gram(m.data(), g.p, k, lapack_int(m.cols(), what), !wide, g.lower.data());
  return g;
}

}  // namespace

// A row-major rows x cols matrix is, to LAPACK, the column-major cols x rows matrix m^T: the same
// singular values.
Eigen::VectorXd singular_values(const MatD& m) {
  const OneBlasThread pinned;  // the same bits on every machine (blas_threads.hpp)
  refuse_empty(m, "singular_values");
  const int rows = lapack_int(m.cols(), "singular_values"), cols = lapack_int(m.rows(), "singular_values");
  std::vector<double> a(m.data(), m.data() + m.size());  // dgesdd overwrites its input
  Eigen::VectorXd s(std::min(rows, cols));
  std::vector<int> iwork(8 * static_cast<std::size_t>(std::min(rows, cols)));
  double none = 0, size = 0;
  const int one = 1, query = -1;
  int info = 0;
  dgesdd_("N", &rows, &cols, a.data(), &rows, s.data(), &none, &one, &none, &one, &size, &query, iwork.data(), &info);
  succeeded(info, "dgesdd (workspace query)");
  std::vector<double> work(static_cast<std::size_t>(size));
  const int lwork = static_cast<int>(work.size());
  dgesdd_("N", &rows, &cols, a.data(), &rows, s.data(), &none, &one, &none, &one, work.data(), &lwork, iwork.data(), &info);
  succeeded(info, "dgesdd");
  return s;
}

// m^T = U S V^T (column-major, as above), so m = V S U^T and m's polar factor is (U V^T)^T.
MatD polar_factor(const MatD& m) {
  const OneBlasThread pinned;  // the same bits on every machine (blas_threads.hpp)
  refuse_empty(m, "polar_factor");
  const int rows = lapack_int(m.cols(), "polar_factor"), cols = lapack_int(m.rows(), "polar_factor"), k = std::min(rows, cols);
  std::vector<double> a(m.data(), m.data() + m.size());  // dgesvd overwrites its input
  Eigen::VectorXd s(k);
  Eigen::MatrixXd u(rows, k), vt(k, cols);
  double size = 0;
  const int query = -1;
  int info = 0;
  dgesvd_("S", "S", &rows, &cols, a.data(), &rows, s.data(), u.data(), &rows, vt.data(), &k, &size, &query, &info);
  succeeded(info, "dgesvd (workspace query)");
  std::vector<double> work(static_cast<std::size_t>(size));
  const int lwork = static_cast<int>(work.size());
  dgesvd_("S", "S", &rows, &cols, a.data(), &rows, s.data(), u.data(), &rows, vt.data(), &k, work.data(), &lwork, &info);
  succeeded(info, "dgesvd");
  return (u * vt).transpose();
}

Eigen::VectorXd gram_singular_values(const MatD& m) {
  const OneBlasThread pinned;  // the same bits on every machine (blas_threads.hpp)
  ShortSideGram gram = short_side_gram(m, "gram_singular_values");
  const int p = gram.p;
  Eigen::VectorXd w(p);
  double size = 0;
  int isize = 0, info = 0;
  const int query = -1;
  dsyevd_("N", "L", &p, gram.lower.data(), &p, w.data(), &size, &query, &isize, &query, &info);
  succeeded(info, "dsyevd (workspace query)");
  std::vector<double> work(static_cast<std::size_t>(size));
  std::vector<int> iwork(static_cast<std::size_t>(std::max(isize, 1)));
  const int lwork = static_cast<int>(work.size()), liwork = static_cast<int>(iwork.size());
  dsyevd_("N", "L", &p, gram.lower.data(), &p, w.data(), work.data(), &lwork, iwork.data(), &liwork, &info);
  succeeded(info, "dsyevd");
  return w.reverse().cwiseMax(0.0).cwiseSqrt();  // ascending -> decreasing
}

bool largest_singular_value_below(const MatD& m, double t) {
  const OneBlasThread pinned;  // the same bits on every machine (blas_threads.hpp)
  ShortSideGram gram = short_side_gram(m, "largest_singular_value_below");
  const int p = gram.p;
  for (double& v : gram.lower) v = -v;  // t^2 I - G (dpotrf reads the lower triangle only)
  for (int i = 0; i < p; ++i) gram.lower[static_cast<std::size_t>(i) * static_cast<std::size_t>(p + 1)] += t * t;
  int info = 0;
  dpotrf_("L", &p, gram.lower.data(), &p, &info);
  if (info < 0) succeeded(info, "dpotrf");
  return info == 0;
}

}  // namespace nsv
