#include "nsv/spectra.hpp"

#include <Eigen/QR>
#include <cmath>
#include <numbers>
#include <random>
#include <stdexcept>

#include "nsv/npy.hpp"

namespace nsv {

std::string Spectrum::text() const {
  switch (kind) {
    case Kind::gaussian: return "gaussian";
    case Kind::lowrank: return "lowrank:" + std::to_string(rank);
    case Kind::powerlaw: {
      std::string a = std::to_string(alpha);
      while (a.size() > 1 && a.back() == '0') a.pop_back();
      if (a.back() == '.') a.pop_back();
      return "powerlaw:" + a;
    }
    case Kind::file: return "file:" + path;
  }
  return "?";
}

Spectrum parse_spectrum(const std::string& s) {
  const auto bad = [&] {
    return std::invalid_argument("unknown spectrum '" + s + "': expected gaussian, lowrank:R (R >= 1), powerlaw:ALPHA (ALPHA >= 0) or file:PATH");
  };
  Spectrum sp;
  if (s == "gaussian") return sp;
  const auto colon = s.find(':');
  if (colon == std::string::npos) throw bad();
  const std::string kind = s.substr(0, colon), arg = s.substr(colon + 1);
  if (kind == "file") {
    if (arg.empty()) throw bad();
    sp.kind = Spectrum::Kind::file;
    sp.path = arg;
    return sp;
  }
  std::size_t used = 0;
  try {
    if (kind == "lowrank") {
      sp.kind = Spectrum::Kind::lowrank;
      sp.rank = std::stoll(arg, &used);
      if (sp.rank < 1) throw bad();
    } else if (kind == "powerlaw") {
      sp.kind = Spectrum::Kind::powerlaw;
      sp.alpha = std::stod(arg, &used);
      if (!(sp.alpha >= 0.0) || !std::isfinite(sp.alpha)) throw bad();
    } else {
      throw bad();
    }
  } catch (const std::logic_error&) {
    throw bad();
  }
  if (used != arg.size()) throw bad();
  return sp;
}

MatD gaussian_matrix(std::int64_t rows, std::int64_t cols, std::uint64_t seed) {
  std::mt19937_64 engine(seed);
  const auto uniform = [&] {  // in (0, 1], 53 random bits
    return (static_cast<double>(engine() >> 11) + 1.0) * 0x1.0p-53;
  };
  MatD m(rows, cols);
  for (Eigen::Index i = 0; i < m.size(); i += 2) {
    const double radius = std::sqrt(-2.0 * std::log(uniform())), angle = 2.0 * std::numbers::pi * uniform();
    m.data()[i] = radius * std::cos(angle);
    if (i + 1 < m.size()) m.data()[i + 1] = radius * std::sin(angle);
  }
  return m;
}

namespace {

MatD orthonormal_columns(std::int64_t rows, std::int64_t cols, std::uint64_t seed) {
  const Eigen::MatrixXd g = gaussian_matrix(rows, cols, seed);
  Eigen::HouseholderQR<Eigen::MatrixXd> qr(g);
  return qr.householderQ() * Eigen::MatrixXd::Identity(rows, cols);
}

MatD to_float_values(MatD m) {
  return m.unaryExpr([](double v) { return static_cast<double>(static_cast<float>(v)); });
}

}  // namespace

MatD make_matrix(const Spectrum& sp, std::int64_t rows, std::int64_t cols, std::uint64_t seed) {
  switch (sp.kind) {
    case Spectrum::Kind::gaussian: return to_float_values(gaussian_matrix(rows, cols, seed));
    case Spectrum::Kind::lowrank: {
      const MatD a = gaussian_matrix(rows, sp.rank, seed), b = gaussian_matrix(sp.rank, cols, seed ^ 0x9e3779b97f4a7c15ULL);
      return to_float_values(a * b / std::sqrt(static_cast<double>(sp.rank)));
    }
    case Spectrum::Kind::powerlaw: {
      const std::int64_t k = std::min(rows, cols);
      const MatD u = orthonormal_columns(rows, k, seed), v = orthonormal_columns(cols, k, seed ^ 0x9e3779b97f4a7c15ULL);
      Eigen::VectorXd sigma(k);
      for (std::int64_t i = 0; i < k; ++i) sigma(i) = std::pow(static_cast<double>(i + 1), -sp.alpha);
      return to_float_values(u * sigma.asDiagonal() * v.transpose());
    }
    case Spectrum::Kind::file: {
      MatD m = read_npy(sp.path).matrix();
      if ((rows || cols) && (m.rows() != rows || m.cols() != cols))
        throw std::invalid_argument(sp.path + " holds a " + std::to_string(m.rows()) + "x" + std::to_string(m.cols()) +
                                    " matrix, but the case asks for " + std::to_string(rows) + "x" + std::to_string(cols));
      return m;
    }
  }
  throw std::logic_error("unhandled spectrum");
}

}  // namespace nsv
