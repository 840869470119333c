#include "nsv/safetensors.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>

#include "float16_bits.hpp"
#include "nsv/input_file.hpp"
#include "nsv/npy.hpp"

namespace nsv {
namespace {

// A std::map-backed JSON (O(log n) per key: nlohmann::ordered_json finds each key by a linear
// scan, quadratic in the tensor count). The header's own key order, which tensors at one offset
// (empty ones) keep, is recorded by parse_header.
using json = nlohmann::json;

struct Header {
  json object;
  std::vector<std::string> names;  // the top-level keys, in the header's order
};

[[noreturn]] void fail(const std::string& source, const std::string& why) { throw std::runtime_error(source + ": " + why); }
[[noreturn]] void fail_tensor(const std::string& source, const std::string& name, const std::string& why) {
  fail(source, "tensor '" + name + "': " + why);
}

constexpr std::string_view kMetadataKey = "__metadata__";

struct DTypeName {
  DType dtype;
  std::string_view name;
};
constexpr DTypeName kDTypes[] = {{DType::fp64, "F64"}, {DType::fp32, "F32"}, {DType::bf16, "BF16"}, {DType::fp16, "F16"}};
// The format's other dtypes: named in the message as known but not read.
constexpr std::string_view kOtherKnownDTypes[] = {"I64", "I32", "I16", "I8", "U64", "U32", "U16", "U8",
                                                  "BOOL", "F8_E4M3", "F8_E5M2", "F8_E8M0", "F6_E2M3", "F6_E3M2", "F4", "C64"};

DType parse_dtype_field(const std::string& source, const std::string& name, const json& v) {
  if (!v.is_string()) fail_tensor(source, name, "\"dtype\" must be a string such as \"F32\", got " + v.dump());
  const auto& s = v.get_ref<const std::string&>();
  for (const auto& d : kDTypes)
    if (d.name == s) return d.dtype;
  const bool known = std::find(std::begin(kOtherKnownDTypes), std::end(kOtherKnownDTypes), s) != std::end(kOtherKnownDTypes);
  fail_tensor(source, name, (known ? "dtype " + s + " is not supported" : "unknown dtype \"" + s.substr(0, 40) + "\"") +
                                ": nsverify reads F64, F32, BF16 and F16 tensors (save gradients and updates as floats)");
}

std::uint64_t non_negative_integer(const std::string& source, const std::string& name, const char* field, const json& v) {
  if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<std::int64_t>() >= 0))
    fail_tensor(source, name, std::string("every entry of \"") + field + "\" must be a non-negative integer, got " + v.dump());
  return v.get<std::uint64_t>();
}

// Names are keys of the header: the JSON parser has checked they are UTF-8. Control characters
// would garble every message and file name they appear in.
void check_name(const std::string& source, const std::string& name) {
  if (name.empty()) fail(source, "a tensor has an empty name");
  for (unsigned char c : name)
    if (c < 0x20 || c == 0x7f) {
      std::string shown;
      for (unsigned char k : name) shown += (k < 0x20 || k == 0x7f) ? '?' : static_cast<char>(k);
      fail_tensor(source, shown, "the name holds a control character (byte " + std::to_string(c) + ")");
    }
}

// The header as a JSON object, refusing duplicate keys at any depth and nesting deeper than the
// format uses (header object > entry object > shape/offsets array), which also bounds the memory
// a hostile header can make the parser build. A SAX handler around nlohmann's own DOM builder:
// linear in the header's size (nlohmann's callback parser rescans the enclosing object for a
// discarded value at the end of every entry, quadratic in the tensor count).
class HeaderBuilder {
 public:
  using number_integer_t = json::number_integer_t;
  using number_unsigned_t = json::number_unsigned_t;
  using number_float_t = json::number_float_t;
  using string_t = json::string_t;
  using binary_t = json::binary_t;

  HeaderBuilder(const std::string& source, Header& out) : source_(source), out_(out), dom_(out.object, true) {}

