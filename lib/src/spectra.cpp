#include "nsv/spectra.hpp"

#include <Eigen/QR>
#include <cmath>
#include <numbers>
#include <random>
#include <stdexcept>

#include "nsv/invalid_field.hpp"
#include "nsv/npy.hpp"

namespace nsv {

namespace {

// A double in its shortest fixed form: 0.5, 2, 0.25 (std::to_string's six decimals, trailing
// zeros dropped).
std::string short_decimal(double v) {
  std::string a = std::to_string(v);
  while (a.size() > 1 && a.back() == '0') a.pop_back();
  if (a.back() == '.') a.pop_back();
  return a;
}

std::string unscaled_text(const Spectrum& sp) {
  const std::string name = spectrum_kind_name(sp.kind);
  switch (sp.kind) {
    case Spectrum::Kind::gaussian:
    case Spectrum::Kind::integer_valued: return name;
    case Spectrum::Kind::lowrank: return name + ":" + std::to_string(sp.rank);
    case Spectrum::Kind::powerlaw: return name + ":" + short_decimal(sp.alpha);
    case Spectrum::Kind::ill_conditioned: return name + ":" + short_decimal(sp.log10_condition);
    case Spectrum::Kind::file: return name + ":" + sp.path;
  }
  return "?";
}

}  // namespace

const char* spectrum_kind_name(Spectrum::Kind k) {
  switch (k) {
    case Spectrum::Kind::gaussian: return "gaussian";
    case Spectrum::Kind::lowrank: return "lowrank";
    case Spectrum::Kind::powerlaw: return "powerlaw";
    case Spectrum::Kind::ill_conditioned: return "ill_conditioned";
    case Spectrum::Kind::integer_valued: return "integer_valued";
    case Spectrum::Kind::file: return "file";
  }
  return "?";
}

std::string Spectrum::text() const {
  const std::string unscaled = unscaled_text(*this);
  return scale_exponent == 0 ? unscaled : unscaled + "*2^" + std::to_string(scale_exponent);
}

Spectrum parse_spectrum(const std::string& s) {
  const auto bad = [&] {
    return std::invalid_argument("unknown spectrum '" + s + "': expected gaussian, lowrank:R (R >= 1), powerlaw:ALPHA (ALPHA >= 0), ill_conditioned:LOG10_CONDITION (0 to 300) or file:PATH");
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
    } else if (kind == "ill_conditioned") {
      sp.kind = Spectrum::Kind::ill_conditioned;
      sp.log10_condition = std::stod(arg, &used);
      if (!(sp.log10_condition >= 0.0 && sp.log10_condition <= 300.0)) throw bad();
    } else {
      throw bad();
    }
  } catch (const std::logic_error&) {
    throw bad();
  }
  if (used != arg.size()) throw bad();
  return sp;
}

Eigen::VectorXd designed_singular_values(const Spectrum& sp, std::int64_t count) {
  if (sp.kind != Spectrum::Kind::powerlaw && sp.kind != Spectrum::Kind::ill_conditioned)
    throw std::invalid_argument("spectrum " + sp.text() + " prescribes no singular values");
  Eigen::VectorXd sigma(count);
  for (std::int64_t i = 0; i < count; ++i)
    sigma(i) = sp.kind == Spectrum::Kind::powerlaw
                   ? std::pow(static_cast<double>(i + 1), -sp.alpha)
                   : std::pow(10.0, -sp.log10_condition * (count == 1 ? 0.0 : static_cast<double>(i) / static_cast<double>(count - 1)));
  return sigma;
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

MatD matrix_with_singular_values(const Eigen::VectorXd& sigma, std::int64_t rows, std::int64_t cols, std::uint64_t seed) {
  const auto k = static_cast<std::int64_t>(sigma.size());
  const MatD u = orthonormal_columns(rows, k, seed), v = orthonormal_columns(cols, k, seed ^ 0x9e3779b97f4a7c15ULL);
  return u * sigma.asDiagonal() * v.transpose();
}

MatD make_matrix(const Spectrum& sp, std::int64_t rows, std::int64_t cols, std::uint64_t seed) {
  if (sp.scale_exponent != 0)
    throw std::invalid_argument("make_matrix draws unscaled spectra; " + sp.text() + " is the property generators'");
  switch (sp.kind) {
    case Spectrum::Kind::gaussian: return to_float_values(gaussian_matrix(rows, cols, seed));
    case Spectrum::Kind::lowrank: {
      if (sp.rank > std::min(rows, cols))
        throw InvalidField("spectrum", "lowrank:R needs R <= min(rows, cols) = " + std::to_string(std::min(rows, cols)) +
                                           " for a " + std::to_string(rows) + "x" + std::to_string(cols) + " matrix, got R = " +
                                           std::to_string(sp.rank));
      const MatD a = gaussian_matrix(rows, sp.rank, seed), b = gaussian_matrix(sp.rank, cols, seed ^ 0x9e3779b97f4a7c15ULL);
      return to_float_values(a * b / std::sqrt(static_cast<double>(sp.rank)));
    }
    case Spectrum::Kind::powerlaw:
    case Spectrum::Kind::ill_conditioned:
      return to_float_values(matrix_with_singular_values(designed_singular_values(sp, std::min(rows, cols)), rows, cols, seed));
    case Spectrum::Kind::file: {
      MatD m = read_npy(sp.path).matrix();
      if ((rows || cols) && (m.rows() != rows || m.cols() != cols))
        throw std::invalid_argument(sp.path + " holds a " + std::to_string(m.rows()) + "x" + std::to_string(m.cols()) +
                                    " matrix, but the case asks for " + std::to_string(rows) + "x" + std::to_string(cols));
      return m;
    }
    case Spectrum::Kind::integer_valued: break;
  }
  throw std::invalid_argument("make_matrix draws gaussian, lowrank, powerlaw, ill_conditioned and file spectra; " + sp.text() +
                              " is the property generators'");
}

}  // namespace nsv
