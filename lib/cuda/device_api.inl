// The part of the device API (device.hpp) that is the same on the GPU and in the host emulation:
// element types, argument checks, dtype dispatch, and which element functor (element_ops.hpp)
// runs over how many indices. Included by device.cu (the CUDA platform) and by
// tests/emulated_device.cpp (the host platform), each of which first defines, in namespace
// nsv::cuda::platform:
//   template <class F> void for_each(std::int64_t n, const F& f);   f(i) for i in [0, n)
//   void copy(void* dst, const void* src, std::size_t bytes);      device to device
//   void zero(void* dst, std::size_t bytes);                        all-zero bits
//   void gemm(void* handle, const GemmPlan&, Elem, Fp32Math, double alpha);
// Not a header: include it exactly once, after those definitions.
#include <stdexcept>
#include <string>

namespace nsv::cuda {

namespace {

// Calls f(Tag<S>{}) with S the storage type of a non-fp64 element type.
template <class S>
struct Tag {
  using type = S;
};
template <class F>
void dispatch_f32_storage(Elem e, F&& f) {
  switch (e) {
    case Elem::f32:
      f(Tag<float>{});
      return;
    case Elem::bf16:
      f(Tag<__nv_bfloat16>{});
      return;
    case Elem::f16:
      f(Tag<__half>{});
      return;
    case Elem::f64:
      break;
  }
  throw std::logic_error("dispatch_f32_storage: f64 has no fp32 storage");
}

}  // namespace

std::size_t elem_size(Elem e) {
  switch (e) {
    case Elem::f64:
      return 8;
    case Elem::f32:
      return 4;
    case Elem::bf16:
    case Elem::f16:
      return 2;
  }
  return 0;
}

const char* elem_name(Elem e) {
  switch (e) {
    case Elem::f64:
      return "f64";
    case Elem::f32:
      return "f32";
    case Elem::bf16:
      return "bf16";
    case Elem::f16:
      return "f16";
  }
  return "?";
}

void Blas::gemm_rm(Elem e, std::int64_t m, std::int64_t n, std::int64_t k, double alpha, const void* a, const void* b,
                   bool trans_b, void* c, std::int64_t batch) {
  if (m < 0 || n < 0 || k < 0 || batch < 0) throw std::invalid_argument("gemm_rm: negative dimension");
  if (m == 0 || n == 0 || batch == 0) return;
  if (k == 0) {  // an empty sum: zeros (all-zero bits are +0.0 in all four types)
    platform::zero(c, static_cast<std::size_t>(m * n * batch) * elem_size(e));
    return;
  }
  platform::gemm(handle_, plan_row_major_gemm(m, n, k, a, b, trans_b, c, batch), e, fp32_math_, alpha);
}

void mirror_upper(Elem e, void* c, std::int64_t n, std::int64_t batch) {
  const std::int64_t total = n * n * batch;
  if (total == 0 || n == 1) return;
  switch (elem_size(e)) {
    case 8:
      platform::for_each(total, ops::MirrorUpper<std::uint64_t>{static_cast<std::uint64_t*>(c), n});
      break;
    case 4:
      platform::for_each(total, ops::MirrorUpper<std::uint32_t>{static_cast<std::uint32_t*>(c), n});
      break;
    default:
      platform::for_each(total, ops::MirrorUpper<std::uint16_t>{static_cast<std::uint16_t*>(c), n});
      break;
  }
}

void scale(Elem e, double a, const void* x, void* out, std::int64_t count) {
  if (count == 0) return;
  if (e == Elem::f64) {
    platform::for_each(count, ops::ScaleF64{a, static_cast<const double*>(x), static_cast<double*>(out)});
    return;
  }
  const float af = static_cast<float>(a);
  dispatch_f32_storage(e, [&](auto tag) {
    using S = typename decltype(tag)::type;
    platform::for_each(count, ops::ScaleF32<S>{af, static_cast<const S*>(x), static_cast<S*>(out)});
  });
}

void lincomb(Elem e, double a, const void* x, const void* p, void* out, std::int64_t count) {
  if (count == 0) return;
  if (e == Elem::f64) {
    platform::for_each(count, ops::LincombF64{a, static_cast<const double*>(x), static_cast<const double*>(p),
                                              static_cast<double*>(out)});
    return;
  }
  const float af = static_cast<float>(a);
  dispatch_f32_storage(e, [&](auto tag) {
    using S = typename decltype(tag)::type;
    platform::for_each(
        count, ops::LincombF32<S>{af, static_cast<const S*>(x), static_cast<const S*>(p), static_cast<S*>(out)});
  });
}

void add_diagonal(Elem e, void* z, double a, std::int64_t n, std::int64_t batch) {
  const std::int64_t total = n * batch;
  if (total == 0) return;
  if (e == Elem::f64) {
    platform::for_each(total, ops::AddDiagonalF64{static_cast<double*>(z), a, n});
    return;
  }
  const float af = static_cast<float>(a);
  dispatch_f32_storage(e, [&](auto tag) {
    using S = typename decltype(tag)::type;
    platform::for_each(total, ops::AddDiagonalF32<S>{static_cast<S*>(z), af, n});
  });
}

void f32_to_elem(Elem e, const float* in, void* out, std::int64_t count) {
  if (count == 0) return;
  if (e == Elem::f64) throw std::logic_error("f32_to_elem: f64 target");
  if (e == Elem::f32) {
    platform::copy(out, in, static_cast<std::size_t>(count) * sizeof(float));
    return;
  }
  dispatch_f32_storage(e, [&](auto tag) {
    using S = typename decltype(tag)::type;
    platform::for_each(count, ops::F32ToStorage<S>{in, static_cast<S*>(out)});
  });
}

void elem_to_f32(Elem e, const void* in, float* out, std::int64_t count) {
  if (count == 0) return;
  if (e == Elem::f64) throw std::logic_error("elem_to_f32: f64 source");
  if (e == Elem::f32) {
    platform::copy(out, in, static_cast<std::size_t>(count) * sizeof(float));
    return;
  }
  dispatch_f32_storage(e, [&](auto tag) {
    using S = typename decltype(tag)::type;
    platform::for_each(count, ops::StorageToF32<S>{static_cast<const S*>(in), out});
  });
}

void round_f32_inplace(Elem e, float* x, std::int64_t count) {
  if (count == 0 || e == Elem::f32) return;
  if (e == Elem::f64) throw std::logic_error("round_f32_inplace: f64");
  dispatch_f32_storage(e, [&](auto tag) {
    using S = typename decltype(tag)::type;
    platform::for_each(count, ops::RoundInplace<S>{x});
  });
}

void divide_f64(const double* in, const double* den_host, double* out, std::int64_t per_matrix, std::int64_t batch) {
  const std::int64_t total = per_matrix * batch;
  if (total == 0) return;
  Buffer den(static_cast<std::size_t>(batch) * sizeof(double));
  upload(den, den_host, den.bytes());
  platform::for_each(total, ops::DivideF64{in, static_cast<const double*>(den.data()), out, per_matrix});
}

void divide_f32(const float* in, const float* den_host, Elem nd, Elem out_e, void* out, std::int64_t per_matrix,
                std::int64_t batch) {
  const std::int64_t total = per_matrix * batch;
  if (total == 0) return;
  if (nd == Elem::f64 || out_e == Elem::f64) throw std::logic_error("divide_f32: f64 type");
  Buffer den(static_cast<std::size_t>(batch) * sizeof(float));
  upload(den, den_host, den.bytes());
  const auto* d = static_cast<const float*>(den.data());
  dispatch_f32_storage(nd, [&](auto nd_tag) {
    using ND = typename decltype(nd_tag)::type;
    dispatch_f32_storage(out_e, [&](auto tag) {
      using S = typename decltype(tag)::type;
      platform::for_each(total, ops::DivideF32<ND, S>{in, d, static_cast<S*>(out), per_matrix});
    });
  });
}

}  // namespace nsv::cuda