  bool null() { return dom_.null(); }
  bool boolean(bool v) { return dom_.boolean(v); }
  bool number_integer(number_integer_t v) { return dom_.number_integer(v); }
  bool number_unsigned(number_unsigned_t v) { return dom_.number_unsigned(v); }
  bool number_float(number_float_t v, const string_t& s) { return dom_.number_float(v, s); }
  bool string(string_t& v) { return dom_.string(v); }
  bool binary(binary_t& v) { return dom_.binary(v); }
  bool start_object(std::size_t n) {
    open();
    keys_of_open_objects_.emplace_back();
    return dom_.start_object(n);
  }
  bool end_object() {
    keys_of_open_objects_.pop_back();
    --open_containers_;
    return dom_.end_object();
  }
  bool start_array(std::size_t n) {
    open();
    return dom_.start_array(n);
  }
  bool end_array() {
    --open_containers_;
    return dom_.end_array();
  }
  bool key(string_t& key) {
    if (!keys_of_open_objects_.back().insert(key).second)
      fail(source_, "the header holds the key '" + key.substr(0, 200) + "' twice" +
                        (keys_of_open_objects_.size() == 1 ? " (two tensors with one name)" : " (in one entry)"));
    if (keys_of_open_objects_.size() == 1) out_.names.push_back(key);
    return dom_.key(key);
  }
  template <class Exception>
  bool parse_error(std::size_t at, const std::string& token, const Exception& e) {
    return dom_.parse_error(at, token, e);  // throws e
  }

 private:
  void open() {
    if (++open_containers_ > 3)
      fail(source_, "the header nests objects or arrays deeper than a safetensors header does (object > tensor > shape)");
  }

  const std::string& source_;
  Header& out_;
  nlohmann::detail::json_sax_dom_parser<json> dom_;
  std::vector<std::set<std::string>> keys_of_open_objects_;
  int open_containers_ = 0;
};

Header parse_header(const std::string& source, std::string_view text) {
  Header out;
  HeaderBuilder builder(source, out);
  try {
    json::sax_parse(text.begin(), text.end(), &builder, nlohmann::detail::input_format_t::json, true);
    return out;
  } catch (const json::parse_error& e) {
    fail(source, std::string("the header is not valid JSON (names must be UTF-8): ") + e.what());
  } catch (const json::exception& e) {  // valid JSON nlohmann cannot hold, e.g. a number past double's range
    fail(source, std::string("the header holds a value that cannot be read: ") + e.what());
  }
}

struct Entry {
  Tensor tensor;
  std::uint64_t begin = 0, end = 0;
};

Entry parse_entry(const std::string& source, const std::string& name, const json& v) {
  check_name(source, name);
  if (!v.is_object()) fail_tensor(source, name, "its entry must be an object with dtype, shape and data_offsets, got " + v.dump().substr(0, 80));
  for (const auto& [key, value] : v.items())
    if (key != "dtype" && key != "shape" && key != "data_offsets")
      fail_tensor(source, name, "unexpected field \"" + key.substr(0, 80) + "\" (an entry holds exactly dtype, shape and data_offsets)");
  for (const char* field : {"dtype", "shape", "data_offsets"})
    if (!v.contains(field)) fail_tensor(source, name, std::string("the entry has no \"") + field + "\"");
  Entry e;
  e.tensor.name = name;
  e.tensor.dtype = parse_dtype_field(source, name, v["dtype"]);
  const json& shape = v["shape"];
  if (!shape.is_array()) fail_tensor(source, name, "\"shape\" must be an array of integers, got " + shape.dump().substr(0, 80));
  std::uint64_t bytes = static_cast<std::uint64_t>(bytes_per_element(e.tensor.dtype));
  for (const json& d : shape) {
    const std::uint64_t n = non_negative_integer(source, name, "shape", d);
    if (n > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) || (n != 0 && bytes > std::numeric_limits<std::uint64_t>::max() / n))
      fail_tensor(source, name, "the shape " + shape.dump() + " is too large: its byte count overflows 64 bits");
    bytes *= n;
    e.tensor.shape.push_back(static_cast<std::int64_t>(n));
  }
  const json& off = v["data_offsets"];
  if (!off.is_array() || off.size() != 2) fail_tensor(source, name, "\"data_offsets\" must be [begin, end], got " + off.dump().substr(0, 80));
  e.begin = non_negative_integer(source, name, "data_offsets", off[0]);
  e.end = non_negative_integer(source, name, "data_offsets", off[1]);
  if (e.end < e.begin) fail_tensor(source, name, "data_offsets " + off.dump() + " end before they begin");
  if (e.end - e.begin != bytes)
    fail_tensor(source, name, "the shape " + shape.dump() + " of " + std::string(safetensors_dtype_name(e.tensor.dtype)) + " needs " +
                                  std::to_string(bytes) + " bytes, data_offsets " + off.dump() + " hold " + std::to_string(e.end - e.begin));
  return e;
}

std::map<std::string, std::string> parse_metadata(const std::string& source, const json& v) {
  if (!v.is_object()) fail(source, "\"__metadata__\" must be an object of strings, got " + v.dump().substr(0, 80));
  std::map<std::string, std::string> m;
  for (const auto& [key, value] : v.items()) {
    if (!value.is_string()) fail(source, "\"__metadata__\" entry '" + key.substr(0, 80) + "' must be a string, got " + value.dump().substr(0, 80));
    m.emplace(key, value.get<std::string>());
  }
  return m;
}

