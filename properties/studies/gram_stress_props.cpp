// Dao-AILab's stress test as nsverify runs it (engine/src/gram_stress.cpp, report §6b): its
// orthogonality metric ||P P^T - I_m||_F / sqrt(m), which the study evaluates without the m x m
// product (through ||P^T P||_F^2 - 2 ||P||_F^2 + m), against what linear algebra allows it to be.
//
// GS2  for a tall m x n estimate P with singular values s_1..s_n (rank <= n < m),
//      ||P P^T - I_m||_F^2 = sum_i (s_i^2 - 1)^2 + (m - n), so
//        (m - n) / m  <=  orth_error^2  <=  (m - n + n max(1, ((1 + bv)^2 - 1)^2)) / m,
//      bv = max(s_1 - 1, 0) being the bound violation the study reports from P^T P's top
//      eigenvalue (each (s_i^2 - 1)^2 is at most 1 for s_i <= 1 and at most ((1 + bv)^2 - 1)^2
//      above). The band comes from the rank and the largest singular value, a second path
//      through P: a metric the study forgets, or evaluates with a wrong sign or term, leaves it.
//      fp64 rounding of the evaluation (m, n <= 64, entries of size <= 1.2) is below 1e-12,
//      allowed as 1e-9 on both sides.
#include <unistd.h>

#include <Eigen/SVD>
#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "check.hpp"
#include "nsv/engine/csv.hpp"
#include "nsv/engine/gram_stress.hpp"

using nsv::engine::GramStressRow;
using nsv::engine::GramStressSpec;
using nsv::engine::PolarMetrics;

namespace {

constexpr double kEvaluation = 1e-9;

GramStressSpec tiny_spec(std::int64_t n, int aspect) {
  GramStressSpec spec;
  spec.n = n;
  spec.aspect = aspect;
  spec.repeats = 1;
  spec.gamma_samples = 1;
  spec.threads = 1;
  spec.progress = false;
  return spec;
}

struct Band {
  double floor2, ceiling2;
  bool holds(double orth_error) const {
    const double e2 = orth_error * orth_error;
    return e2 >= floor2 - kEvaluation && e2 <= ceiling2 + kEvaluation;
  }
};

Band band(std::int64_t n, int aspect, double bound_violation) {
  const double rows = static_cast<double>(n * aspect), cols = static_cast<double>(n);
  const double above = std::pow(1 + bound_violation, 2) - 1;
  return {(rows - cols) / rows, (rows - cols + cols * std::max(1.0, above * above)) / rows};
}

const std::vector<std::pair<std::int64_t, int>> kShapes{{12, 2}, {16, 4}};  // n >= 10: the script's spectra need it

}  // namespace

BOOST_AUTO_TEST_SUITE(study_gram_stress)

BOOST_AUTO_TEST_SUITE(gram_stress_metrics)

BOOST_AUTO_TEST_CASE(GS2_orthogonality_error_lies_in_the_band_of_rank_and_top_singular_value) {
  for (const auto& [n, aspect] : kShapes) {
    const std::vector<GramStressRow> rows = nsv::engine::run_gram_stress(tiny_spec(n, aspect));
    BOOST_TEST(rows.size() == 11u * tiny_spec(n, aspect).restarts.size());  // ten designed spectra + one Gamma
    for (const GramStressRow& r : rows)
      for (const auto& [method, m] : {std::pair{"standard", r.reference}, std::pair{"gram", r.ours}}) {
        if (!std::isfinite(m.orth_error)) continue;  // a blow-up is reported as such, not measured
        const Band b = band(n, aspect, m.bound_violation);
        BOOST_TEST(b.holds(m.orth_error), method << " on " << r.spectrum << " (" << n * aspect << "x" << n << ", restarts "
                                                 << r.restart_at << "): orth_error^2 " << m.orth_error * m.orth_error
                                                 << " outside [" << b.floor2 << ", " << b.ceiling2 << "]");
      }
  }
}

// Negative control: the band has teeth on both sides for the shapes above. The exact polar
// factor (every s_i = 1, orth_error^2 = (m - n)/m) is inside; a metric never computed (0) is
// below the floor; one without its 1/sqrt(m) normalization is above the ceiling.
BOOST_AUTO_TEST_CASE(GS2_negative_control_the_band_rejects_a_missing_or_doubled_metric) {
  for (const auto& [n, aspect] : kShapes) {
    const Band b = band(n, aspect, 0.0);
    const double exact = std::sqrt(1.0 - 1.0 / aspect);
    BOOST_TEST(b.holds(exact));
    BOOST_TEST(!b.holds(0.0));
    BOOST_TEST(!b.holds(exact * std::sqrt(static_cast<double>(n * aspect))));
  }
}


