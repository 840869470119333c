#pragma once
// Generators of kernel configurations: dtypes, kernels, accumulation modes, product modes,
// coefficient schedules, step counts and whole NsConfigs, with the Arbitrary specialisations of
// the library's enums and their printing in counterexamples.
#include <rapidcheck.h>

#include <ostream>
#include <string>
#include <vector>

#include "nsv/coeffs.hpp"
#include "nsv/dtype.hpp"
#include "nsv/kernels.hpp"

namespace nsv::checks {

inline rc::Gen<DType> dtypes() { return rc::gen::element(DType::fp64, DType::fp32, DType::bf16, DType::fp16); }
inline rc::Gen<DType> narrow_dtypes() { return rc::gen::element(DType::fp32, DType::bf16, DType::fp16); }
inline rc::Gen<Kernel> kernels() { return rc::gen::element(Kernel::standard, Kernel::gram); }

// The accumulation mode that a dtype allows: fp64 always accumulates in fp64.
inline rc::Gen<Accumulate> accumulations(DType d) {
  if (d == DType::fp64) return rc::gen::just(Accumulate::fp32);
  return rc::gen::weightedElement<Accumulate>({{3, Accumulate::fp32}, {1, Accumulate::compute}});
}

// Both ways of computing the n x n products; the default (symmetric) drawn more often.
inline rc::Gen<Products> products() {
  return rc::gen::weightedElement<Products>({{3, Products::symmetric}, {1, Products::full}});
}

// Every built-in schedule (the record table of coeffs.cpp), DeepSpeed's `keller` four times as
// often as each other one. rc::gen::weightedElement takes its pairs only as an initializer list;
// the generator it builds takes the same weights and elements as vectors, so a list known at run
// time draws exactly as the literal list would.
inline rc::Gen<CoeffSchedule> schedules() {
  std::vector<std::size_t> weights;
  std::vector<std::string> names = builtin_schedule_names();
  for (const std::string& name : names) weights.push_back(name == "keller" ? 4 : 1);
  return rc::gen::map(rc::Gen<std::string>(rc::gen::detail::WeightedElementGen<std::string>(std::move(weights), std::move(names))),
                      [](const std::string& name) { return builtin_schedule(name); });
}

// Step counts biased to DeepSpeed's 5, with 0 (the normalization alone) and up to 10.
inline rc::Gen<int> step_counts() {
  return rc::gen::weightedOneOf<int>({{3, rc::gen::just(5)}, {2, rc::gen::inRange(0, 11)}});
}

// Restart lists of the gram loop for a run of `steps` steps: DeepSpeed's {2} often, otherwise any
// strictly increasing subset of 0..steps+1 (0 and the steps past the last one never restart, so
// they are drawn too: the loop must ignore them).
inline rc::Gen<std::vector<int>> restart_lists(int steps) {
  const auto subsets = rc::gen::map(rc::gen::container<std::vector<bool>>(static_cast<std::size_t>(steps + 2), rc::gen::arbitrary<bool>()),
                                    [](const std::vector<bool>& chosen) {
                                      std::vector<int> r;
                                      for (std::size_t s = 0; s < chosen.size(); ++s)
                                        if (chosen[s]) r.push_back(static_cast<int>(s));
                                      return r;
                                    });
  return rc::gen::weightedOneOf<std::vector<int>>({{1, rc::gen::just(std::vector<int>{2})}, {3, subsets}});
}

// A whole kernel configuration (DeepSpeed's restart list {2}); the fixed parts can be pinned by the caller afterwards.
inline rc::Gen<NsConfig> ns_configs() {
  return rc::gen::mapcat(rc::gen::tuple(kernels(), dtypes(), schedules(), step_counts(), products()), [](const auto& t) {
    const auto& [kernel, dtype, schedule, steps, how] = t;
    return rc::gen::map(accumulations(dtype), [=](Accumulate acc) {
      NsConfig cfg;
      cfg.kernel = kernel;
      cfg.dtype = dtype;
      cfg.accumulate = acc;
      cfg.products = how;
      cfg.coeffs = schedule;
      cfg.steps = steps;
      return cfg;
    });
  });
}

}  // namespace nsv::checks

// Arbitrary specialisations where a type has one natural distribution.
namespace rc {

template <>
struct Arbitrary<nsv::DType> {
  static Gen<nsv::DType> arbitrary() { return nsv::checks::dtypes(); }
};
template <>
struct Arbitrary<nsv::Kernel> {
  static Gen<nsv::Kernel> arbitrary() { return nsv::checks::kernels(); }
};
template <>
struct Arbitrary<nsv::NsConfig> {
  static Gen<nsv::NsConfig> arbitrary() { return nsv::checks::ns_configs(); }
};

}  // namespace rc

// Printing of library types in counterexamples (found by argument-dependent lookup).
namespace nsv {
inline void showValue(DType d, std::ostream& os) { os << dtype_name(d); }
inline void showValue(Kernel k, std::ostream& os) { os << kernel_name(k); }
inline void showValue(Accumulate a, std::ostream& os) { os << "accumulate=" << accumulate_name(a); }
inline void showValue(const NsConfig& c, std::ostream& os) {
  os << kernel_name(c.kernel) << ' ' << dtype_name(c.dtype) << " accumulate=" << accumulate_name(c.accumulate)
     << " products=" << products_name(c.products) << ' ' << c.coeffs.name << " steps=" << c.steps;
}
}  // namespace nsv
