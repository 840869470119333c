// The thin_layer suite of the CUDA backend's tests (suites: cuda_tests_main.cpp): the device API
// against exact host arithmetic: GEMM orientation and strides on integer data (exact in every
// dtype), mirror, conversions, the fixed-order sum of squares, normalization, and the
// elementwise kernels bit for bit against the CPU reference's formulas.
#include <bit>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "cuda_internal.hpp"
#include "cuda_ops.hpp"
#include "cuda_test_support.hpp"
#include "device.hpp"
#include "element_ops.hpp"
#include "normalize.hpp"
#include "nsv/metrics.hpp"

using namespace nsv;
using namespace nsv::cuda_tests;

// ====================================================================================================
BOOST_AUTO_TEST_SUITE(thin_layer, *utf::precondition(needs_device))

// Row-major C = A op(B) on small integers: every product and partial sum is an integer of
// magnitude <= 2*2*8 = 32, exact in bf16, fp16, TF32 and up, so the GPU must match the exact
// product bit for bit. Any orientation, leading-dimension or stride mistake shows as a mismatch.
BOOST_AUTO_TEST_CASE(gemm_orientation_and_strides_exact) {
  struct Shape {
    std::int64_t m, n, k;
  };
  for (bool tf32 : {false, true}) {
    cuda::Blas blas(tf32 ? cuda::Fp32Math::tf32 : cuda::Fp32Math::ieee);
    for (DType d : {DType::fp64, DType::fp32, DType::bf16, DType::fp16}) {
      for (Shape s : {Shape{5, 7, 3}, Shape{33, 17, 8}, Shape{1, 9, 4}, Shape{12, 1, 8}}) {
        for (bool trans_b : {false, true}) {
          for (std::int64_t batch : {1, 3}) {
            std::vector<MatD> a, b;
            for (std::int64_t i = 0; i < batch; ++i) {
              a.push_back(small_integers(s.m, s.k, 100 + static_cast<std::uint64_t>(i)));
              b.push_back(trans_b ? small_integers(s.n, s.k, 200 + static_cast<std::uint64_t>(i))
                                  : small_integers(s.k, s.n, 200 + static_cast<std::uint64_t>(i)));
            }
            std::vector<const MatD*> pa, pb;
            for (auto& x : a) pa.push_back(&x);
            for (auto& x : b) pb.push_back(&x);
            const auto da = cuda_detail::upload_matrices(pa, false, d);
            const auto db = cuda_detail::upload_matrices(pb, false, d);
            cuda_detail::DeviceMatrix dc(cuda_detail::elem_of(d), s.m, s.n, batch);
            blas.gemm_rm(cuda_detail::elem_of(d), s.m, s.n, s.k, 0.5, da.data(), db.data(), trans_b, dc.data(), batch);
            const auto c = cuda_detail::download_matrices(dc, false);
            for (std::int64_t i = 0; i < batch; ++i) {
              const MatD expect = 0.5 * (trans_b ? MatD(a[i] * b[i].transpose()) : MatD(a[i] * b[i]));
              const auto diff = compare_bits(c[i], expect, d);
              BOOST_TEST(diff.identical, "dtype " << dtype_name(d) << " tf32=" << tf32 << " m,n,k=" << s.m << "," << s.n
                                                  << "," << s.k << " trans_b=" << trans_b << " batch " << i << "/"
                                                  << batch << ": " << diff.describe());
            }
          }
        }
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(gemm_empty_inner_dimension_gives_zeros) {
  cuda::Blas blas(cuda::Fp32Math::ieee);
  for (DType d : {DType::fp64, DType::fp32, DType::bf16}) {
    const MatD nan_fill = MatD::Constant(4, 6, std::numeric_limits<double>::quiet_NaN());
    auto dc = cuda_detail::upload_matrices({&nan_fill}, false, d);
    blas.gemm_rm(cuda_detail::elem_of(d), 4, 6, 0, 1.0, nullptr, nullptr, false, dc.data(), 1);
    const MatD c = cuda_detail::download_matrices(dc, false)[0];
    BOOST_TEST(compare_bits(c, MatD::Zero(4, 6), d).identical);
  }
}

BOOST_AUTO_TEST_CASE(mirror_copies_upper_onto_lower) {
  for (DType d : {DType::fp64, DType::fp32, DType::fp16}) {
    std::vector<MatD> m = {gaussian(7, 7, 1), gaussian(7, 7, 2)};
    auto dm = cuda_detail::upload_matrices({&m[0], &m[1]}, false, d);
    cuda::mirror_upper(dm.elem, dm.data(), 7, 2);
    const auto out = cuda_detail::download_matrices(dm, false);
    for (int b = 0; b < 2; ++b) {
      const MatD in = m[static_cast<std::size_t>(b)].unaryExpr([d](double v) { return round_to(d, v); });
      MatD expect = in;
      for (int i = 0; i < 7; ++i)
        for (int j = 0; j < i; ++j) expect(i, j) = in(j, i);
      BOOST_TEST(compare_bits(out[static_cast<std::size_t>(b)], expect, d).identical, dtype_name(d));
    }
  }
}

// lincomb, scale and add_diagonal bit for bit against CpuOps's formulas (cpu_backend.cpp):
// round(round(a*x) + p), round(a*x) and round(z + round(a)), fp32 arithmetic for the 16-bit types.
BOOST_AUTO_TEST_CASE(elementwise_kernels_match_cpu_formulas_bitwise) {
  cuda::Blas blas(cuda::Fp32Math::ieee);
  for (DType d : {DType::fp64, DType::fp32, DType::bf16, DType::fp16}) {
    const MatD x = gaussian(19, 23, 11), p = gaussian(19, 23, 12, 3.0);
    auto dx = cuda_detail::upload_matrices({&x}, false, d);
    auto dp = cuda_detail::upload_matrices({&p}, false, d);
    cuda_detail::CudaOps ops(blas, config(Kernel::standard, d));
    const double a = ops.scalar(-4.7750);
    const MatD got = cuda_detail::download_matrices(ops.lincomb(a, dx, dp), false)[0];
    const MatD xr = x.unaryExpr([d](double v) { return round_to(d, v); });
    const MatD pr = p.unaryExpr([d](double v) { return round_to(d, v); });
    MatD expect(19, 23);
    for (Eigen::Index i = 0; i < expect.size(); ++i) {
      if (d == DType::fp64) {
        expect.data()[i] = a * xr.data()[i] + pr.data()[i];
      } else {
        const float af = static_cast<float>(a);
        const float ax = static_cast<float>(round_to(d, af * static_cast<float>(xr.data()[i])));
        expect.data()[i] = round_to(d, static_cast<double>(ax + static_cast<float>(pr.data()[i])));
      }
    }
    BOOST_TEST(compare_bits(got, expect, d).identical,
               "lincomb " << dtype_name(d) << ": " << compare_bits(got, expect, d).describe());

    // scale: round(a * x), the first half of PyTorch's `c * S @ S` (CpuOps::square).
    cuda_detail::DeviceMatrix dsx(dx.elem, dx.rows, dx.cols);
    cuda::scale(dx.elem, a, dx.data(), dsx.data(), dx.elements());
    const MatD scaled = cuda_detail::download_matrices(dsx, false)[0];
    MatD scaled_expect(19, 23);
    for (Eigen::Index i = 0; i < xr.size(); ++i)
      scaled_expect.data()[i] =
          d == DType::fp64 ? a * xr.data()[i]
                           : round_to(d, static_cast<double>(static_cast<float>(a) * static_cast<float>(xr.data()[i])));
    BOOST_TEST(compare_bits(scaled, scaled_expect, d).identical, "scale " << dtype_name(d));

    const MatD z = gaussian(9, 9, 13);
    auto dz = cuda_detail::upload_matrices({&z, &z}, false, d);  // a batch of two
    const double s = ops.scalar(3.4445);
    ops.add_diagonal(dz, s);
    const auto zz = cuda_detail::download_matrices(dz, false);
    MatD ze = z.unaryExpr([d](double v) { return round_to(d, v); });
    for (int i = 0; i < 9; ++i)
      ze(i, i) = d == DType::fp64
                     ? ze(i, i) + s
                     : round_to(d, static_cast<double>(static_cast<float>(ze(i, i)) + static_cast<float>(round_to(d, s))));
    for (const auto& zi : zz) BOOST_TEST(compare_bits(zi, ze, d).identical, "add_diagonal " << dtype_name(d));
  }
}

BOOST_AUTO_TEST_CASE(conversions_match_eigen_rounding) {
  std::vector<float> v = {0.0f,
                          -0.0f,
                          1.0f,
                          1.00390625f /* bf16 tie */,
                          1.001953125f,
                          65504.0f,
                          65520.0f /* fp16 -> inf */,
                          1e-8f,
                          6e-8f /* fp16 subnormal range */,
                          3.0e38f,
                          -2.5e-39f /* fp32 subnormal */};
  std::mt19937 rng(5);
  std::normal_distribution<float> n(0.0f, 100.0f);
  for (int i = 0; i < 4096; ++i) v.push_back(n(rng));
  const auto count = static_cast<std::int64_t>(v.size());
  for (DType d : {DType::bf16, DType::fp16}) {
    const cuda::Elem e = cuda_detail::elem_of(d);
    cuda::Buffer in(v.size() * sizeof(float)), st(v.size() * 2), back(v.size() * sizeof(float));
    cuda::upload(in, v.data(), in.bytes());
    cuda::f32_to_elem(e, static_cast<const float*>(in.data()), st.data(), count);
    cuda::elem_to_f32(e, st.data(), static_cast<float*>(back.data()), count);
    std::vector<float> got(v.size());
    cuda::download(got.data(), back, back.bytes());
    cuda::round_f32_inplace(e, static_cast<float*>(in.data()), count);
    std::vector<float> got_inplace(v.size());
    cuda::download(got_inplace.data(), in, in.bytes());
    int bad = 0;
    for (std::size_t i = 0; i < v.size(); ++i) {
      const float expect = round_to(d, v[i]);
      if (std::bit_cast<std::uint32_t>(got[i]) != std::bit_cast<std::uint32_t>(expect) ||
          std::bit_cast<std::uint32_t>(got_inplace[i]) != std::bit_cast<std::uint32_t>(expect)) {
        if (bad++ < 5) BOOST_ERROR(dtype_name(d) << ": " << v[i] << " -> " << got[i] << " (expected " << expect << ")");
      }
    }
    BOOST_TEST(bad == 0);
  }
}

// The device sum of squares: close to an exactly rounded sum, identical across calls and across
// batch positions (the order depends only on the matrix's size).
BOOST_AUTO_TEST_CASE(sum_of_squares_fixed_order) {
  for (DType nd : {DType::fp64, DType::fp32}) {
    for (Eigen::Index cols : {3, 1000, 20011}) {
      const MatD a = gaussian(7, cols, 21), b = gaussian(7, cols, 22);
      const auto single = cuda_detail::sums_of_squares(cuda_detail::upload_carrier({&a}, false, nd));
      const auto batch = cuda_detail::sums_of_squares(cuda_detail::upload_carrier({&b, &a, &b, &a}, false, nd));
      const auto again = cuda_detail::sums_of_squares(cuda_detail::upload_carrier({&a}, false, nd));
      BOOST_TEST(std::bit_cast<std::uint64_t>(single[0]) == std::bit_cast<std::uint64_t>(batch[1]));
      BOOST_TEST(std::bit_cast<std::uint64_t>(single[0]) == std::bit_cast<std::uint64_t>(batch[3]));
      BOOST_TEST(std::bit_cast<std::uint64_t>(single[0]) == std::bit_cast<std::uint64_t>(again[0]));
      // The device kernels sum in exactly the documented order (element_ops.hpp).
      double host_order = 0.0;
      if (nd == DType::fp64) {
        host_order = cuda::ops::fixed_order_sum_squares(a.data(), a.size());
      } else {
        const MatF af = a.cast<float>();
        host_order = cuda::ops::fixed_order_sum_squares(af.data(), af.size());
      }
      BOOST_TEST(std::bit_cast<std::uint64_t>(single[0]) == std::bit_cast<std::uint64_t>(host_order),
                 "device " << single[0] << " vs documented order " << host_order);
      long double exact = 0;
      for (Eigen::Index i = 0; i < a.size(); ++i) {
        const long double v = nd == DType::fp64 ? a.data()[i] : static_cast<float>(a.data()[i]);
        exact += v * v;
      }
      const double rel = std::abs(static_cast<double>((single[0] - exact) / exact));
      // A fixed tree of n additions in double: relative error <= ~log2(n) * 2^-53 in practice,
      // n * 2^-53 in the worst case.
      BOOST_TEST(rel <= static_cast<double>(a.size()) * std::ldexp(1.0, -53), "rel " << rel);
    }
  }
}

// Normalization on the device against detail::normalize on the CPU. The norms' sums are formed
// in different orders (both in double), so for nd = fp64 they differ in the last bits; for a
// narrower nd the norm rounds to the same value unless the sums straddle a rounding boundary
// (probability ~1e-8 per matrix), so the normalized matrices are compared bit for bit.
BOOST_AUTO_TEST_CASE(normalization_matches_cpu) {
  for (Kernel k : {Kernel::standard, Kernel::gram}) {
    for (DType d : {DType::fp64, DType::fp32, DType::bf16, DType::fp16}) {
      const NsConfig cfg = config(k, d);
      const MatD g = gaussian(48, 80, 31, 7.0);
      const MatD expect = detail::normalize({g}, cfg, nullptr)[0];
      const DType nd = normalization_dtype(cfg);
      const auto carrier = cuda_detail::upload_carrier({&g}, false, nd);
      const auto sums = cuda_detail::sums_of_squares(carrier);
      const auto x = cuda_detail::divide(carrier, {detail::normalization_denominator(nd, sums[0], cfg.eps)}, cfg);
      const MatD got = cuda_detail::download_matrices(x, false)[0];
      if (d == DType::fp64)
        // The CPU's sequential sum of n positive terms is within (n-1)u of the exact sum (the
        // device's tree is closer); the square root halves that; the division adds one rounding.
        BOOST_TEST(
            rel_diff(got, expect) <= (static_cast<double>(g.size()) / 2 + 2) * std::ldexp(1.0, -53),
            kernel_name(k) << " fp64: " << rel_diff(got, expect) << "; " << compare_bits(got, expect, d).describe());
      else
        BOOST_TEST(compare_bits(got, expect, d).identical,
                   kernel_name(k) << " " << dtype_name(d) << ": " << compare_bits(got, expect, d).describe());
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
