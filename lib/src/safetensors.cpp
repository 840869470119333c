#include "nsv/safetensors.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>

#include "float16_bits.hpp"
#include "nsv/input_file.hpp"
#include "nsv/npy.hpp"

namespace nsv {
namespace {

// Ordered: the header's own key order, so that tensors at one offset (empty ones) keep it.
using json = nlohmann::ordered_json;

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
// a hostile header can make the parser build.
json parse_header(const std::string& source, std::string_view text) {
  std::vector<std::set<std::string>> keys_of_open_objects;
  int open_containers = 0;
  const json::parser_callback_t check = [&](int, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        if (++open_containers > 3)
          fail(source, "the header nests objects or arrays deeper than a safetensors header does (object > tensor > shape)");
        if (event == json::parse_event_t::object_start) keys_of_open_objects.emplace_back();
        break;
      case json::parse_event_t::object_end:
        keys_of_open_objects.pop_back();
        --open_containers;
        break;
      case json::parse_event_t::array_end:
        --open_containers;
        break;
      case json::parse_event_t::key: {
        const auto& key = parsed.get_ref<const std::string&>();
        if (!keys_of_open_objects.back().insert(key).second)
          fail(source, "the header holds the key '" + key.substr(0, 200) + "' twice" +
                           (keys_of_open_objects.size() == 1 ? " (two tensors with one name)" : " (in one entry)"));
        break;
      }
      case json::parse_event_t::value:
        break;
    }
    return true;
  };
  try {
    return json::parse(text.begin(), text.end(), check);
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

SafetensorsFile parse_safetensors(std::string_view bytes, const std::string& source) {
  if (bytes.size() < 8) fail(source, "not a safetensors file: " + std::to_string(bytes.size()) + " bytes, fewer than the 8 of the header length");
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(bytes[static_cast<std::size_t>(i)]);
  if (n > kMaxSafetensorsHeaderBytes)
    fail(source, "the header length field says " + std::to_string(n) + " bytes, more than the format's limit of " +
                     std::to_string(kMaxSafetensorsHeaderBytes) + ": the file is damaged or not a safetensors file");
  if (n > bytes.size() - 8)
    fail(source, "the header length field says " + std::to_string(n) + " bytes, the file holds " + std::to_string(bytes.size() - 8) +
                     " after it: the file is truncated or not a safetensors file");
  const std::string_view text = bytes.substr(8, n);
  if (text.empty() || text.front() != '{') fail(source, "the header does not start with '{': not a safetensors file");
  const json header = parse_header(source, text);
  if (!header.is_object()) fail(source, "the header is not a JSON object");

  SafetensorsFile file;
  file.source = source;
  std::vector<Entry> entries;
  for (const auto& [name, value] : header.items()) {
    if (name == kMetadataKey) file.metadata = parse_metadata(source, value);
    else entries.push_back(parse_entry(source, name, value));
  }
  const std::string_view data = bytes.substr(8 + n);
  check_coverage(source, entries, data.size());
  for (Entry& e : entries) {
    convert(e.tensor, data.data() + e.begin);
    file.tensors.push_back(std::move(e.tensor));
  }
  return file;
}

SafetensorsFile read_safetensors(const std::string& path, std::uint64_t max_bytes) {
  const std::string bytes = read_input_file(path, "safetensors file", max_bytes);
  return parse_safetensors(bytes, path);
}

std::string encode_safetensors(const std::vector<Tensor>& tensors, const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header[std::string(kMetadataKey)] = metadata;
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
    header[t.name] = {{"dtype", safetensors_dtype_name(t.dtype)}, {"shape", t.shape}, {"data_offsets", {begin, data.size()}}};
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // the reference writer aligns the data to 8 bytes
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[static_cast<std::size_t>(i)] = static_cast<char>((text.size() >> (8 * i)) & 0xff);
  return out + text + data;
}

void write_safetensors(const std::string& path, const std::vector<Tensor>& tensors, const std::map<std::string, std::string>& metadata) {
  write_file_atomically(path, encode_safetensors(tensors, metadata));
}

}  // namespace nsv