// GS3  the test's inputs are the script's: each designed spectrum is stress_test.py's list, as
//      written out here element by element (a second transcription of the script, sharing no
//      code with the study's), and each built matrix has that spectrum: its singular values,
//      by Eigen's SVD of the input, are the record's. The input is U diag(s) V^T in fp64 rounded
//      to fp32 (all but s10): the rounding is E with |E_ij| <= 2^-24 |A_ij|, so
//      ||E||_2 <= ||E||_F <= 2^-24 ||A||_F = 2^-24 ||s||_2, and by Weyl's inequality each
//      singular value moves by at most that; fp64 construction and SVD add < 1e-12 (n <= 16).
BOOST_AUTO_TEST_CASE(GS3_inputs_have_the_spectra_of_the_script) {
  const auto ten_to = [](double from, double to, std::int64_t i, std::int64_t count) {  // torch.logspace's element i
    return std::pow(10.0, count == 1 ? from : from + (to - from) * static_cast<double>(i) / static_cast<double>(count - 1));
  };
  for (const auto& [n, aspect] : kShapes) {
    // The script's spectrum k (1..10), element i (0..n-1).
    const auto script = [&, n = n](int k, std::int64_t i) -> double {
      switch (k) {
        case 1: return 0.5 * static_cast<double>(i) / static_cast<double>(n - 1);
        case 2: return ten_to(0, -3, i, n);
        case 3: return ten_to(0, -5, i, n);
        case 4: return ten_to(0, -7, i, n);
        case 5: return ten_to(0, -9, i, n);
        case 6: return i < n / 2 ? ten_to(0, -2, i, n / 2) : 0.0;
        case 7: return i < 10 ? ten_to(0, -1, i, 10) : 0.0;
        case 8: return i < 2 ? ten_to(0, -0.5, i, 2) : 0.0;
        case 9: return i < 2 ? ten_to(0, -0.5, i, 2) : ten_to(-4, -7, i - 2, n - 2);
        default: return i < n - n / 11 ? ten_to(0, -10, i, n - n / 11) : ten_to(-4, -10, i - (n - n / 11), n / 11);
      }
    };
    const GramStressSpec spec = tiny_spec(n, aspect);
    const std::vector<nsv::engine::StressMatrix> inputs = nsv::engine::stress_matrices(spec);
    BOOST_TEST_REQUIRE(inputs.size() == 11u);
    for (std::size_t j = 0; j < inputs.size(); ++j) {
      const nsv::engine::StressMatrix& s = inputs[j];
      BOOST_TEST_REQUIRE(s.sigma.size() == static_cast<std::size_t>(n), s.spectrum << " has " << s.sigma.size() << " values");
      if (j < 10) {
        BOOST_TEST(s.spectrum == "s" + std::to_string(j + 1));
        BOOST_TEST(s.float64 == (j == 9));
        for (std::int64_t i = 0; i < n; ++i)
          BOOST_TEST(s.sigma[static_cast<std::size_t>(i)] == script(static_cast<int>(j + 1), i),
                     s.spectrum << "[" << i << "] = " << s.sigma[static_cast<std::size_t>(i)] << ", the script's "
                                << script(static_cast<int>(j + 1), i) << " (n " << n << ")");
      }
      std::vector<double> want = s.sigma;
      std::sort(want.begin(), want.end(), std::greater<>());
      double norm2 = 0;
      for (const double v : want) norm2 += v * v;
      const double allowed = (s.float64 ? 0.0 : 0x1.0p-24 * std::sqrt(norm2)) + 1e-12;
      const Eigen::VectorXd got = Eigen::JacobiSVD<Eigen::MatrixXd>(nsv::engine::stress_input(s, spec, j)).singularValues();
      BOOST_TEST_REQUIRE(got.size() == n);
      for (std::int64_t i = 0; i < n; ++i)
        BOOST_TEST(std::abs(got(i) - want[static_cast<std::size_t>(i)]) <= allowed,
                   s.spectrum << ": singular value " << i << " of the input is " << got(i) << ", its spectrum's "
                              << want[static_cast<std::size_t>(i)] << " (allowed " << allowed << ")");
    }
  }
}