// Tensors in offset order must tile [0, buffer) exactly: the format's rule against overlapping
// tensors and against bytes that belong to no tensor (polyglot files).
void check_coverage(const std::string& source, std::vector<Entry>& entries, std::uint64_t buffer) {
  std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  std::uint64_t covered = 0;
  const Entry* previous = nullptr;
  for (const Entry& e : entries) {
    const std::string where = "data_offsets [" + std::to_string(e.begin) + ", " + std::to_string(e.end) + "]";
    if (e.end > buffer)
      fail_tensor(source, e.tensor.name, where + " reach past the end of the data (" + std::to_string(buffer) + " bytes after the header)");
    if (e.begin < covered)
      fail_tensor(source, e.tensor.name, where + " overlap tensor '" + previous->tensor.name + "' (which ends at " + std::to_string(covered) + ")");
    if (e.begin > covered)
      fail_tensor(source, e.tensor.name, where + " leave bytes " + std::to_string(covered) + ".." + std::to_string(e.begin) +
                                             " of the data to no tensor");
    covered = e.end;
    previous = &e;
  }
  if (covered != buffer)
    fail(source, std::to_string(buffer - covered) + " trailing bytes after the last tensor's data (the data holds " + std::to_string(buffer) +
                     " bytes, the tensors " + std::to_string(covered) + ")");
}

void convert(Tensor& t, const char* data) {
  const auto n = static_cast<std::size_t>(t.elements());
  t.values.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    switch (t.dtype) {
      case DType::fp64: {
        double v;
        std::memcpy(&v, data + 8 * i, 8);
        t.values[i] = v;
        break;
      }
      case DType::fp32: {
        float v;
        std::memcpy(&v, data + 4 * i, 4);
        t.values[i] = v;
        break;
      }
      case DType::bf16:
      case DType::fp16: {
        std::uint16_t bits;
        std::memcpy(&bits, data + 2 * i, 2);
        t.values[i] = t.dtype == DType::bf16 ? double(std::bit_cast<float>(std::uint32_t{bits} << 16)) : from_fp16_bits(bits);
        break;
      }
    }
  }
}

}  // namespace

