#pragma once
// An implementation of Newton-Schulz under test: what every kernel property of the catalogue
// (kernel_catalogue.hpp) is written against, as PyTorch's OpInfo tests are written against an
// operation record. The reference's CPU backend, the CUDA backend, a user's numpy or torch
// callable are implementations; a property is written once and runs on each of them.
#include <string>

#include "nsv/kernels.hpp"
#include "nsv/matrix.hpp"

namespace nsv::checks {

// What an implementation can be asked beyond NS of one matrix in the configuration it claims.
// A property that needs an ability the implementation lacks is reported "not applicable", with
// the ability's words (ability_words).
enum Ability : unsigned {
  kBatches = 1u << 0,       // NS of a 3-D batch of equally shaped matrices in one call
  kMixedBatches = 1u << 1,  // NS of a list of differently shaped matrices in one call
  kAnyConfig = 1u << 2,     // runs whatever configuration it is given (kernel, dtype, products, ...)
  kThreadCount = 1u << 3,   // its parallelism can be set (OpenMP threads)
  kCallerBuffer = 1u << 4,  // it works on the caller's own buffer (which may start anywhere in memory, and
                            // which it could write): a Python callable. The C++ backends take copies.
};
// "takes 3-D batches", ...: what an implementation lacking `needs` cannot do, for a report.
std::string ability_words(unsigned needs);

// What the callee left in the buffer it was given, beside what it returned (the input-untouched
// and no-aliasing property).
struct ObservedCall {
  MatD output;
  MatD input_after;             // the caller's input as the call left it
  bool output_aliases_input = false;  // the returned array shares memory with the input
};

class KernelUnderTest {
 public:
  virtual ~KernelUnderTest() = default;
  virtual std::string name() const = 0;
  virtual unsigned abilities() const = 0;
  // True for nsverify's own CPU reference: the reference's agreement with itself is not a check.
  virtual bool is_reference() const { return false; }

  // NS of g. Without kAnyConfig an implementation is only ever asked for its own configuration.
  virtual MatD run(const MatD& g, const NsConfig& cfg) const = 0;
  // kBatches / kMixedBatches: NS of every matrix of the batch, in one call.
  virtual Batch run_batch(const Batch& batch, const NsConfig& cfg) const;
  // kCallerBuffer: NS of g stored `offset` elements into a larger buffer.
  virtual MatD run_at_offset(const MatD& g, int offset, const NsConfig& cfg) const;
  // kThreadCount: the parallelism of the following calls; 0 restores the implementation's default.
  virtual void set_threads(int threads) const;
  // kCallerBuffer: NS of g handed over in a buffer the checker keeps and inspects after the call.
  virtual ObservedCall run_observed(const MatD& g, const NsConfig& cfg) const;
};

}  // namespace nsv::checks
