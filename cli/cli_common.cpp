#include "cli_common.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <stdexcept>

#include "cli_checks.hpp"
#include "nsv/input_limits.hpp"
#include "nsv/invalid_field.hpp"
#include "nsv/npy.hpp"
#include "nsv/spectra.hpp"

namespace nsv::cli {

std::string schedule_choices(const std::string& sep) {
  std::string out;
  for (const std::string& name : builtin_schedule_names()) out += (out.empty() ? "" : sep) + name;
  return out;
}

void NsOptions::add_to(CLI::App& cmd) {
  cmd.add_option("--kernel", kernel, "Newton-Schulz kernel: " + choices_text<Kernel>(" | "))
      ->check(CLI::IsMember(choices_of<Kernel>()))->capture_default_str();
  cmd.add_option("--steps", steps, "number of NS steps")->check(CLI::Range(0, 1000))->capture_default_str();
  cmd.add_option("--dtype", dtype, "compute dtype: " + choices_text<DType>(" | "))
      ->check(CLI::IsMember(choices_of<DType>()))->capture_default_str();
  cmd.add_option("--accumulate", accumulate, "GEMM accumulation: " + choices_text<Accumulate>(" | ", true))
      ->check(CLI::IsMember(choices_of<Accumulate>()))->capture_default_str();
  cmd.add_option("--products", products, "n x n products: " + choices_text<Products>(" | ", true))
      ->check(CLI::IsMember(choices_of<Products>()))->capture_default_str();
  cmd.add_option("--coeffs", coeffs, "coefficient schedule: " + schedule_choices(" | ") + " | FILE of 'a b c' lines (the last triple repeats)")->capture_default_str();
  cmd.add_option("--restart-at", restart_at,
                 "gram kernel: the steps it restarts before, e.g. 2 or 2,4,6 (steps outside 1..steps-1, or none: never)")
      ->check(restart_list())->capture_default_str();
}

void MatrixSource::add_to(CLI::App& cmd) {
  auto* in = cmd.add_option("--input", input, "input matrix (.npy, float32/float64, C order)")->check(CLI::ExistingFile);
  auto* sh = cmd.add_option("--shape", shape, "generate a ROWSxCOLS matrix instead of reading one");
  in->excludes(sh);
  cmd.add_option("--spectrum", spectrum, "generated matrix: gaussian | lowrank:R | powerlaw:ALPHA")->capture_default_str();
  cmd.add_option("--seed", seed, "seed of the generated matrix")->check(integer_in(0, kMaxSeed))->capture_default_str();
}

MatD MatrixSource::load() const {
  if (input.empty() && shape.empty()) throw std::invalid_argument("give a matrix: --input FILE.npy or --shape ROWSxCOLS");
  MatD g;
  if (!input.empty()) {
    g = read_npy(input, [&](const std::vector<long>& dims) { require_ns_shape(input, InputShape::of(dims)); }).matrix();
  } else {
    const auto [r, c] = parse_shape(shape);
    require_ns_shape("--shape", InputShape::matrix(r, c));
    g = make_matrix(parse_spectrum(spectrum), r, c, seed);
  }
  return g;
}

std::string MatrixSource::describe() const {
  return input.empty() ? shape + " " + spectrum + " seed " + std::to_string(seed) : input;
}

void refuse_output_over_inputs(const std::string& output_flag, const std::string& output,
                               const std::vector<std::pair<std::string, std::string>>& inputs) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (output.empty() || !fs::exists(output, ec)) return;  // a new file cannot be an existing input
  for (const auto& [flag, path] : inputs)
    if (!path.empty() && fs::equivalent(output, path, ec))
      throw std::invalid_argument(output_flag + " " + output + " is the " + flag + " file of this run: writing the result "
                                  "there would destroy the input; choose another " + output_flag);
}

std::vector<std::string> whole_target_strategies() {
  std::vector<std::string> names;
  for (const StrategyRecord& r : strategy_records())
    if (r.target == Target::whole) names.emplace_back(r.name);
  return names;
}

void print_rank_table(const Comparison& c) {
  std::printf("%4s %7s %7s %12s %9s %10s %12s %12s %5s %12s\n", "rank", "rows", "cols", "rel_diff", "cosine", "norm_ratio",
              "bytes_sent", "bytes_recv", "msgs", "GFLOP");
  for (const auto& r : c.ranks)
    std::printf("%4d %7lld %7lld %12.6g %9.6f %10.6f %12llu %12llu %5llu %12.4f%s\n", r.rank, static_cast<long long>(r.rows),
                static_cast<long long>(r.cols), r.rel_diff, r.cosine, r.norm_ratio,
                static_cast<unsigned long long>(r.traffic.bytes_sent), static_cast<unsigned long long>(r.traffic.bytes_received),
                static_cast<unsigned long long>(r.traffic.messages), r.flops / 1e9,
                r.rows * r.cols == 0 ? "  (holds nothing)" : "");
  std::string coll;
  for (Collective k : kAllCollectives)
    if (c.collectives[static_cast<std::size_t>(k)] > 0)
      coll += std::string(collective_name(k)) + " x" + std::to_string(c.collectives[static_cast<std::size_t>(k)]) + "  ";
  std::printf("collectives: %s\n", coll.empty() ? "none" : coll.c_str());
}

std::string flag_of_field(const std::string& field) {
  // Every flag is its field's name with `_` written `-` (restart_at: --restart-at).
  std::string flag = "--" + field;
  std::replace(flag.begin(), flag.end(), '_', '-');
  return flag;
}

std::string error_text(const std::exception& e) {
  if (const auto* f = dynamic_cast<const InvalidField*>(&e)) return flag_of_field(f->field()) + " " + f->requirement();
  return e.what();
}

}  // namespace nsv::cli