// GS4  the summary read back from gram_stress.csv counts as blow-ups exactly the runs whose
//      metrics are non-finite, and its median and maximum of each of the five metrics are those
//      of the rows, its matrix count theirs: written with csv_line from rows whose values are
//      known (one run of the tiny test with two of its rows made blow-ups, as polar_metrics
//      reports them: every metric inf), and recomputed here directly (median: the element of
//      index count/2 of the sorted values, as the report defines it), each metric found in the
//      row by its column name.
BOOST_AUTO_TEST_CASE(GS4_summary_counts_the_blowups_and_summarizes_the_rows_it_reads) {
  const GramStressSpec spec = tiny_spec(12, 2);
  std::vector<GramStressRow> rows = nsv::engine::run_gram_stress(spec);
  constexpr double inf = std::numeric_limits<double>::infinity();
  const PolarMetrics blowup{inf, inf, inf, inf, inf};
  rows[0].ours = blowup;
  rows[3].ours = blowup;
  const std::string path = (std::filesystem::temp_directory_path() / ("nsv_gs4_" + std::to_string(::getpid()) + ".csv")).string();
  {
    std::ofstream out(path);
    out << nsv::engine::csv_line(nsv::engine::gram_stress_header());
    for (const GramStressRow& r : rows) out << nsv::engine::csv_line(nsv::engine::gram_stress_fields(r));
  }
  const nlohmann::json summary = nsv::engine::gram_stress_summary(path, spec);
  std::filesystem::remove(path);
  std::set<std::pair<std::string, int>> matrices;
  for (const GramStressRow& r : rows) matrices.emplace(r.spectrum, r.sample);
  BOOST_TEST(summary.at("matrices").get<std::size_t>() == matrices.size());
  BOOST_TEST(summary.at("n").get<std::int64_t>() == spec.n);  // the spec it was read under, echoed
  BOOST_TEST(summary.at("aspect").get<int>() == spec.aspect);
  BOOST_TEST(summary.at("steps").get<int>() == spec.steps);
  const std::vector<std::string> header = nsv::engine::gram_stress_header();
  const auto column = [&header](const std::string& name) {
    return static_cast<std::size_t>(std::find(header.begin(), header.end(), name) - header.begin());
  };
  const auto as_number = [](const nlohmann::json& v) { return v.is_string() ? inf : v.get<double>(); };
  BOOST_TEST_REQUIRE(summary.at("runs").size() == spec.restarts.size());
  for (const nlohmann::json& run : summary.at("runs")) {
    const std::string restarts = run.at("restart_at");
    for (const std::string method : {"reference", "ours"}) {
      const nlohmann::json& got = run.at(method);
      BOOST_TEST_REQUIRE(got.at("metrics").size() == 5u);
      for (const auto& [metric, figures] : got.at("metrics").items()) {
        BOOST_TEST_REQUIRE(column(metric + "_" + method) < header.size(), metric);
        std::vector<double> v;
        int blowups = 0;
        for (const GramStressRow& r : rows) {
          if (r.restart_at != restarts) continue;
          const PolarMetrics& m = method == "ours" ? r.ours : r.reference;
          v.push_back(std::stod(nsv::engine::gram_stress_fields(r)[column(metric + "_" + method)]));  // as written: %.6g
          blowups += std::isfinite(m.orth_error) ? 0 : 1;
        }
        BOOST_TEST(got.at("blowups").get<int>() == blowups, method << " restarts " << restarts);
        BOOST_TEST(got.at("matrices").get<std::size_t>() == v.size());
        std::sort(v.begin(), v.end());
        BOOST_TEST(as_number(figures.at("median")) == v[v.size() / 2], metric << " " << method << " restarts " << restarts);
        BOOST_TEST(as_number(figures.at("max")) == v.back(), metric << " " << method << " restarts " << restarts);
      }
    }
  }
  // Negative control: the planted blow-ups (row 0: matrix 0 with the first restart list; row 3:
  // matrix 1 with the second) were read, so the counts above were not all trivially zero.
  BOOST_TEST(summary.at("runs")[0].at("ours").at("blowups").get<int>() + summary.at("runs")[1].at("ours").at("blowups").get<int>() == 2);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
