// The safetensors reader and writer (lib/include/nsv/safetensors.hpp): a round trip keeps every
// name, dtype, shape, value bit and metadata entry; every malformation is refused with a message
// naming the source and, where one is concerned, the tensor; nothing is read beyond the bytes.
#include <unistd.h>

#include <Eigen/Core>
#include <boost/test/unit_test.hpp>
#include <cstdint>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <stdexcept>
#include <string>
#include <vector>

#include "check.hpp"
#include "generators/tensors.hpp"
#include "nsv/safetensors.hpp"

using namespace nsv;
using namespace nsv::checks;
using ojson = nlohmann::ordered_json;

namespace {

const std::string kSource = "gen.safetensors";

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

std::string hex(std::uint32_t bits) {
  char text[16];
  std::snprintf(text, sizeof text, "%x", bits);
  return text;
}

void assert_same_tensors(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  RC_ASSERT(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    RC_ASSERT(a[i].name == b[i].name);
    RC_ASSERT(a[i].dtype == b[i].dtype);
    RC_ASSERT(a[i].shape == b[i].shape);
    RC_ASSERT(a[i].values.size() == b[i].values.size());
    for (std::size_t k = 0; k < a[i].values.size(); ++k)
      if (!same_bits(a[i].values[k], b[i].values[k]))
        RC_FAIL("tensor '" + a[i].name + "' element " + std::to_string(k) + ": " + exact(a[i].values[k]) + " came back as " +
                exact(b[i].values[k]));
  }
}

// The message a refusal gives, or "" when the bytes were accepted. Any other exception type, or
// a crash, fails the property.
std::string refusal(const std::string& bytes) {
  try {
    parse_safetensors(bytes, kSource);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

void assert_refused(const std::string& bytes, const std::string& must_contain, const std::string& what) {
  const std::string message = refusal(bytes);
  RC_LOG() << what << ": " << message << "\n";
  if (message.empty()) RC_FAIL(what + ": accepted");
  RC_ASSERT(message.rfind(kSource + ": ", 0) == 0);
  if (message.find(must_contain) == std::string::npos) RC_FAIL(what + ": the message does not say '" + must_contain + "': " + message);
}

// A file from a header text and data, the length field set to the text's size.
std::string file_of(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[static_cast<std::size_t>(i)] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return out + header + data;
}

struct Split {
  ojson header;
  std::string data;
};
Split split_file(const std::string& bytes) {
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(bytes[static_cast<std::size_t>(i)]);
  return {ojson::parse(bytes.substr(8, n)), bytes.substr(8 + n)};
}

// One change to the first tensor's entry of a valid file, and what the refusal must say.
struct EntryMalformation {
  const char* what;
  const char* says;
  void (*apply)(ojson& entry);
};
const EntryMalformation kEntryMalformations[] = {
    {"unknown dtype", "unknown dtype", [](ojson& e) { e["dtype"] = "F99"; }},
    {"dtype the reader does not take", "not supported", [](ojson& e) { e["dtype"] = "I32"; }},
    {"dtype not a string", "\"dtype\" must be a string", [](ojson& e) { e["dtype"] = 32; }},
    {"shape not an array", "\"shape\" must be an array", [](ojson& e) { e["shape"] = "2x3"; }},
    {"negative dimension", "non-negative integer", [](ojson& e) { e["shape"].push_back(-1); }},
    {"fractional dimension", "non-negative integer", [](ojson& e) { e["shape"].push_back(2.5); }},
    {"shape and bytes disagree", "bytes, data_offsets", [](ojson& e) { e["shape"] = {7, 11}; }},
    {"overflowing shape", "overflows 64 bits", [](ojson& e) { e["shape"] = {1ULL << 40, 1ULL << 40}; }},
    {"offsets not a pair", "[begin, end]", [](ojson& e) { e["data_offsets"].push_back(0); }},
    {"offsets backwards", "end before they begin", [](ojson& e) { e["data_offsets"] = {8, 0}; }},
    {"missing shape", "no \"shape\"", [](ojson& e) { e.erase("shape"); }},
    {"unexpected field", "unexpected field", [](ojson& e) { e["stride"] = {1}; }},
    {"entry not an object", "must be an object", [](ojson& e) { e = ojson::array({1, 2}); }},
};

}  // namespace

BOOST_AUTO_TEST_SUITE(diagnose_safetensors)

BOOST_AUTO_TEST_SUITE(safetensors)

NSV_PROPERTY(a_round_trip_keeps_every_name_dtype_shape_value_bit_and_metadata_entry, ()) {
  const auto tensors = *tensor_sets();
  const auto metadata = *metadata_maps();
  const SafetensorsFile back = parse_safetensors(encode_safetensors(tensors, metadata), kSource);
  assert_same_tensors(tensors, back.tensors);
  RC_ASSERT(back.metadata == metadata);
}

NSV_PROPERTY(a_written_file_reads_back_the_same_through_the_file_reader, ()) {
  const auto tensors = *tensor_sets();
  const std::string path = (std::filesystem::temp_directory_path() / ("nsv-st-" + std::to_string(::getpid()) + ".safetensors")).string();
  write_safetensors(path, tensors);
  const SafetensorsFile back = read_safetensors(path);
  std::filesystem::remove(path);
  assert_same_tensors(tensors, back.tensors);
  RC_ASSERT(back.source == path);
}

// Negative control of the round trip's exactness check: a value that BF16 cannot hold comes back
// rounded, and the comparison sees it.
BOOST_AUTO_TEST_CASE(a_value_narrower_dtypes_cannot_hold_comes_back_rounded) {
  const Tensor t{"x", DType::bf16, {1}, {1.0 + 0x1p-12}};
  const SafetensorsFile back = parse_safetensors(encode_safetensors({t}), kSource);
  BOOST_TEST(back.tensors[0].values[0] == 1.0);
  BOOST_TEST(!same_bits(back.tensors[0].values[0], t.values[0]));
}

// The writer rounds to nearest, ties to even: float values, ties of the narrow dtypes among them,
// encoded as one tensor of each dtype and read back here from the data bytes by hand, against
// Eigen's bfloat16 and half conversions and the float itself (truncation, or ties away from zero,
// give other bits: the ties are drawn on both sides of an even neighbour).
NSV_PROPERTY(the_writer_rounds_to_nearest_even_bit_for_bit, ()) {
  const auto tie = rc::gen::map(rc::gen::tuple(rc::gen::inRange(0, 256), rc::gen::inRange(-20, 20), rc::gen::arbitrary<bool>(),
                                               rc::gen::element(8, 11)),
                                [](const std::tuple<int, int, bool, int>& t) {
                                  // (1 + k 2^-(p-1)) + half an ulp of p significand bits: a tie
                                  const auto [k, e, negative, p] = t;
                                  const double v = std::ldexp(1.0 + k * std::ldexp(1.0, 1 - p) + std::ldexp(1.0, -p), e);
                                  return static_cast<float>(negative ? -v : v);
                                });
  const auto values = *rc::gen::nonEmpty(rc::gen::container<std::vector<float>>(
      rc::gen::weightedOneOf<float>({{1, rc::gen::arbitrary<float>()}, {1, tie},
                                     {1, rc::gen::map(rc::gen::inRange(-1000000, 1000000), [](int i) { return i * 1.0e-4f; })}})));
  for (const DType dtype : {DType::bf16, DType::fp16, DType::fp32}) {
    std::vector<double> doubles(values.begin(), values.end());
    const Split file = split_file(encode_safetensors({Tensor{"x", dtype, {static_cast<std::int64_t>(values.size())}, doubles}}));
    const std::size_t width = dtype == DType::fp32 ? 4 : 2;
    RC_ASSERT(file.data.size() == width * values.size());
    for (std::size_t i = 0; i < values.size(); ++i) {
      std::uint32_t got = 0;
      for (std::size_t b = 0; b < width; ++b) got |= std::uint32_t{static_cast<unsigned char>(file.data[i * width + b])} << (8 * b);
      std::uint32_t want = 0;
      if (dtype == DType::bf16) want = Eigen::numext::bit_cast<std::uint16_t>(Eigen::bfloat16(values[i]));
      else if (dtype == DType::fp16) want = Eigen::numext::bit_cast<std::uint16_t>(Eigen::half(values[i]));
      else want = Eigen::numext::bit_cast<std::uint32_t>(values[i]);
      if (std::isnan(values[i])) continue;  // a NaN's payload is the writer's to choose
      if (got != want)
        RC_FAIL(std::string(dtype_name(dtype)) + " element " + std::to_string(i) + ": " + exact(values[i]) + " written as 0x" +
                hex(got) + ", round to nearest even gives 0x" + hex(want));
    }
  }
}

NSV_PROPERTY(every_truncation_of_a_valid_file_is_refused_naming_the_file, ()) {
  const std::string bytes = encode_safetensors(*tensor_sets());
  const auto keep = *rc::gen::inRange<std::size_t>(0, bytes.size());
  assert_refused(bytes.substr(0, keep), "", "truncated to " + std::to_string(keep) + " of " + std::to_string(bytes.size()) + " bytes");
}

NSV_PROPERTY(bytes_appended_to_a_valid_file_are_refused_as_trailing, ()) {
  const std::string bytes = encode_safetensors(*tensor_sets());
  const auto extra = *rc::gen::container<std::string>(*rc::gen::inRange<std::size_t>(1, 9), rc::gen::arbitrary<char>());
  assert_refused(bytes + extra, "trailing bytes", "with " + std::to_string(extra.size()) + " bytes appended");
}

NSV_PROPERTY(a_changed_byte_anywhere_is_read_or_refused_but_never_crashes, ()) {
  std::string bytes = encode_safetensors(*tensor_sets());
  const auto at = *rc::gen::inRange<std::size_t>(0, bytes.size());
  bytes[at] = *rc::gen::arbitrary<char>();
  try {
    parse_safetensors(bytes, kSource);
    RC_TAG("read");
  } catch (const std::runtime_error& e) {
    RC_TAG("refused");
    RC_ASSERT(std::string(e.what()).rfind(kSource + ": ", 0) == 0);
  }
}

NSV_PROPERTY(every_malformed_entry_is_refused_naming_the_tensor, ()) {
  const auto tensors = *tensor_sets();
  const std::string& name = tensors.front().name;
  for (const EntryMalformation& m : kEntryMalformations) {  // each of them, on every generated file
    Split s = split_file(encode_safetensors(tensors));
    m.apply(s.header[name]);
    const std::string bytes = file_of(s.header.dump(), s.data);
    assert_refused(bytes, m.says, m.what);
    assert_refused(bytes, "tensor '" + name + "'", m.what);
  }
}

NSV_PROPERTY(a_tensor_named_twice_is_refused_though_the_json_parser_keeps_the_last, ()) {
  const auto tensors = *tensor_sets();
  Split s = split_file(encode_safetensors(tensors));
  const std::string& name = tensors.front().name;
  std::string text = s.header.dump();
  text.insert(1, ojson(name).dump() + ":" + s.header[name].dump() + ",");
  assert_refused(file_of(text, s.data), "twice", "a duplicated tensor");
}

NSV_PROPERTY(offsets_that_overlap_leave_a_gap_or_reach_past_the_end_are_refused, ()) {
  const auto tensors = *tensor_sets();
  Split s = split_file(encode_safetensors(tensors));
  // Two F32 tensors of two elements appended after the generated ones.
  const std::uint64_t end = s.data.size();
  const auto how = *rc::gen::inRange(0, 3);
  const std::uint64_t b_begin = how == 0 ? end + 4 : how == 1 ? end + 12 : end + 8;
  s.header["ov#a"] = {{"dtype", "F32"}, {"shape", {2}}, {"data_offsets", {end, end + 8}}};
  s.header["ov#b"] = {{"dtype", "F32"}, {"shape", {2}}, {"data_offsets", {b_begin, b_begin + 8}}};
  const std::string data = s.data + std::string(how == 2 ? 12 : 20, '\0');
  const char* says[] = {"overlap tensor 'ov#a'", "to no tensor", "past the end"};
  RC_TAG(says[how]);
  assert_refused(file_of(s.header.dump(), data), says[how], says[how]);
}

// Malformations of the file as a whole, each built from a valid one-tensor file.
BOOST_AUTO_TEST_CASE(every_malformation_of_the_frame_is_refused_with_what_to_fix) {
  const std::string valid = encode_safetensors({Tensor{"w", DType::fp32, {2}, {1.0, 2.0}}});
  const Split s = split_file(valid);
  const std::string data = s.data;
  struct Case {
    std::string what, bytes, says;
  };
  std::string long_length = valid;
  long_length[0] = static_cast<char>(0xff);  // the length now exceeds the file
  std::string over_limit = file_of("{}", "");
  const std::uint64_t limit = kMaxSafetensorsHeaderBytes + 1;
  for (int i = 0; i < 8; ++i) over_limit[static_cast<std::size_t>(i)] = static_cast<char>((limit >> (8 * i)) & 0xff);
  const std::string w = R"("w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  const std::vector<Case> cases = {
      {"empty file", "", "fewer than the 8"},
      {"7 bytes", valid.substr(0, 7), "fewer than the 8"},
      {"length past the end", long_length, "truncated"},
      {"length over the limit", over_limit, "limit of 100000000"},
      {"header not an object", file_of("[1]     ", data), "does not start with '{'"},
      {"header not JSON", file_of("{\"w\":", data), "not valid JSON"},
      {"name not UTF-8", file_of("{\"\xff\":{}}", data), "not valid JSON"},
      {"lone surrogate", file_of(R"({"\ud800":{}})", data), "not valid JSON"},
      {"surrogate encoded in UTF-8", file_of("{\"\xed\xa0\x80\":{}}", data), "not valid JSON"},
      {"overlong UTF-8", file_of("{\"\xc0\xaf\":{}}", data), "not valid JSON"},
      {"truncated UTF-8", file_of("{\"\xe4\xb8\":{}}", data), "not valid JSON"},
      {"control character", file_of(R"({"a\u0001":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", data), "control character"},
      {"empty name", file_of(R"({"":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", data), "empty name"},
      {"duplicate field", file_of(R"({"w":{"dtype":"F32","dtype":"F16","shape":[2],"data_offsets":[0,8]}})", data), "in one entry"},
      {"too deep", file_of(R"({"w":{"dtype":"F32","shape":[[2]],"data_offsets":[0,8]}})", data), "deeper"},
      {"metadata not strings", file_of("{\"__metadata__\":{\"k\":1}," + w + "}", data), "must be a string"},
      {"metadata not an object", file_of("{\"__metadata__\":[]," + w + "}", data), "object of strings"},
      {"trailing text after the header", file_of("{" + w + "}x", data), "not valid JSON"},
  };
  for (const Case& c : cases) {
    const std::string message = refusal(c.bytes);
    BOOST_TEST_INFO(c.what << ": " << message);
    BOOST_TEST(!message.empty());
    BOOST_TEST(message.rfind(kSource + ": ", 0) == 0);
    BOOST_TEST(message.find(c.says) != std::string::npos);
  }
  BOOST_TEST(refusal(valid).empty());  // the control: the file they were made from is read
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()