std::int64_t Tensor::elements() const {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

MatD Tensor::matrix() const {
  if (shape.size() != 2) {
    std::string dims;
    for (auto d : shape) dims += (dims.empty() ? "" : ", ") + std::to_string(d);
    throw std::runtime_error("tensor '" + name + "' has shape [" + dims + "], expected a 2-D matrix [out, in]");
  }
  return Eigen::Map<const MatD>(values.data(), shape[0], shape[1]);
}

const Tensor* SafetensorsFile::find(std::string_view name) const {
  for (const auto& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

std::string_view safetensors_dtype_name(DType d) {
  for (const auto& k : kDTypes)
    if (k.dtype == d) return k.name;
  return "?";
}

namespace {

// The 8-byte header length, checked against the format's limit and the file's size.
std::uint64_t header_length(std::string_view first8, std::uint64_t file_size, const std::string& source) {
  if (file_size < 8 || first8.size() < 8)
    fail(source, "not a safetensors file: " + std::to_string(file_size) + " bytes, fewer than the 8 of the header length");
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(first8[static_cast<std::size_t>(i)]);
  if (n > kMaxSafetensorsHeaderBytes)
    fail(source, "the header length field says " + std::to_string(n) + " bytes, more than the format's limit of " +
                     std::to_string(kMaxSafetensorsHeaderBytes) + ": the file is damaged or not a safetensors file");
  if (n > file_size - 8)
    fail(source, "the header length field says " + std::to_string(n) + " bytes, the file holds " + std::to_string(file_size - 8) +
                     " after it: the file is truncated or not a safetensors file");
  return n;
}

// The index of a file of file_size bytes from its header text (the n bytes after the length).
SafetensorsIndex index_of(std::string_view text, std::uint64_t file_size, const std::string& source) {
  if (text.empty() || text.front() != '{') fail(source, "the header does not start with '{': not a safetensors file");
  const Header header = parse_header(source, text);
  if (!header.object.is_object()) fail(source, "the header is not a JSON object");
  SafetensorsIndex index;
  index.source = source;
  index.data_begin = 8 + text.size();
  std::vector<Entry> entries;
  for (const std::string& name : header.names) {
    const json& value = header.object.at(name);
    if (name == kMetadataKey) index.metadata = parse_metadata(source, value);
    else entries.push_back(parse_entry(source, name, value));
  }
  check_coverage(source, entries, file_size - index.data_begin);
  for (Entry& e : entries)
    index.entries.push_back({std::move(e.tensor.name), e.tensor.dtype, std::move(e.tensor.shape), e.begin, e.end});
  return index;
}

Tensor tensor_of(const SafetensorsEntry& e, const char* data) {
  Tensor t{e.name, e.dtype, e.shape, {}};
  convert(t, data);
  return t;
}

}  // namespace

SafetensorsFile parse_safetensors(std::string_view bytes, const std::string& source) {
  const std::uint64_t n = header_length(bytes.substr(0, 8), bytes.size(), source);
  const SafetensorsIndex index = index_of(bytes.substr(8, n), bytes.size(), source);
  SafetensorsFile file{source, {}, index.metadata};
  const std::string_view data = bytes.substr(index.data_begin);
  for (const SafetensorsEntry& e : index.entries) file.tensors.push_back(tensor_of(e, data.data() + e.begin));
  return file;
}

SafetensorsReader::SafetensorsReader(const std::string& path) : in_(std::make_unique<InputFile>(path, "safetensors file")) {
  char first8[8];
  const std::size_t got = in_->read(first8, 8);
  const std::uint64_t n = header_length(std::string_view(first8, got), in_->size(), path);
  std::string text(static_cast<std::size_t>(n), '\0');  // n <= 100 MB and within the file (checked)
  in_->read_at(8, text.data(), text.size());
  index_ = index_of(text, in_->size(), path);
}

SafetensorsReader::~SafetensorsReader() = default;

Tensor SafetensorsReader::read(const SafetensorsEntry& e) const {
  std::string bytes(static_cast<std::size_t>(e.end - e.begin), '\0');
  in_->read_at(index_.data_begin + e.begin, bytes.data(), bytes.size());
  return tensor_of(e, bytes.data());
}

SafetensorsFile read_safetensors(const std::string& path, std::uint64_t max_bytes) {
  const SafetensorsReader reader(path);
  if (reader.file_size() > max_bytes)
    fail(path, "the safetensors file is larger than " + std::to_string(max_bytes) + " bytes, more than such a file can hold");
  SafetensorsFile file{path, {}, reader.index().metadata};
  for (const SafetensorsEntry& e : reader.index().entries) file.tensors.push_back(reader.read(e));
  return file;
}

std::string encode_safetensors(const std::vector<Tensor>& tensors, const std::map<std::string, std::string>& metadata) {
  // The header's text is written entry by entry (linear: ordered_json's operator[] scans its keys).
  std::string text = "{";
  if (!metadata.empty()) text += json(std::string(kMetadataKey)).dump() + ":" + json(metadata).dump();
  std::string data;
  std::set<std::string> names;
  for (const Tensor& t : tensors) {
    if (t.name.empty() || t.name == kMetadataKey || !names.insert(t.name).second)
      throw std::invalid_argument("safetensors: tensor name '" + t.name + "' is empty, reserved or repeated");
    if (t.elements() != static_cast<std::int64_t>(t.values.size()))
      throw std::invalid_argument("safetensors: tensor '" + t.name + "' holds " + std::to_string(t.values.size()) +
                                  " values, its shape " + std::to_string(t.elements()));
    const std::size_t begin = data.size();
    for (double v : t.values) {
      if (t.dtype == DType::fp64) {
        data.append(reinterpret_cast<const char*>(&v), 8);
      } else if (t.dtype == DType::fp32) {
        const auto f = static_cast<float>(v);
        data.append(reinterpret_cast<const char*>(&f), 4);
      } else {
        const float r = round_to(t.dtype, static_cast<float>(v));
        const std::uint16_t bits = t.dtype == DType::bf16 ? static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(r) >> 16)
                                                          : Eigen::numext::bit_cast<std::uint16_t>(Eigen::half(r));
        data.append(reinterpret_cast<const char*>(&bits), 2);
      }
    }
    text += std::string(text.size() > 1 ? "," : "") + json(t.name).dump() + ":{\"dtype\":\"" +
            std::string(safetensors_dtype_name(t.dtype)) + "\",\"shape\":" + json(t.shape).dump() + ",\"data_offsets\":[" +
            std::to_string(begin) + "," + std::to_string(data.size()) + "]}";
  }
  text += "}";
  text.append((8 - text.size() % 8) % 8, ' ');  // the reference writer aligns the data to 8 bytes
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[static_cast<std::size_t>(i)] = static_cast<char>((text.size() >> (8 * i)) & 0xff);
  return out + text + data;
}

void write_safetensors(const std::string& path, const std::vector<Tensor>& tensors, const std::map<std::string, std::string>& metadata) {
  write_file_atomically(path, encode_safetensors(tensors, metadata));
}

}  // namespace nsv
