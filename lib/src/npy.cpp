#include "nsv/npy.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "float16_bits.hpp"
#include "nsv/input_file.hpp"
#include "nsv/input_limits.hpp"

namespace nsv {
namespace {

[[noreturn]] void fail(const std::string& path, const std::string& why) {
  throw std::runtime_error(path + ": " + why);
}

// Header length limits: version 1.0 stores it in 2 bytes (at most 65,535); 2.0 and 3.0 in 4,
// where we accept at most 1 MiB (numpy writes a few hundred bytes; its own reader refuses more
// than 10,000 unless told otherwise).
constexpr std::uint32_t kMaxHeaderBytes = std::uint32_t{1} << 20;

std::string npy_type_name(DType d) { return d == DType::fp64 ? "float64" : d == DType::fp16 ? "float16" : "float32"; }

// values.size() elements of type T from the file, each converted to double, in chunks (no
// second copy of a large array).
template <typename T, typename Convert>
void read_converted(InputFile& in, const std::string& path, std::vector<double>& values, Convert convert) {
  std::vector<T> chunk(std::size_t{1} << 16);
  for (std::size_t done = 0; done < values.size();) {
    const std::size_t n = std::min<std::size_t>(chunk.size(), values.size() - done);
    if (in.read(chunk.data(), n * sizeof(T)) != n * sizeof(T)) fail(path, "truncated data (the file shrank while being read)");
    std::transform(chunk.begin(), chunk.begin() + static_cast<std::ptrdiff_t>(n), values.begin() + static_cast<std::ptrdiff_t>(done), convert);
    done += n;
  }
}

// What the header dictionary says, as text: {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
struct Header {
  std::string descr, fortran_order;
  std::vector<long> shape;
  bool has_descr = false, has_order = false, has_shape = false;
};

// A single-pass scanner of numpy's header: a Python dict literal whose keys are exactly descr,
// fortran_order and shape, whose values are a string, True/False and a tuple of non-negative
// decimal integers. No recursion, no backtracking: each byte is looked at once, so a header of
// any length allowed above costs linear time and constant stack. Anything numpy's
// ast.literal_eval-based reader would refuse (or that we do not support) is refused, with the
// position and what was expected.
class HeaderScanner {
 public:
  HeaderScanner(const std::string& path, const std::string& text) : path_(path), s_(text) {}

  Header scan() {
    Header h;
    skip_space();
    expect('{', "the header dictionary to start with '{'");
    for (;;) {
      skip_space();
      if (peek() == '}') break;
      const std::string key = quoted("a quoted key");
      skip_space();
      expect(':', "':' after the key '" + key + "'");
      skip_space();
      if (key == "descr") {
        if (h.has_descr) bad("the key 'descr' appears twice");
        if (peek() != '\'' && peek() != '"')
          bad("descr must be a string such as '<f4' (structured dtypes are not supported: save a float32 or float64 array)");
        h.descr = quoted("the descr string");
        h.has_descr = true;
      } else if (key == "fortran_order") {
        if (h.has_order) bad("the key 'fortran_order' appears twice");
        h.fortran_order = word();
        if (h.fortran_order != "True" && h.fortran_order != "False") bad("fortran_order must be True or False");
        h.has_order = true;
      } else if (key == "shape") {
        if (h.has_shape) bad("the key 'shape' appears twice");
        h.shape = tuple();
        h.has_shape = true;
      } else {
        bad("unexpected key '" + key + "' (a .npy header holds exactly descr, fortran_order and shape)");
      }
      skip_space();
      if (peek() == ',') {
        ++i_;
        continue;
      }
      if (peek() != '}') bad("expected ',' or '}' after the value of '" + key + "'");
    }
    ++i_;  // '}'
    skip_space();
    if (i_ != s_.size()) bad("unexpected text after the header dictionary");
    if (!h.has_descr || !h.has_order || !h.has_shape) fail(path_, "malformed header (needs descr, fortran_order and shape): " + excerpt(0));
    return h;
  }

