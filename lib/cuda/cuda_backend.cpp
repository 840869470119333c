// The CUDA/cuBLAS backend: the single NS algorithm of ns_algorithm.hpp over CudaOps, with the
// Frobenius normalization on the device. Compiled by the host compiler (Eigen lives here); the
// device side is device.cu behind device.hpp.
//
// Row-major throughout, like the rest of nsverify: see Blas::gemm_rm in device.cu for the
// translation to cuBLAS's column-major convention.
#include "nsv/cuda_backend.hpp"

#include <chrono>
#include <cmath>
#include <map>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>

#include "cuda_internal.hpp"
#include "normalize.hpp"
#include "cuda_ops.hpp"
#include "device.hpp"
#include "ns_algorithm.hpp"
#include "sharded_frame.hpp"
#include "nsv/backend.hpp"
#include "nsv/invalid_field.hpp"

namespace nsv {
namespace cuda_detail {
namespace {

cuda::Fp32Math fp32_math(const CudaOptions& o) { return o.tf32 ? cuda::Fp32Math::tf32 : cuda::Fp32Math::ieee; }

void check_config(const NsConfig& cfg) {
  cfg.validate();
  if (cfg.accumulate == Accumulate::compute)
    throw InvalidField("accumulate", "compute models PyTorch's CPU GEMM and is available on the cpu backend only: the CUDA "
                                     "backend accumulates every GEMM in fp32 (fp64 for fp64), as cuBLAS does");
}

void check_group(const std::vector<const MatD*>& mats) {
  if (mats.empty()) throw std::logic_error("empty group");
  for (const MatD* m : mats)
    if (m->rows() != mats[0]->rows() || m->cols() != mats[0]->cols())
      throw std::logic_error("a group's matrices must share one shape");
}

}  // namespace

// --- host <-> device -------------------------------------------------------------------------------

Carrier upload_carrier(const std::vector<const MatD*>& mats, bool transpose, DType nd) {
  check_group(mats);
  Carrier c;
  c.rows = transpose ? mats[0]->cols() : mats[0]->rows();
  c.cols = transpose ? mats[0]->rows() : mats[0]->cols();
  c.count = static_cast<std::int64_t>(mats.size());
  c.f64 = nd == DType::fp64;
  const std::int64_t per = c.rows * c.cols;
  const auto total = static_cast<std::size_t>(per * c.count);
  if (c.f64) {
    std::vector<double> host(total);
    for (std::size_t b = 0; b < mats.size(); ++b) {
      Eigen::Map<MatD> dst(host.data() + b * static_cast<std::size_t>(per), c.rows, c.cols);
      if (transpose)
        dst = mats[b]->transpose();
      else
        dst = *mats[b];
    }
    c.buf = cuda::Buffer(total * sizeof(double));
    cuda::upload(c.buf, host.data(), c.buf.bytes());
  } else {
    std::vector<float> host(total);
    for (std::size_t b = 0; b < mats.size(); ++b) {
      Eigen::Map<MatF> dst(host.data() + b * static_cast<std::size_t>(per), c.rows, c.cols);
      if (transpose)
        dst = mats[b]->transpose().cast<float>();  // round to nearest even
      else
        dst = mats[b]->cast<float>();
    }
    c.buf = cuda::Buffer(total * sizeof(float));
    cuda::upload(c.buf, host.data(), c.buf.bytes());
    cuda::round_f32_inplace(elem_of(nd), static_cast<float*>(c.buf.data()), per * c.count);
  }
  return c;
}

std::vector<double> sums_of_squares(const Carrier& c) {
  std::vector<double> sums(static_cast<std::size_t>(c.count), 0.0);
  cuda::sum_squares(c.buf.data(), c.f64, c.rows * c.cols, c.count, sums.data());
  return sums;
}

DeviceMatrix divide(const Carrier& c, const std::vector<double>& den, const NsConfig& cfg) {
  if (static_cast<std::int64_t>(den.size()) != c.count) throw std::logic_error("divide: one denominator per matrix");
  DeviceMatrix out(elem_of(cfg.dtype), c.rows, c.cols, c.count);
  const std::int64_t per = c.rows * c.cols;
  if (c.f64) {
    if (cfg.dtype != DType::fp64) throw std::logic_error("divide: an fp64 carrier needs the fp64 dtype");
    cuda::divide_f64(static_cast<const double*>(c.buf.data()), den.data(), static_cast<double*>(out.data()), per,
                     c.count);
  } else {
    // The denominators are values of nd (fp32 or narrower): exact as floats.
    std::vector<float> den_f(den.begin(), den.end());
    cuda::divide_f32(static_cast<const float*>(c.buf.data()), den_f.data(), elem_of(normalization_dtype(cfg)), out.elem,
                     out.data(), per, c.count);
  }
  return out;
}

DeviceMatrix upload_matrices(const std::vector<const MatD*>& mats, bool transpose, DType d) {
  Carrier c = upload_carrier(mats, transpose, d);
  if (d == DType::fp64 || d == DType::fp32) {
    DeviceMatrix out;
    out.elem = elem_of(d);
    out.rows = c.rows;
    out.cols = c.cols;
    out.count = c.count;
    out.buf = std::move(c.buf);
    return out;
  }
  DeviceMatrix out(elem_of(d), c.rows, c.cols, c.count);
  cuda::f32_to_elem(out.elem, static_cast<const float*>(c.buf.data()), out.data(), out.elements());
  return out;
}

std::vector<MatD> download_matrices(const DeviceMatrix& x, bool transpose) {
  const std::int64_t per = x.per_matrix();
  const auto total = static_cast<std::size_t>(x.elements());
  std::vector<MatD> out;
  out.reserve(static_cast<std::size_t>(x.count));
  if (x.elem == cuda::Elem::f64) {
    std::vector<double> host(total);
    cuda::download(host.data(), x.buf, total * sizeof(double));
    for (std::int64_t b = 0; b < x.count; ++b) {
      Eigen::Map<const MatD> m(host.data() + b * per, x.rows, x.cols);
      out.push_back(transpose ? MatD(m.transpose()) : MatD(m));
    }
    return out;
  }
  cuda::Buffer f32(total * sizeof(float));
  cuda::elem_to_f32(x.elem, x.data(), static_cast<float*>(f32.data()), x.elements());
  std::vector<float> host(total);
  cuda::download(host.data(), f32, total * sizeof(float));
  for (std::int64_t b = 0; b < x.count; ++b) {
    Eigen::Map<const MatF> m(host.data() + b * per, x.rows, x.cols);
    out.push_back(transpose ? MatD(m.transpose().cast<double>()) : MatD(m.cast<double>()));
  }
  return out;
}

// --- the kernel ------------------------------------------------------------------------------------

std::vector<MatD> newton_schulz_group(cuda::Blas& blas, const std::vector<const MatD*>& mats, const NsConfig& cfg) {
  check_group(mats);
  // The one-shard frame (sharded_frame.hpp): a tall matrix runs as its transpose.
  const auto frame = detail::sharded_frame(cfg, 0, {{mats[0]->rows(), mats[0]->cols()}}, 1, mats[0]->rows(), Iteration::standard);
  const DType nd = normalization_dtype(cfg);
  const Carrier carrier = upload_carrier(mats, frame.transpose, nd);
  const std::vector<double> sums = sums_of_squares(carrier);
  std::vector<double> den;
  den.reserve(sums.size());
  for (double s : sums) den.push_back(detail::normalization_denominator(nd, s, cfg.eps));
  std::vector<DeviceMatrix> y;
  y.push_back(divide(carrier, den, cfg));
  CudaOps ops(blas, cfg);
  detail::ShardedIteration<CudaOps> it(ops, cfg, 1);
  it.run(y, frame.iteration);
  return download_matrices(y[0], frame.transpose);
}

DeviceNsTiming time_device_ns(const CudaOptions& options, const MatD& g, const NsConfig& cfg, int warmup, int repeats) {
  check_config(cfg);
  cuda::Blas blas(fp32_math(options));
  const auto frame = detail::sharded_frame(cfg, 0, {{g.rows(), g.cols()}}, 1, g.rows(), Iteration::standard);
  const DType nd = normalization_dtype(cfg);
  const Carrier carrier = upload_carrier({&g}, frame.transpose, nd);  // rounding to nd is idempotent: done once
  DeviceNsTiming timing;
  cuda::Timer timer;
  for (int r = 0; r < warmup + repeats; ++r) {
    cuda::synchronize();
    timer.start();
    const std::vector<double> sums = sums_of_squares(carrier);
    std::vector<DeviceMatrix> y;
    y.push_back(divide(carrier, {detail::normalization_denominator(nd, sums[0], cfg.eps)}, cfg));
    CudaOps ops(blas, cfg);
    detail::ShardedIteration<CudaOps> it(ops, cfg, 1);
    it.run(y, frame.iteration);
    const double ms = timer.stop_ms();
    if (r >= warmup) timing.ms.push_back(ms);
    if (r == warmup + repeats - 1) timing.result = download_matrices(y[0], frame.transpose)[0];
  }
  return timing;
}

std::vector<double> time_gemm_ms(const CudaOptions& options, DType d, std::int64_t m, std::int64_t n, std::int64_t k,
                                 int warmup, int repeats) {
  cuda::Blas blas(fp32_math(options));
  std::mt19937_64 rng(12345);
  std::uniform_real_distribution<double> uni(-1.0, 1.0);
  MatD a(m, k), b(k, n);
  for (Eigen::Index i = 0; i < a.size(); ++i) a.data()[i] = uni(rng);
  for (Eigen::Index i = 0; i < b.size(); ++i) b.data()[i] = uni(rng);
  const DeviceMatrix da = upload_matrices({&a}, false, d), db = upload_matrices({&b}, false, d);
  DeviceMatrix dc(elem_of(d), m, n);
  cuda::Timer timer;
  std::vector<double> ms;
  for (int r = 0; r < warmup + repeats; ++r) {
    timer.start();
    blas.gemm_rm(elem_of(d), m, n, k, 1.0, da.data(), db.data(), false, dc.data(), 1);
    const double t = timer.stop_ms();
    if (r >= warmup) ms.push_back(t);
  }
  return ms;
}

// --- the backend -----------------------------------------------------------------------------------

namespace {

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(const CudaOptions& options)
      : options_(options), name_(cuda_backend_name(options)), blas_(std::make_unique<cuda::Blas>(fp32_math(options))) {}

