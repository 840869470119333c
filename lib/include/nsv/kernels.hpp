#pragma once
// The two Newton-Schulz kernels of DeepSpeed (SPEC §1.1-1.2) and their configuration.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "nsv/coeffs.hpp"
#include "nsv/dtype.hpp"
#include "nsv/matrix.hpp"

namespace nsv {

enum class Kernel { standard, gram };
Kernel parse_kernel(std::string_view);
std::string_view kernel_name(Kernel);

// How the n x n products of the iteration (A A, and the Gram loop's updates, all polynomials in
// the Gram matrix, so symmetric in exact arithmetic) are computed. `symmetric`: the upper
// triangle only, mirrored: about half the FLOPs of those products, every n x n matrix symmetric
// bit for bit. `full`: both triangles, as PyTorch (and so DeepSpeed) computes them; for bit-level
// comparison with DeepSpeed's outputs. Both round every entry once; measured cost of `symmetric`
// in accuracy: reports/performance.md.
enum class Products { symmetric, full };
Products parse_products(std::string_view);
std::string_view products_name(Products);

struct NsConfig {
  Kernel kernel = Kernel::gram;
  int steps = 5;
  DType dtype = DType::fp32;
  Accumulate accumulate = Accumulate::fp32;
  Products products = Products::symmetric;
  CoeffSchedule coeffs = builtin_schedule("keller");
  // gram only: the steps the loop restarts before (X = Q X, then X's Gram matrix afresh, which
  // drops the rounding the n x n updates gathered since the last (re)start), strictly
  // increasing. A step outside 1..steps-1 never comes: {}, {0} and {steps} all mean "never".
  // DeepSpeed restarts once, before step 2; Dao-AILab's gram-newton-schulz takes a list.
  std::vector<int> restart_at = {2};
  double eps = 1e-7;

  void validate() const;  // throws std::invalid_argument naming the bad field
  // Whether the gram loop restarts before `step` (the one rule the loop and its FLOP count read).
  bool restarts_before(int step) const;
};

// A restart list as text: "2", "2,4,6", "none" for the empty list; parse_restarts reads it back
// (and "none"), throwing std::invalid_argument saying the accepted form.
std::string restarts_text(const std::vector<int>&);
std::vector<int> parse_restarts(std::string_view);

// The dtype the Frobenius normalization runs in: the standard kernel normalizes after the cast,
// in the compute dtype; the gram kernel normalizes before it, in fp32 (fp64 when computing in
// fp64), as DeepSpeed's newest version does to keep large fp16 inputs finite.
DType normalization_dtype(const NsConfig&);

// FLOPs of one NS call on an m x n matrix, counting every product of a (p x k) by a (k x q)
// matrix as 2pkq, including the symmetric ones (the "plain algorithm" convention: standard is
// 4p^2q + 2p^3 per step with p = min(m,n), q = max(m,n)). Elementwise work is not counted.
std::uint64_t ns_flops(const NsConfig&, std::int64_t rows, std::int64_t cols);

}  // namespace nsv
