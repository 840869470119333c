#pragma once
// The kernel property catalogue: one record per property (its SPEC code, its claim in words, the
// promise it belongs to, what it needs of an implementation, and its body), each written once
// against KernelUnderTest (kernel_under_test.hpp) and run on every implementation: the reference's
// gate (properties/kernel_catalogue.cpp), the CUDA backend, a user's numpy or torch callable
// (python/src/kernel_check.cpp), `nsv check`. Adding a property is one record plus one function in
// kernel_catalogue.cpp; every implementation under test then runs it.
#include <rapidcheck.h>

#include <Eigen/Core>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "drawn_sides.hpp"
#include "generators/shapes.hpp"
#include "kernel_under_test.hpp"
#include "nsv/kernels.hpp"

namespace nsv::checks {

// What a property says about a kernel: `map`, that it computes the right function (within
// derived bounds, exactly where the maths makes it exact, special inputs handled); `bitwise`,
// that its bits are also reproducible (transposes, batches, repeated calls, threads, offsets).
enum class KernelPromise { map, bitwise };
std::string_view promise_name(KernelPromise);

// Where a property draws its cases for one implementation.
struct KernelDomain {
  rc::Gen<NsConfig> configs;          // the reference: every configuration; a user's kernel: its own
  Eigen::Index max_dim = 48;          // the largest side drawn
  std::optional<checks::Shape> shape;  // every matrix of this shape (the caller's layer), else any
  // The implementation runs accumulate=compute (PyTorch's CPU GEMM in the dtype): a property that
  // draws the accumulation itself draws it only then (the CUDA backend accumulates as cuBLAS does).
  bool compute_accumulation = true;
};
// The reference's domain: every configuration of the generators, sides up to max_dim.
KernelDomain every_configuration(Eigen::Index max_dim);
// A user's kernel: the one configuration it claims, any shape up to max_dim or the pinned one.
// Throws nsv::InvalidField naming max_dim (8..kMaxDrawnSide) or shape (sides >= 1, at most
// kMaxPinnedElements elements: a float64 copy of the case is 512 MiB there, and a case holds about
// a dozen; Llama-3-8B's 4096 x 14336 MLP fits).
inline constexpr Eigen::Index kMaxPinnedElements = Eigen::Index{1} << 26;
KernelDomain one_configuration(const NsConfig&, Eigen::Index max_dim, std::optional<checks::Shape> shape);

struct KernelProperty {
  std::string_view code;   // SPEC's K1..K11, REF
  std::string_view name;   // a sentence, the identifier of results and replay strings
  std::string_view claim;  // the claim in a report's words
  KernelPromise promise;
  unsigned needs = 0;                        // Ability bits the implementation must have (none by default)
  bool compares_with_the_reference = false;  // not run on the reference itself (it would compare it with itself)
  // Why a pinned shape cannot hold the property's cases (empty when it can); null: every shape can.
  std::string_view (*excluded_shape)(const checks::Shape&) = nullptr;
  void (*body)(const KernelUnderTest&, const KernelDomain&);
};
std::span<const KernelProperty> kernel_properties();
const KernelProperty* find_kernel_property(std::string_view name);

// Why `property` is not run on `impl` with every matrix of `pinned` shape (or any shape) ("" when it
// is). Needs no generator, so that front ends can ask before anything is drawn.
std::string not_applicable(const KernelProperty&, const KernelUnderTest&, const std::optional<checks::Shape>& pinned);

}  // namespace nsv::checks
