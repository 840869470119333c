#include "nsv/per_head.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

namespace nsv {

MatD per_head_ns(const Backend& backend, const MatD& m, std::int64_t num_heads, const NsConfig& cfg) {
  if (num_heads < 1 || m.rows() % num_heads != 0)
    throw std::invalid_argument("per-head NS needs the output dim to split evenly across heads, but " +
                                std::to_string(m.rows()) + " is not divisible by num_heads=" + std::to_string(num_heads));
  const std::int64_t head_dim = m.rows() / num_heads;
  Batch heads;
  heads.reserve(static_cast<std::size_t>(num_heads));
  for (std::int64_t h = 0; h < num_heads; ++h) heads.push_back(m.middleRows(h * head_dim, head_dim));
  const Batch out = backend.newton_schulz(heads, cfg);
  // DeepSpeed multiplies the compute-dtype result by a Python float: one rounded product in the
  // compute dtype's arithmetic (float for every dtype but fp64).
  const bool scaled = head_dim > m.cols();
  const double scale = scaled ? std::sqrt(static_cast<double>(head_dim) / static_cast<double>(m.cols())) : 1.0;
  MatD result(m.rows(), m.cols());
  for (std::int64_t h = 0; h < num_heads; ++h) {
    const MatD& o = out[static_cast<std::size_t>(h)];
    result.middleRows(h * head_dim, head_dim) =
        scaled ? MatD(o.unaryExpr([&](double v) {
          return cfg.dtype == DType::fp64 ? v * scale
                                          : round_to(cfg.dtype, double(static_cast<float>(v) * static_cast<float>(scale)));
        }))
               : o;
  }
  return result;
}

}  // namespace nsv