 private:
  char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  void skip_space() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
  }
  // Up to 60 bytes of the header from `from`, without the padding.
  std::string excerpt(std::size_t from) const {
    std::string e = s_.substr(from, 60);
    const bool cut = e.size() < s_.size() - from && s_.find_first_not_of(" \t\r\n", from + e.size()) != std::string::npos;
    e.erase(e.find_last_not_of(" \t\r\n") + 1);
    return cut ? e + "..." : e;
  }
  [[noreturn]] void bad(const std::string& why) const {
    fail(path_, "malformed header at byte " + std::to_string(i_) + ": " + why + "; the header reads: " + excerpt(i_ > 20 ? i_ - 20 : 0));
  }
  void expect(char c, const std::string& what) {
    if (peek() != c) bad("expected " + what);
    ++i_;
  }
  std::string quoted(const std::string& what) {
    const char q = peek();
    if (q != '\'' && q != '"') bad("expected " + what);
    const std::size_t begin = ++i_;
    while (i_ < s_.size() && s_[i_] != q) {
      if (s_[i_] == '\\' || s_[i_] == '\n') bad("escapes and line breaks are not allowed in " + what);
      ++i_;
    }
    if (i_ == s_.size()) bad("unterminated string");
    return s_.substr(begin, i_++ - begin);
  }
  std::string word() {
    const std::size_t begin = i_;
    while (i_ < s_.size() && std::isalpha(static_cast<unsigned char>(s_[i_]))) ++i_;
    return s_.substr(begin, i_ - begin);
  }
  // A Python tuple of ints: (), (n,), (n, m), (n, m,) ... Each a non-negative decimal integer
  // without leading zeros (as Python spells them) that fits in a long.
  std::vector<long> tuple() {
    std::vector<long> dims;
    expect('(', "the shape to be a tuple such as (2, 3)");
    skip_space();
    while (peek() != ')') {
      dims.push_back(integer());
      skip_space();
      if (peek() == ',') {
        ++i_;
        skip_space();
      } else if (peek() != ')') {
        bad("expected ',' or ')' after a dimension of the shape (dimensions are plain integers)");
      }
    }
    ++i_;  // ')'
    return dims;
  }
  long integer() {
    const std::size_t begin = i_;
    if (!std::isdigit(static_cast<unsigned char>(peek()))) bad("expected a non-negative integer dimension");
    if (peek() == '0' && i_ + 1 < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_ + 1])))
      bad("a dimension has a leading zero");
    unsigned long long v = 0;
    constexpr auto kMax = static_cast<unsigned long long>(std::numeric_limits<long>::max());
    while (std::isdigit(static_cast<unsigned char>(peek()))) {
      const unsigned digit = static_cast<unsigned>(s_[i_] - '0');
      if (v > (kMax - digit) / 10) {
        std::size_t end = i_;
        while (std::isdigit(static_cast<unsigned char>(end < s_.size() ? s_[end] : 'x'))) ++end;
        bad("the dimension " + s_.substr(begin, std::min<std::size_t>(end - begin, 40)) + " is out of range (at most " +
            std::to_string(kMax) + ")");
      }
      v = v * 10 + digit;
      ++i_;
    }
    return static_cast<long>(v);
  }

  const std::string& path_;
  const std::string& s_;
  std::size_t i_ = 0;
};

std::string shape_text(const std::vector<long>& shape) {
  std::string t = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) t += (i ? ", " : "") + std::to_string(shape[i]);
  return t + (shape.size() == 1 ? ",)" : ")");
}

NpyArray read_npy_file(const std::string& path, const std::function<void(const std::vector<long>&)>& check_shape, bool header_only) {
  InputFile in(path, ".npy file");
  char magic[8];
  if (in.read(magic, 8) != 8 || std::memcmp(magic, "\x93NUMPY", 6) != 0)
    fail(path, "not a .npy file (missing \\x93NUMPY magic)");
  const int major = static_cast<unsigned char>(magic[6]);
  std::uint32_t header_len = 0;
  std::uint64_t prefix = 8;
  if (major == 1) {
    unsigned char b[2];
    if (in.read(b, 2) != 2) fail(path, "truncated header");
    header_len = b[0] | (b[1] << 8);
    prefix += 2;
  } else if (major == 2 || major == 3) {
    unsigned char b[4];
    if (in.read(b, 4) != 4) fail(path, "truncated header");
    header_len = b[0] | (b[1] << 8) | (b[2] << 16) | (static_cast<std::uint32_t>(b[3]) << 24);
    prefix += 4;
  } else {
    fail(path, "unsupported .npy format version " + std::to_string(major));
  }
  if (header_len > kMaxHeaderBytes)
    fail(path, "the header claims " + std::to_string(header_len) + " bytes, more than the " + std::to_string(kMaxHeaderBytes) +
                   " accepted (numpy writes a few hundred): the file is damaged or not written by numpy");
  if (prefix + header_len > in.size())
    fail(path, "truncated header: it claims " + std::to_string(header_len) + " bytes, the file holds " +
                   std::to_string(in.size() - std::min<std::uint64_t>(in.size(), prefix)) + " after the length field");
  std::string header(header_len, '\0');
  if (in.read(header.data(), header_len) != header_len) fail(path, "truncated header");

  const Header h = HeaderScanner(path, header).scan();
  NpyArray a;
  const std::string& type = h.descr;
  if (type == "<f4" || type == "=f4") a.dtype = DType::fp32;
  else if (type == "<f8" || type == "=f8") a.dtype = DType::fp64;
  else if (type == "<f2" || type == "=f2") a.dtype = DType::fp16;
  else fail(path, "element type " + type + " is not supported: save the array as float32 or float64 (float16 is read too), little-endian");
  if (h.fortran_order == "True")
    fail(path, "Fortran-order arrays are not supported: save with np.ascontiguousarray(a)");
  a.shape = h.shape;
  if (a.shape.size() != 2 && a.shape.size() != 3)
    fail(path, "expected a 2-D matrix or a 3-D batch of matrices, got " + std::to_string(a.shape.size()) + " dimensions");
  // The size the shape claims, checked against the bytes the file holds before anything is
  // allocated: a header is never trusted for an allocation.
  const auto width = static_cast<std::uint64_t>(bytes_per_element(a.dtype));
  const std::uint64_t data_bytes = in.size() - prefix - header_len;
  if (const std::string why = emptiness(InputShape::of(a.shape)); !why.empty()) fail(path, why);
  std::uint64_t count = 1;
  for (long d : a.shape) {
    const auto ud = static_cast<std::uint64_t>(d);
    if (count > std::numeric_limits<std::uint64_t>::max() / width / ud)
      fail(path, "the shape " + shape_text(a.shape) + " is too large: its size overflows 64 bits (the file holds " +
                     std::to_string(data_bytes) + " bytes of data)");
    count *= ud;
  }
  if (count * width > data_bytes)
    fail(path, "truncated data: the shape " + shape_text(a.shape) + " of " + npy_type_name(a.dtype) + " needs " +
                   std::to_string(count * width) + " bytes, the file holds " + std::to_string(data_bytes) + " after the header");
  if (count * width < data_bytes)
    fail(path, "trailing bytes after the data: the shape " + shape_text(a.shape) + " needs " + std::to_string(count * width) +
                   " bytes, the file holds " + std::to_string(data_bytes) + " after the header");
  if (check_shape) check_shape(a.shape);  // the caller's expectations, before the data is allocated
  if (header_only) return a;
  a.values.resize(count);
  if (a.dtype == DType::fp64) {
    if (in.read(a.values.data(), count * 8) != count * 8) fail(path, "truncated data (the file shrank while being read)");
  } else if (a.dtype == DType::fp32) {
    read_converted<float>(in, path, a.values, [](float v) { return double(v); });
  } else {
    read_converted<std::uint16_t>(in, path, a.values, from_fp16_bits);
  }
  char extra;
  if (in.read(&extra, 1) != 0) fail(path, "trailing bytes after the data (the file grew while being read)");
  return a;
}

}  // namespace