  std::string_view name() const override { return name_; }

  Batch newton_schulz(const Batch& inputs, const NsConfig& cfg) const override {
    check_config(cfg);
    std::lock_guard<std::mutex> lock(mutex_);
    Batch out(inputs.size());
    if (!options_.batched) {
      for (std::size_t i = 0; i < inputs.size(); ++i)
        out[i] = std::move(newton_schulz_group(*blas_, {&inputs[i]}, cfg)[0]);
      return out;
    }
    // Same-shape matrices together, groups in order of first appearance.
    std::vector<std::pair<std::pair<Eigen::Index, Eigen::Index>, std::vector<std::size_t>>> groups;
    std::map<std::pair<Eigen::Index, Eigen::Index>, std::size_t> group_of;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const auto shape = std::make_pair(inputs[i].rows(), inputs[i].cols());
      auto [it, inserted] = group_of.try_emplace(shape, groups.size());
      if (inserted) groups.push_back({shape, {}});
      groups[it->second].second.push_back(i);
    }
    for (const auto& [shape, members] : groups) {
      std::vector<const MatD*> mats;
      for (std::size_t i : members) mats.push_back(&inputs[i]);
      std::vector<MatD> results = newton_schulz_group(*blas_, mats, cfg);
      for (std::size_t j = 0; j < members.size(); ++j) out[members[j]] = std::move(results[j]);
    }
    return out;
  }

