#pragma once
// What the library takes from a front end as a matrix or a batch of matrices (a .npy file, a
// numpy array, a torch tensor, a generated --shape), one set of rules for `nsv`, the Python
// bindings and nsverify.torch:
//   - sizes, judged from the shape alone, before anything is allocated or copied: at most
//     kMaxInputElements in one call, and memory this process may use for the copies;
//   - an input of Newton-Schulz or of a spectrum: not empty (a matrix of at least one row and one
//     column, a batch of at least one such matrix), and finite with a Frobenius norm the kernel's
//     normalization dtype can hold (else the division turns the result into NaN or all zeros).
// Every refusal is a std::invalid_argument whose message starts with `what`, the input as the
// front end names it ("G", "G[3]", "--shape", a file's path), and says what to change.
#include <cstdint>
#include <string>
#include <vector>

#include "nsv/kernels.hpp"
#include "nsv/matrix.hpp"

namespace nsv {

// The largest side a generated matrix may have (`--shape`, parse_shape), and the most elements one
// call takes, one matrix or a whole batch: 65536 x 65536 = 2^32, 32 GiB as float64 before any
// working buffer, past the largest layer matrices Muon orthogonalizes (Llama 3 405B's MLP,
// 16384 x 53248, holds 2^29.7).
inline constexpr std::int64_t kMaxShapeSide = 65536;
inline constexpr std::uint64_t kMaxInputElements = std::uint64_t{kMaxShapeSide} * kMaxShapeSide;

// A 2-D matrix (`batch` false, count 1) or a 3-D batch of `count` matrices of rows x cols.
struct InputShape {
  std::int64_t count = 1, rows = 0, cols = 0;
  bool batch = false;

  static InputShape matrix(std::int64_t rows, std::int64_t cols) { return {1, rows, cols, false}; }
  // A .npy file's shape (2 or 3 dimensions, npy.hpp).
  static InputShape of(const std::vector<long>& dims);
  std::uint64_t elements() const;  // saturating: never wraps
  std::string text() const;        // "16x32", "8 matrices of 16x32"
};

// Any matrix or batch copied into the library: at most kMaxInputElements, and a float64 copy the
// process can hold. Empty matrices pass (a rank's shard is empty when tp exceeds the split axis).
void require_copyable(const std::string& what, const InputShape&);

// An input of Newton-Schulz or of a spectrum: at most kMaxInputElements, not empty, and its float64
// copies and the Newton-Schulz buffers of every matrix in flight (one per OpenMP thread) within the
// memory the process may use.
void require_ns_shape(const std::string& what, const InputShape&);

// Not empty: at least one matrix of at least one row and one column.
void require_not_empty(const std::string& what, const InputShape&);
// The words require_not_empty throws after "what: " ("an empty matrix (0x5) has no Newton-Schulz and
// no spectrum: give ..."), or "" for a shape that is not empty: for a reader that throws its own
// error type (read_npy's std::runtime_error).
std::string emptiness(const InputShape&);

// Finite, with a Frobenius norm within the dtype the kernel normalizes in (normalization_dtype):
// refused otherwise, since NS of a non-finite matrix is non-finite and the division by an
// infinite norm turns the whole result into zeros, as DeepSpeed's kernels do. A shard's norm is at
// most its matrix's, so the whole matrix's check covers every sharded run of it.
void require_normalizable(const MatD&, const NsConfig&, const std::string& what);

}  // namespace nsv
