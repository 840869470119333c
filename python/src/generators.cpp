#include "generators.hpp"

#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <vector>

#include "arrays.hpp"
#include "generators/matrices.hpp"
#include "generators/tiers.hpp"
#include "kernel_catalogue.hpp"
#include "nsv/invalid_field.hpp"

namespace nsv::python {
namespace {

using checks::Shape;
using checks::ShapeKind;

Spectrum spectrum_from(const py::dict& d) {
  Spectrum s;
  const std::string kind = d["kind"].cast<std::string>();
  bool known = false;
  for (const auto& [k, weight] : checks::kSpectrumWeights)
    if (kind == spectrum_kind_name(k)) {
      s.kind = k;
      known = true;
    }
  if (!known) throw InvalidField("spectrum", "kind must be one the generators draw (gaussian, lowrank, powerlaw, ill_conditioned, integer_valued), got '" + kind + "'");
  s.rank = d["rank"].cast<std::int64_t>();
  s.alpha = d["alpha"].cast<double>();
  s.log10_condition = d["log10_condition"].cast<double>();
  s.scale_exponent = d["scale_exponent"].cast<int>();
  return s;
}

// The sizes the checks draw or pin (kernel_catalogue.hpp: kMaxPinnedElements, Llama-3-8B's MLP fits).
Shape shape_from(std::int64_t rows, std::int64_t cols) {
  if (rows < 1 || cols < 1 || rows > 65536 || cols > 65536 || rows * cols > checks::kMaxPinnedElements)
    throw InvalidField("shape", "must be two sides between 1 and 65536 with at most 2^26 elements, got " +
                                    std::to_string(rows) + "x" + std::to_string(cols));
  return Shape{rows, cols, ShapeKind::square};  // the kind does not enter the values
}

py::dict rules(Eigen::Index max_dim) {
  py::list shape_weights, spectrum_weights;
  for (const auto& [kind, weight] : checks::kShapeWeights)
    shape_weights.append(py::make_tuple(checks::shape_kind_name(kind), weight));
  for (const auto& [kind, weight] : checks::kSpectrumWeights)
    spectrum_weights.append(py::make_tuple(spectrum_kind_name(kind), weight));
  return py::dict(py::arg("special_dimensions") = checks::special_dimensions(max_dim), py::arg("shape_weights") = shape_weights,
                  py::arg("extreme_short_max") = checks::kExtremeShortMax, py::arg("extreme_long_min") = checks::kExtremeLongMin,
                  py::arg("spectrum_weights") = spectrum_weights, py::arg("unscaled_weight") = checks::kUnscaledWeight,
                  py::arg("max_scale_exponent") = checks::kMaxScaleExponent, py::arg("max_rank") = checks::kMaxRank,
                  py::arg("alpha_tenths") = checks::kAlphaTenths, py::arg("max_log10_condition") = checks::kMaxLog10Condition,
                  py::arg("gaussian_grid_half_width") = checks::kGaussianGridHalfWidth,
                  py::arg("max_integer_entry") = checks::kMaxIntegerEntry,
                  py::arg("element_shrinking_max_elements") = checks::kElementShrinkingMaxElements);
}

}  // namespace

void bind_generators(py::module_& m) {
  m.def("generator_rules", &rules, py::arg("max_dim"),
        "The property generators' rules (checks/generators/): special dimensions, shape and spectrum weights, ranges.");
  m.def(
      "draws_needed",
      [](std::int64_t rows, std::int64_t cols, const py::dict& spectrum) {
        const Shape s = shape_from(rows, cols);
        const Spectrum spec = spectrum_from(spectrum);
        const bool seeded = rows * cols > checks::kElementShrinkingMaxElements;
        const std::size_t ints = spec.kind == Spectrum::Kind::integer_valued ? static_cast<std::size_t>(rows * cols) : 0;
        return py::dict(py::arg("seeded") = seeded, py::arg("normals") = seeded ? 0 : checks::detail::normals_needed(s, spec),
                        py::arg("integers") = seeded ? 0 : ints);
      },
      py::arg("rows"), py::arg("cols"), py::arg("spectrum"),
      "What the suite draws for a matrix: a seed (above 128 x 128 elements), or so many normal grid points and integers.");
  m.def(
      "make_matrix",
      [](std::int64_t rows, std::int64_t cols, const py::dict& spectrum, const std::vector<std::int64_t>& grid,
         const std::vector<std::int64_t>& integers, std::optional<std::uint64_t> seed) {
        const Shape s = shape_from(rows, cols);
        const Spectrum spec = spectrum_from(spectrum);
        if (seed) return matrix_to_array(checks::detail::finished(checks::seeded::values(s, spec, *seed), spec), true);
        if (grid.size() != checks::detail::normals_needed(s, spec))
          throw InvalidField("grid", "must hold draws_needed()['normals'] = " + std::to_string(checks::detail::normals_needed(s, spec)) +
                                         " points, got " + std::to_string(grid.size()));
        for (const std::int64_t j : grid)
          if (j < -checks::kGaussianGridHalfWidth || j > checks::kGaussianGridHalfWidth)
            throw InvalidField("grid", "points must lie in [-2^20, 2^20], got " + std::to_string(j));
        const std::size_t ints = spec.kind == Spectrum::Kind::integer_valued ? static_cast<std::size_t>(rows * cols) : 0;
        if (integers.size() != ints)
          throw InvalidField("integers", "must hold draws_needed()['integers'] = " + std::to_string(ints) + ", got " +
                                             std::to_string(integers.size()));
        return matrix_to_array(checks::matrix_of_draws(s, spec, checks::MatrixDraws{grid, integers}), true);
      },
      py::arg("rows"), py::arg("cols"), py::arg("spectrum"), py::arg("grid") = std::vector<std::int64_t>{},
      py::arg("integers") = std::vector<std::int64_t>{}, py::arg("seed") = std::nullopt,
      "The suite's matrix of this shape and spectrum from its draws (normal grid points and integers, or a seed).");
  m.def(
      "sample_generated_matrix",
      [](std::int64_t rows, std::int64_t cols, const py::dict& spectrum, std::uint64_t rc_seed) {
        const Shape s = shape_from(rows, cols);
        const Spectrum spec = spectrum_from(spectrum);
        const checks::TestMatrix t = checks::sample(checks::matrices_of(s, spec), rc_seed);
        py::dict out(py::arg("values") = matrix_to_array(t.values, true), py::arg("seed") = t.seed);
        if (!t.seed) {
          const checks::MatrixDraws d = checks::sample(checks::matrix_draws(s, spec), rc_seed);
          out["grid"] = d.grid;
          out["integers"] = d.integers;
        }
        return out;
      },
      py::arg("rows"), py::arg("cols"), py::arg("spectrum"), py::arg("rc_seed"),
      "One matrix the suite's RapidCheck generator draws at rc_seed, with its draws (grid and integers, or its seed).");
}

}  // namespace nsv::python
