#pragma once
// .npy read/write (format versions 1.0-3.0), little-endian, C order, 2-D or 3-D: float32 and
// float64 read and written, float16 read (compact fixtures: fixtures/training). Anything else is
// refused with a message that says what was found and what to do.
#include <functional>
#include <string>
#include <vector>

#include "nsv/dtype.hpp"
#include "nsv/matrix.hpp"
#include "nsv/output_file.hpp"

namespace nsv {

struct NpyArray {
  std::vector<long> shape;        // 2 or 3 dimensions
  DType dtype = DType::fp32;      // element type on disk: fp16, fp32 or fp64
  std::vector<double> values;     // C order

  MatD matrix() const;            // a 2-D array; throws for 3-D
  Batch batch() const;            // a 3-D array as independent matrices; a 2-D one as a batch of one
};

// Throws std::runtime_error naming the file. check_shape (when given) sees the header's shape,
// once it is consistent with the file's size and before any data is allocated or read: it throws
// to refuse a shape its caller does not expect.
NpyArray read_npy(const std::string& path, const std::function<void(const std::vector<long>&)>& check_shape = {});
// The header alone, checked as read_npy checks it: shape and dtype, no values.
NpyArray read_npy_header(const std::string& path);

// Written through nsv::write_file_atomically (nsv/output_file.hpp, included for the callers that
// write other files): a failed run never leaves a user's file half-written or overwritten.
void write_npy(const std::string& path, const MatD& m, bool float64);
void write_npy(const std::string& path, const Batch& b, bool float64);

}  // namespace nsv
