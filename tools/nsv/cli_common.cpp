#include "cli_common.hpp"

namespace nsv::cli {

void NsOptions::add_to(CLI::App& cmd) {
  cmd.add_option("--kernel", kernel, "Newton-Schulz kernel: standard | gram")->check(CLI::IsMember({"standard", "gram"}))->capture_default_str();
  cmd.add_option("--steps", steps, "number of NS steps")->check(CLI::Range(0, 1000))->capture_default_str();
  cmd.add_option("--dtype", dtype, "compute dtype: fp64 | fp32 | bf16 | fp16")->check(CLI::IsMember({"fp64", "fp32", "bf16", "fp16"}))->capture_default_str();
  cmd.add_option("--accumulate", accumulate,
                 "GEMM accumulation: fp32 (tensor cores, cuBLAS) | compute (PyTorch CPU bf16/fp16 GEMM)")
      ->check(CLI::IsMember({"fp32", "compute"}))->capture_default_str();
  cmd.add_option("--coeffs", coeffs, "coefficient schedule: keller | you | polar_express | FILE of 'a b c' lines")->capture_default_str();
  cmd.add_option("--restart-at", restart_at, "gram kernel: restart step (outside 1..steps-1 = never)")->capture_default_str();
}

NsConfig NsOptions::config() const {
  NsConfig cfg;
  cfg.kernel = parse_kernel(kernel);
  cfg.steps = steps;
  cfg.dtype = parse_dtype(dtype);
  cfg.accumulate = parse_accumulate(accumulate);
  cfg.coeffs = resolve_schedule(coeffs);
  cfg.restart_at = restart_at;
  cfg.validate();
  return cfg;
}

}  // namespace nsv::cli
