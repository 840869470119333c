#pragma once
// The user's Newton-Schulz as an implementation under test of the kernel catalogue. The framework
// side (numpy or torch, the dtype and device the callable is handed) lives in a Python adapter
// object (nsverify/_adapters.py): this class hands it float32 numpy arrays (float64 for an fp64
// check) and reads back what it returns. The GIL is taken for each call only (the checks run with
// it released). A Python exception, or a result of the wrong shape, fails the case (and so
// shrinks like any other failure, SystemExit included); KeyboardInterrupt ends the whole check
// (outcomes.hpp).
#include <pybind11/pybind11.h>

#include <string>

#include "arrays.hpp"
#include "kernel_under_test.hpp"

namespace nsv::python {

class UserKernel final : public checks::KernelUnderTest {
 public:
  // adapter: call(x), call_at_offset(x, offset), call_observed(x) -> (output, input_after, aliased);
  // `batched`: the callable takes 3-D batches; `float64`: hand it float64 arrays.
  UserKernel(py::object adapter, std::string name, bool batched, bool float64);

  std::string name() const override { return name_; }
  unsigned abilities() const override;
  MatD run(const MatD& g, const NsConfig& cfg) const override;
  Batch run_batch(const Batch& batch, const NsConfig& cfg) const override;
  MatD run_at_offset(const MatD& g, int offset, const NsConfig& cfg) const override;
  checks::ObservedCall run_observed(const MatD& g, const NsConfig& cfg) const override;

 private:
  py::object adapter_;
  std::string name_;
  bool batched_, float64_;
};

// Calls `call` with the GIL held, timed, translating what the user's code raised: an exception
// that must end the check is kept (outcomes.hpp) and every one becomes a failed case with its
// message.
py::object call_user_code(const std::function<py::object()>& call);

}  // namespace nsv::python
