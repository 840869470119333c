#pragma once
// Memory checks made before any allocation whose size comes from input (a shape on the command
// line, a model's dimensions, a sweep's case count): a request the machine cannot hold is refused
// with the size it needs and the size available, instead of failing with std::bad_alloc after
// minutes, or being killed.
#include <cstdint>
#include <string>

namespace nsv {

// What a run may allocate: the smaller of the machine's physical memory and the process's
// address-space and data limits (`ulimit -v`, `ulimit -d`).
std::uint64_t usable_memory_bytes();

// Bytes the CPU reference holds while it runs Newton-Schulz on a rows x cols float64 matrix: the
// input, the iterate and its product (3 rows*cols) and the n x n Gram matrix with its square and
// polynomial (3 n^2, n = min(rows, cols)). An estimate from above of the kernels' buffers
// (kernels.cpp reuses them across steps), overflow-safe: saturates at UINT64_MAX.
std::uint64_t ns_working_bytes(std::int64_t rows, std::int64_t cols);

// a * b, or UINT64_MAX when it does not fit: sizes computed from input never wrap.
std::uint64_t saturating_product(std::uint64_t a, std::uint64_t b);

// Throws nsv::InvalidField(field, memory_refusal(bytes, what)) when bytes > usable_memory_bytes().
void require_memory(std::uint64_t bytes, const std::string& field, const std::string& what);
// "asks for WHAT, which needs about N GiB, more than the M GiB this process may use (...): choose a
// smaller size", or "" when `bytes` fit: the words of require_memory for an input named otherwise than
// by a field (nsv/input_limits.hpp).
std::string memory_refusal(std::uint64_t bytes, const std::string& what);

}  // namespace nsv
