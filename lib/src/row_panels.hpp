#pragma once
// A product split into fixed row panels, one single-threaded BLAS call each, the panels spread
// over OpenMP threads.
//
// The panels depend on the number of rows alone, never on the thread count, so the assembled
// result has the same bits on one thread as on sixteen (contract D). A GEMM's row panels keep the
// bits of one call over the whole product when every panel starts at a multiple of 12 rows:
// row-major rows are OpenBLAS's columns, and its Haswell/Zen sgemm kernel sums a column's
// products in one of two orders chosen by the column's place in a group of 12 (even and odd k in
// two registers, or one chain), so a boundary off the grid moves every later row to the other
// order. Kernels with other groups keep the shape-determined bits, only not one call's. A SYRK's
// blocks cannot be matched by row panels, so the NS reference's Gram matrix is one call
// (CpuOps::gram); upper_gram's panels serve the spectra, whose bits only feed bounds.
//
// Inside another parallel region (a batch of matrices, runs side by side) the team is that
// region's thread alone: OpenMP does not nest by default, and the bits do not care.
#include <Eigen/Core>

#include <algorithm>
#include <cblas.h>
#include <omp.h>

namespace nsv::detail {

// Rows per panel of a product (GEMM, and the spectra's Gram panels): one panel up to 256 rows
// (the products are below the parallel threshold there), else two panels, the first the multiple of
// 12 rows (the kernel's column group above) at or just above half. Each panel's call packs the whole
// right operand again, so on one thread every panel beyond the first is pure overhead
// (tools/bench/regression.py measures it): two panels cost one extra packing and give two threads
// a panel each.
inline Eigen::Index product_panel_rows(Eigen::Index rows) {
  return rows <= 256 ? rows : 12 * ((rows + 23) / 24);
}

// Rows per panel of an upper triangle (panel [i0, i0 + h) x [i0, n)): one panel up to 128 rows,
// else eighths of at least 64, so that the wasted lower part of each panel's diagonal block stays
// small (about (1 + h/n)/2 of a full product's FLOPs in all).
inline Eigen::Index triangle_panel_rows(Eigen::Index n) { return n <= 128 ? n : std::max<Eigen::Index>(64, n / 8); }

// Products below this many multiply-adds run their panels on the calling thread, without an
// OpenMP call: a team's start and join (and, where other processes hold the cores, its threads'
// wait for a time slice) must stay small beside the work: the CLI's studies run thousands of NS
// calls on small matrices. 2^27 multiply-adds are about 1 ms of one core's GEMM.
inline constexpr double kParallelMinMultiplyAdds = 0x1p27;

// The scratch slots a panel may ask for: panel(..., slot) gets slot < panel_slots().
inline int panel_slots() { return std::max(1, omp_get_max_threads()); }

// panel(first_row, row_count, slot) for every panel of h rows of `rows`, on OpenMP threads where
// the product's multiply_adds reach kParallelMinMultiplyAdds; `slot` tells the threads' scratch
// apart (0 on the calling thread). `panel` must not throw: an exception cannot leave an OpenMP
// region.
template <class Panel>
void for_each_row_panel(Eigen::Index rows, Eigen::Index h, double multiply_adds, const Panel& panel) {
  const Eigen::Index count = rows == 0 ? 0 : (rows + h - 1) / h;
  if (count <= 1 || multiply_adds < kParallelMinMultiplyAdds) {
    for (Eigen::Index i = 0; i < count; ++i) panel(i * h, std::min(h, rows - i * h), 0);
    return;
  }
  const int slots = panel_slots();
#pragma omp parallel for schedule(dynamic, 1) num_threads(slots)
  for (Eigen::Index i = 0; i < count; ++i) panel(i * h, std::min(h, rows - i * h), omp_get_thread_num());
}

inline void gemm_rows(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, const float* a, int lda, const float* b, int ldb,
                      float* c, int ldc) {
  cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c, ldc);
}
inline void gemm_rows(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int m, int n, int k, const double* a, int lda, const double* b,
                      int ldb, double* c, int ldc) {
  cblas_dgemm(CblasRowMajor, ta, tb, m, n, k, 1.0, a, lda, b, ldb, 0.0, c, ldc);
}
inline void syrk_rows(CBLAS_TRANSPOSE t, int n, int k, const float* a, int lda, float* c, int ldc) {
  cblas_ssyrk(CblasRowMajor, CblasUpper, t, n, k, 1.0f, a, lda, 0.0f, c, ldc);
}
inline void syrk_rows(CBLAS_TRANSPOSE t, int n, int k, const double* a, int lda, double* c, int ldc) {
  cblas_dsyrk(CblasRowMajor, CblasUpper, t, n, k, 1.0, a, lda, 0.0, c, ldc);
}

// The upper triangle of the n x n Gram matrix B B^T into c (row-major, leading dimension n; the
// strictly lower triangle is not written), B = A (n x k, row-major, leading dimension lda) or,
// with `transposed`, B = A^T (A k x n). Panel [i0, i0 + h): its diagonal block by SYRK, the block
// right of it, B[i0 : i0+h] B[i0+h : n]^T, by GEMM.
template <class T>
void upper_gram(const T* a, int n, int k, int lda, bool transposed, T* c) {
  const auto rows_of_b = [&](Eigen::Index i) { return transposed ? a + i : a + i * lda; };
  for_each_row_panel(n, product_panel_rows(n), 0.5 * n * n * k, [&](Eigen::Index i0, Eigen::Index h, int) {
    const int hi = static_cast<int>(h), right = static_cast<int>(n - i0 - h);
    T* out = c + i0 * n + i0;
    syrk_rows(transposed ? CblasTrans : CblasNoTrans, hi, k, rows_of_b(i0), lda, out, n);
    if (right > 0)
      gemm_rows(transposed ? CblasTrans : CblasNoTrans, transposed ? CblasNoTrans : CblasTrans, hi, right, k, rows_of_b(i0), lda,
                rows_of_b(i0 + h), lda, out + h, n);
  });
}

}  // namespace nsv::detail