  ShardedResult newton_schulz_hosted(const std::vector<MatD>& shards, int axis, std::int64_t split_extent,
                                     Iteration iteration, Communicator& comm, const NsConfig& cfg) const override {
    check_config(cfg);
    if (shards.size() != comm.hosted_ranks().size())
      throw std::invalid_argument("one shard per hosted rank is required");
    const auto frame =
        detail::sharded_frame(cfg, axis, detail::shard_shapes(shards), comm.size(), split_extent, iteration);
    std::lock_guard<std::mutex> lock(mutex_);
    if (comm.size() == 1)
      return {{std::move(newton_schulz_group(*blas_, {&shards[0]}, cfg)[0])},
              {ns_flops(cfg, shards[0].rows(), shards[0].cols())}};
    const DType nd = normalization_dtype(cfg);
    std::vector<Carrier> carriers;
    std::vector<double> partial;
    for (const auto& s : shards) {
      carriers.push_back(upload_carrier({&s}, frame.transpose, nd));
      partial.push_back(sums_of_squares(carriers.back())[0]);
    }
    // The norm's square: a scalar all-reduce in the wire dtype of normalize.cpp (fp32, fp64 for fp64).
    const double sum_sq = comm.all_reduce_scalar(partial, nsv::detail::norm_wire_dtype(cfg));
    const double den = detail::normalization_denominator(nd, sum_sq, cfg.eps);
    std::vector<DeviceMatrix> y;
    for (const auto& c : carriers) y.push_back(divide(c, {den}, cfg));
    carriers.clear();
    CudaOps ops(*blas_, cfg, &comm);
    detail::ShardedIteration<CudaOps> it(ops, cfg, shards.size());
    it.run(y, frame.iteration);
    ShardedResult result;
    for (const auto& m : y) result.shards.push_back(std::move(download_matrices(m, frame.transpose)[0]));
    result.flops_per_rank = it.flops_per_rank();
    return result;
  }

 private:
  CudaOptions options_;
  std::string name_;
  mutable std::mutex mutex_;          // one call at a time: one cuBLAS handle, one stream
  std::unique_ptr<cuda::Blas> blas_;  // used only under mutex_
};

}  // namespace
}  // namespace cuda_detail

bool cuda_backend_available(std::string* why_not) {
  const cuda::DeviceInfo& d = cuda::probe_device();
  if (!d.usable && why_not) *why_not = d.why_not;
  return d.usable;
}

std::unique_ptr<Backend> make_cuda_backend(const CudaOptions& options) {
  std::string why;
  if (!cuda_backend_available(&why)) throw std::runtime_error("backend " + cuda_backend_name(options) + ": " + why);
  return std::make_unique<cuda_detail::CudaBackend>(options);
}

std::unique_ptr<Backend> make_cuda_backend(bool tf32) {
  CudaOptions o;
  o.tf32 = tf32;
  return make_cuda_backend(o);
}

std::unique_ptr<Backend> make_cuda_backend() { return make_cuda_backend(CudaOptions{}); }

}  // namespace nsv