NpyArray read_npy(const std::string& path, const std::function<void(const std::vector<long>&)>& check_shape) {
  return read_npy_file(path, check_shape, false);
}

NpyArray read_npy_header(const std::string& path) { return read_npy_file(path, {}, true); }

MatD NpyArray::matrix() const {
  if (shape.size() != 2)
    throw std::runtime_error("expected a 2-D matrix, got a 3-D batch (use a command that takes batches)");
  return Eigen::Map<const MatD>(values.data(), shape[0], shape[1]);
}

Batch NpyArray::batch() const {
  if (shape.size() == 2) return {matrix()};
  Batch b;
  const long per = shape[1] * shape[2];
  for (long i = 0; i < shape[0]; ++i) b.push_back(Eigen::Map<const MatD>(values.data() + i * per, shape[1], shape[2]));
  return b;
}

namespace {

std::string encode(const std::vector<long>& shape, const double* data, std::size_t count, bool float64) {
  std::string dims;
  for (std::size_t i = 0; i < shape.size(); ++i) dims += (i ? ", " : "") + std::to_string(shape[i]);
  std::string header = std::string("{'descr': '") + (float64 ? "<f8" : "<f4") +
                       "', 'fortran_order': False, 'shape': (" + dims + "), }";
  const std::size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header.push_back('\n');
  std::string out("\x93NUMPY\x01\x00", 8);
  out.push_back(static_cast<char>(header.size() & 0xff));
  out.push_back(static_cast<char>(header.size() >> 8));
  out += header;
  for (std::size_t i = 0; i < count; ++i) {
    if (float64) {
      out.append(reinterpret_cast<const char*>(&data[i]), 8);
    } else {
      const float f = static_cast<float>(data[i]);
      out.append(reinterpret_cast<const char*>(&f), 4);
    }
  }
  return out;
}

}  // namespace

void write_npy(const std::string& path, const MatD& m, bool float64) {
  write_file_atomically(path, encode({static_cast<long>(m.rows()), static_cast<long>(m.cols())}, m.data(),
                                     static_cast<std::size_t>(m.size()), float64));
}

void write_npy(const std::string& path, const Batch& b, bool float64) {
  if (b.empty()) throw std::runtime_error(path + ": nothing to write");
  std::vector<double> all;
  for (const auto& m : b) {
    if (m.rows() != b[0].rows() || m.cols() != b[0].cols()) throw std::runtime_error(path + ": batch matrices differ in shape");
    all.insert(all.end(), m.data(), m.data() + m.size());
  }
  write_file_atomically(path, encode({static_cast<long>(b.size()), static_cast<long>(b[0].rows()), static_cast<long>(b[0].cols())},
                                     all.data(), all.size(), float64));
}

}  // namespace nsv
