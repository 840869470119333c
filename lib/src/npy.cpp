#include "nsv/npy.hpp"

#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>

namespace nsv {
namespace {

[[noreturn]] void fail(const std::string& path, const std::string& why) {
  throw std::runtime_error(path + ": " + why);
}

std::string header_value(const std::string& header, const std::string& key) {
  const std::regex re("['\"]" + key + "['\"]\\s*:\\s*(\\([^)]*\\)|'[^']*'|\"[^\"]*\"|True|False)");
  std::smatch m;
  if (!std::regex_search(header, m, re)) return {};
  return m[1];
}

std::vector<long> parse_shape(const std::string& path, const std::string& text) {
  std::vector<long> shape;
  std::string inner = text.substr(1, text.size() - 2);
  std::stringstream ss(inner);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.find_first_not_of(" ") == std::string::npos) continue;
    char* end = nullptr;
    const long v = std::strtol(item.c_str(), &end, 10);
    if (end == item.c_str() || v < 0) fail(path, "malformed shape " + text);
    shape.push_back(v);
  }
  return shape;
}

}  // namespace

NpyArray read_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, "cannot open file");
  char magic[8];
  if (!in.read(magic, 8) || std::memcmp(magic, "\x93NUMPY", 6) != 0)
    fail(path, "not a .npy file (missing \\x93NUMPY magic)");
  const int major = static_cast<unsigned char>(magic[6]);
  std::uint32_t header_len = 0;
  if (major == 1) {
    unsigned char b[2];
    if (!in.read(reinterpret_cast<char*>(b), 2)) fail(path, "truncated header");
    header_len = b[0] | (b[1] << 8);
  } else if (major == 2 || major == 3) {
    unsigned char b[4];
    if (!in.read(reinterpret_cast<char*>(b), 4)) fail(path, "truncated header");
    header_len = b[0] | (b[1] << 8) | (b[2] << 16) | (static_cast<std::uint32_t>(b[3]) << 24);
  } else {
    fail(path, "unsupported .npy format version " + std::to_string(major));
  }
  if (header_len > (1u << 20)) fail(path, "implausible header length");
  std::string header(header_len, '\0');
  if (!in.read(header.data(), header_len)) fail(path, "truncated header");

  const std::string descr = header_value(header, "descr");
  const std::string order = header_value(header, "fortran_order");
  const std::string shape_text = header_value(header, "shape");
  if (descr.empty() || order.empty() || shape_text.empty())
    fail(path, "malformed header (needs descr, fortran_order and shape): " + header);
  NpyArray a;
  const std::string type = descr.substr(1, descr.size() - 2);
  if (type == "<f4" || type == "=f4") a.float64 = false;
  else if (type == "<f8" || type == "=f8") a.float64 = true;
  else fail(path, "element type " + type + " is not supported: save the array as float32 or float64 (little-endian)");
  if (order == "True")
    fail(path, "Fortran-order arrays are not supported: save with np.ascontiguousarray(a)");
  a.shape = parse_shape(path, shape_text);
  if (a.shape.size() != 2 && a.shape.size() != 3)
    fail(path, "expected a 2-D matrix or a 3-D batch of matrices, got " + std::to_string(a.shape.size()) + " dimensions");
  std::size_t count = 1;
  for (long d : a.shape) {
    if (d == 0) fail(path, "an empty dimension (shape " + shape_text + ") holds no matrix");
    if (count > (std::size_t{1} << 34) / static_cast<std::size_t>(d)) fail(path, "array too large");
    count *= static_cast<std::size_t>(d);
  }
  const std::size_t width = a.float64 ? 8 : 4;
  std::vector<char> raw(count * width);
  if (!in.read(raw.data(), static_cast<std::streamsize>(raw.size())))
    fail(path, "truncated data: expected " + std::to_string(count) + " elements");
  if (in.peek() != std::char_traits<char>::eof()) fail(path, "trailing bytes after the data");
  a.values.resize(count);
  for (std::size_t i = 0; i < count; ++i) {
    if (a.float64) {
      double v;
      std::memcpy(&v, raw.data() + i * 8, 8);
      a.values[i] = v;
    } else {
      float v;
      std::memcpy(&v, raw.data() + i * 4, 4);
      a.values[i] = v;
    }
  }
  return a;
}

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

void write_file_atomically(const std::string& path, const std::string& contents) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  const fs::path tmp = target.parent_path() / ("." + target.filename().string() + ".nsv-tmp");
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error(path + ": cannot write (does the folder exist and is it writable?)");
    out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
    out.flush();
    if (!out) {
      std::error_code ec;
      fs::remove(tmp, ec);
      throw std::runtime_error(path + ": write failed (disk full?)");
    }
  }
  std::error_code ec;
  fs::rename(tmp, target, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw std::runtime_error(path + ": cannot replace the file: " + ec.message());
  }
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
