#pragma once
// .safetensors read/write (the Hugging Face format, https://huggingface.co/docs/safetensors):
//
//   8 bytes   N, the header length, unsigned little-endian
//   N bytes   a JSON object (UTF-8): tensor name -> {"dtype", "shape", "data_offsets": [begin, end]},
//             and optionally "__metadata__": {string: string}; may be padded with spaces
//   the rest  the byte buffer; each tensor's bytes are buffer[begin, end), little-endian, C order
//
// Reading is strict, as the format's own validator is, and a little stricter: the header length
// must be at most 100,000,000 bytes and fit in the file (checked before anything is allocated);
// the header must be one JSON object with no duplicate key at any depth (nlohmann's parser would
// silently keep the last one); names must be valid UTF-8 (the JSON parser checks), non-empty and
// free of control characters; each entry holds exactly dtype, shape and data_offsets; dtype is
// F64, F32, BF16 or F16; every dimension and offset is a non-negative JSON integer; the byte count
// of dtype x shape (products checked for overflow) equals end - begin; the tensors, taken in
// offset order, cover the buffer exactly: no tensor starts past the end, none overlaps another,
// there is no gap and no trailing byte. Every error is a std::runtime_error that names the
// source and, where one is concerned, the tensor.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "nsv/dtype.hpp"
#include "nsv/input_file.hpp"
#include "nsv/matrix.hpp"

namespace nsv {

struct Tensor {
  std::string name;
  DType dtype = DType::fp32;        // on disk: fp64 F64, fp32 F32, bf16 BF16, fp16 F16
  std::vector<std::int64_t> shape;  // empty: a scalar
  std::vector<double> values;       // C order, converted exactly (every such value is a double)

  std::int64_t elements() const;
  MatD matrix() const;              // a 2-D tensor; throws std::runtime_error naming it otherwise
};

struct SafetensorsFile {
  std::string source;                              // the path, or what the bytes came from
  std::vector<Tensor> tensors;                     // in the order of their data offsets (ties: header order)
  std::map<std::string, std::string> metadata;     // "__metadata__"

  const Tensor* find(std::string_view name) const;  // nullptr when absent
};

// "F64", "F32", "BF16", "F16".
std::string_view safetensors_dtype_name(DType);

inline constexpr std::uint64_t kMaxSafetensorsHeaderBytes = 100'000'000;  // the format's own limit

// The whole format, from bytes in memory (the fuzz harness's entry point): nothing is read
// outside `bytes`. `source` names it in messages.
SafetensorsFile parse_safetensors(std::string_view bytes, const std::string& source);
// A regular file of at most max_bytes, read through nsv::SafetensorsReader.
SafetensorsFile read_safetensors(const std::string& path, std::uint64_t max_bytes = std::uint64_t{4} << 30);

// One tensor's header entry: what the file says of it before its data is read.
struct SafetensorsEntry {
  std::string name;
  DType dtype = DType::fp32;
  std::vector<std::int64_t> shape;
  std::uint64_t begin = 0, end = 0;  // its bytes: [begin, end) of the data, which starts at data_begin
};

// The header, checked as above (lengths, offsets tiling the data against the file's size) with
// no tensor's data read: every entry in offset order.
struct SafetensorsIndex {
  std::string source;
  std::vector<SafetensorsEntry> entries;
  std::map<std::string, std::string> metadata;
  std::uint64_t data_begin = 0;  // 8 + the header length
};

// A file opened through nsv::InputFile (a regular file, a run input) whose header alone is read
// (at most 100 MB); each tensor's data is read on request, so that a caller checks the shapes it
// expects before any data is allocated.
class SafetensorsReader {
 public:
  explicit SafetensorsReader(const std::string& path);
  ~SafetensorsReader();
  const SafetensorsIndex& index() const { return index_; }
  std::uint64_t file_size() const { return in_->size(); }
  Tensor read(const SafetensorsEntry&) const;  // the tensor's values, read now

 private:
  std::unique_ptr<InputFile> in_;
  SafetensorsIndex index_;
};

// The file's bytes: header keys in the tensors' order, data laid out in that order, each value
// rounded to the tensor's dtype (to nearest, ties to even). Throws std::invalid_argument for a
// tensor whose values do not match its shape or a name that is empty or repeated.
std::string encode_safetensors(const std::vector<Tensor>& tensors, const std::map<std::string, std::string>& metadata = {});
// Written atomically (nsv::write_file_atomically).
void write_safetensors(const std::string& path, const std::vector<Tensor>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace nsv
