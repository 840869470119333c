// The foundation every saved array and fixture stands on: .npy reading and writing.
#include <sys/stat.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "check.hpp"
#include "foundation/float_values.hpp"
#include "generators/floats.hpp"
#include "generators/tiers.hpp"
#include "nsv/npy.hpp"

namespace nsv::checks {
namespace {

namespace fs = std::filesystem;

// A folder of this process's own for the files the tests write; removed at exit.
fs::path scratch_dir() {
  static const fs::path dir = fs::temp_directory_path() / ("nsv_foundation_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir;
}

struct ScratchCleanup {
  ~ScratchCleanup() {
    std::error_code ec;
    fs::remove_all(fs::temp_directory_path() / ("nsv_foundation_" + std::to_string(::getpid())), ec);
  }
} const scratch_cleanup;

// A .npy file from its parts, for malformed inputs.
std::string npy_bytes(const std::string& header_dict, const std::string& data, int version = 1) {
  std::string header = header_dict;
  const std::size_t prefix = version == 1 ? 10 : 12;
  header.append((64 - (prefix + header.size() + 1) % 64) % 64, ' ');
  header.push_back('\n');
  std::string out("\x93NUMPY", 6);
  out.push_back(static_cast<char>(version));
  out.push_back('\0');
  if (version == 1) {
    out.push_back(static_cast<char>(header.size() & 0xff));
    out.push_back(static_cast<char>(header.size() >> 8));
  } else {
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((header.size() >> (8 * i)) & 0xff));
  }
  return out + header + data;
}

std::string float_data(std::size_t count) { return std::string(count * 4, '\0'); }

fs::path write_raw(const std::string& name, const std::string& bytes) {
  const fs::path p = scratch_dir() / name;
  std::ofstream(p, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return p;
}

// read_npy must throw std::runtime_error naming the file and saying what is wrong.
void expect_refused(const fs::path& p, const std::string& phrase) {
  try {
    read_npy(p.string());
    BOOST_ERROR(p.filename() << " was accepted; expected an error mentioning '" << phrase << "'");
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    BOOST_TEST_MESSAGE(p.filename() << ": " << what);
    BOOST_CHECK_MESSAGE(what.find(p.string()) != std::string::npos, "message does not name the file: " << what);
    BOOST_CHECK_MESSAGE(what.find(phrase) != std::string::npos, "message lacks '" << phrase << "': " << what);
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(foundation)

BOOST_AUTO_TEST_SUITE(npy_io)

// [exact] float64 files keep every double; float32 files keep every float32 value; both 2-D and
// 3-D, NaN, infinities and subnormals included.
NSV_PROPERTY(npy_round_trip_keeps_every_bit, ()) {
  const bool float64 = *rc::gen::arbitrary<bool>();
  const bool three_d = *rc::gen::arbitrary<bool>();
  const auto rows = *rc::gen::inRange<Eigen::Index>(1, 9), cols = *rc::gen::inRange<Eigen::Index>(1, 9);
  const auto count = three_d ? *rc::gen::inRange(1, 5) : 1;
  FloatKnobs<double> knobs;
  knobs.allow_nan = knobs.allow_inf = knobs.allow_subnormal = true;
  Batch batch;
  for (int b = 0; b < count; ++b) {
    MatD m(rows, cols);
    for (Eigen::Index i = 0; i < m.size(); ++i) {
      const double v = *floats<double>(knobs);
      m.data()[i] = float64 ? v : static_cast<double>(static_cast<float>(v));
    }
    batch.push_back(m);
  }
  const std::string path = (scratch_dir() / "round_trip.npy").string();
  if (three_d) write_npy(path, batch, float64);
  else write_npy(path, batch[0], float64);
  const NpyArray back = read_npy(path);
  RC_ASSERT(back.dtype == (float64 ? DType::fp64 : DType::fp32));
  RC_ASSERT(back.shape.size() == (three_d ? 3u : 2u));
  const Batch got = back.batch();
  RC_ASSERT(got.size() == batch.size());
  for (std::size_t b = 0; b < batch.size(); ++b) {
    RC_ASSERT(got[b].rows() == rows && got[b].cols() == cols);
    for (Eigen::Index i = 0; i < rows * cols; ++i)
      RC_ASSERT(same_bits_or_both_nan(got[b].data()[i], batch[b].data()[i]));
  }
}

BOOST_AUTO_TEST_CASE(malformed_files_are_refused_with_a_reason) {
  const std::string ok2 = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  expect_refused(write_raw("not_npy.npy", "hello, this is text"), "not a .npy file");
  expect_refused(write_raw("empty.npy", ""), "not a .npy file");
  expect_refused(write_raw("truncated_header.npy", npy_bytes(ok2, float_data(6)).substr(0, 30)), "truncated header");
  expect_refused(write_raw("truncated_data.npy", npy_bytes(ok2, float_data(5))), "truncated data");
  expect_refused(write_raw("trailing.npy", npy_bytes(ok2, float_data(6) + "x")), "trailing bytes");
  expect_refused(write_raw("fortran.npy", npy_bytes("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", float_data(6))),
                 "Fortran-order");
  expect_refused(write_raw("int32.npy", npy_bytes("{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3), }", float_data(6))),
                 "not supported");
  expect_refused(write_raw("big_endian.npy", npy_bytes("{'descr': '>f4', 'fortran_order': False, 'shape': (2, 3), }", float_data(6))),
                 "not supported");
  expect_refused(write_raw("half_big_endian.npy", npy_bytes("{'descr': '>f2', 'fortran_order': False, 'shape': (2, 3), }", float_data(3))),
                 "not supported");
  expect_refused(write_raw("half_truncated.npy", npy_bytes("{'descr': '<f2', 'fortran_order': False, 'shape': (2, 3), }", float_data(2))),
                 "truncated data");
  expect_refused(write_raw("one_d.npy", npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (6,), }", float_data(6))),
                 "2-D");
  expect_refused(write_raw("four_d.npy", npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 2, 3), }", float_data(6))),
                 "2-D");
  expect_refused(write_raw("empty_dim.npy", npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (0, 3), }", "")), "empty");
  expect_refused(write_raw("no_shape.npy", npy_bytes("{'descr': '<f4', 'fortran_order': False, }", float_data(6))), "malformed header");
  expect_refused(write_raw("version9.npy", npy_bytes(ok2, float_data(6), 9)), "version");
  expect_refused(scratch_dir() / "does_not_exist.npy", "cannot open");
  // version 2.0 (4-byte header length) is read like 1.0
  const NpyArray v2 = read_npy(write_raw("version2.npy", npy_bytes(ok2, float_data(6), 2)).string());
  BOOST_CHECK_EQUAL(v2.shape.size(), 2u);
}

// The value IEEE 754 binary16 defines for a bit pattern, from the definition (not from the reader
// or Eigen): (-1)^s 2^(e-15) (1 + f/1024) for 1 <= e <= 30, (-1)^s 2^-14 f/1024 for e = 0, +-inf
// (e = 31, f = 0) and NaN (e = 31, f != 0).
double binary16_value(std::uint16_t bits) {
  const int e = (bits >> 10) & 0x1f, f = bits & 0x3ff;
  const double sign = (bits & 0x8000) ? -1.0 : 1.0;
  if (e == 31) return f == 0 ? sign * std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
  return e == 0 ? sign * std::ldexp(f / 1024.0, -14) : sign * std::ldexp(1.0 + f / 1024.0, e - 15);
}

// [exact] A float16 .npy (descr '<f2', the compact fixtures of fixtures/training) reads as the
// values its bits define, for all 65,536 patterns (subnormals, +-0, +-inf, NaN). Negative control:
// the same 16 bits taken as bfloat16 (the other 2-byte float) differ from that value for most
// patterns, so the comparison can tell a wrong decoding apart.
BOOST_AUTO_TEST_CASE(float16_files_read_as_the_values_their_bits_define) {
  std::string data;
  for (std::uint32_t b = 0; b < 65536; ++b) {
    data.push_back(static_cast<char>(b & 0xff));
    data.push_back(static_cast<char>(b >> 8));
  }
  const NpyArray a = read_npy(write_raw("all_halves.npy", npy_bytes("{'descr': '<f2', 'fortran_order': False, 'shape': (256, 256), }", data)).string());
  BOOST_REQUIRE(a.dtype == DType::fp16);
  BOOST_REQUIRE_EQUAL(a.values.size(), 65536u);
  int wrong = 0, bf16_differs = 0;
  for (std::uint32_t b = 0; b < 65536; ++b) {
    const double want = binary16_value(static_cast<std::uint16_t>(b)), got = a.values[b];
    if (!(std::isnan(want) ? std::isnan(got) : std::bit_cast<std::uint64_t>(got) == std::bit_cast<std::uint64_t>(want))) ++wrong;
    const double as_bf16 = std::bit_cast<float>(b << 16);
    if (!(std::isnan(want) && std::isnan(as_bf16)) && as_bf16 != want) ++bf16_differs;
  }
  BOOST_CHECK_EQUAL(wrong, 0);
  BOOST_CHECK_GT(bf16_differs, 60000);
}

// The header is scanned strictly, as numpy reads it, in one pass (no recursion, no backtracking),
// and the size its shape claims is compared with the file before anything is allocated.
BOOST_AUTO_TEST_CASE(headers_are_scanned_strictly_and_sizes_checked_first) {
  const auto with_shape = [](const std::string& shape) {
    return "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }";
  };
  // Legal headers padded to 26 KB and to 65,535 bytes (the 1.0 maximum) are read.
  for (const std::size_t pad : {std::size_t{26000}, std::size_t{65535 - 10 - 1 - with_shape("(2, 3)").size()}}) {
    const std::string big = with_shape("(2, 3)") + std::string(pad, ' ');
    const NpyArray a = read_npy(write_raw("big_header.npy", npy_bytes(big, float_data(6))).string());
    BOOST_CHECK_EQUAL(a.shape.size(), 2u);
  }
  BOOST_CHECK_EQUAL(read_npy(write_raw("trailing_comma.npy", npy_bytes(with_shape("(2, 3,)"), float_data(6))).string()).shape[1], 3);
  BOOST_CHECK_EQUAL(read_npy(write_raw("double_quotes.npy", npy_bytes("{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (2, 3)}",
                                                                           float_data(6))).string()).shape[0], 2);
  // A 2.0 header longer than 1 MiB; one that claims more bytes than the file holds.
  std::string oversized("\x93NUMPY\x02\x00", 8);
  oversized += std::string("\x00\x00\x20\x00", 4) + with_shape("(2, 3)");
  expect_refused(write_raw("oversized_header.npy", oversized), "accepted");
  std::string short_file("\x93NUMPY\x02\x00", 8);
  short_file += std::string("\x00\x00\x01\x00", 4) + with_shape("(2, 3)");
  expect_refused(write_raw("header_past_end.npy", short_file), "truncated header");
  // Shapes numpy refuses: garbage inside or after the tuple, out-of-range integers.
  for (const std::string bad : {"(1<<62, 2)", "(2, 3)x", "(2, 3", "(2; 3)", "(2, -3)", "(2, 3.0)", "(2,, 3)", "(02, 3)", "[2, 3]"})
    expect_refused(write_raw("bad_shape.npy", npy_bytes(with_shape(bad), float_data(6))), "malformed header");
  expect_refused(write_raw("garbage_after.npy", npy_bytes(with_shape("(2, 3)") + " junk", float_data(6))), "after the header dictionary");
  expect_refused(write_raw("extra_key.npy", npy_bytes(with_shape("(2, 3)").insert(1, "'extra': 1, "), float_data(6))), "unexpected key");
  expect_refused(write_raw("dim_out_of_range.npy", npy_bytes(with_shape("(99999999999999999999, 2)"), float_data(6))), "out of range");
  // Sizes: a product that overflows 64 bits, and a huge claim in a tiny file (refused before
  // allocating: 65536 x 65536 floats would be 16 GiB).
  expect_refused(write_raw("overflow.npy", npy_bytes(with_shape("(4611686018427387904, 4)"), float_data(6))), "too large");
  expect_refused(write_raw("huge_claim.npy", npy_bytes(with_shape("(65536, 65536)"), float_data(6))), "truncated data");
}

// A FIFO or a folder given as a .npy file is refused up front (a FIFO without blocking).
BOOST_AUTO_TEST_CASE(only_regular_files_are_read) {
  const fs::path fifo = scratch_dir() / "pipe.npy";
  BOOST_REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  expect_refused(fifo, "FIFO");
  fs::create_directories(scratch_dir() / "folder.npy");
  expect_refused(scratch_dir() / "folder.npy", "folder");
}

// write_npy never leaves a partial file: into a folder that does not exist it throws and creates
// nothing (no folder, no temporary), and a successful write leaves no temporary behind.
BOOST_AUTO_TEST_CASE(failed_writes_leave_nothing_behind) {
  const fs::path missing = scratch_dir() / "no_such_folder";
  const fs::path target = missing / "out.npy";
  BOOST_CHECK_THROW(write_npy(target.string(), MatD::Ones(2, 2), true), std::runtime_error);
  BOOST_CHECK(!fs::exists(missing));
  const fs::path good = scratch_dir() / "good.npy";
  write_npy(good.string(), MatD::Ones(2, 2), false);
  write_npy(good.string(), MatD::Zero(3, 2), false);  // replaces the file whole
  BOOST_CHECK_EQUAL(read_npy(good.string()).shape[0], 3);
  for (const auto& entry : fs::directory_iterator(scratch_dir()))
    BOOST_CHECK_MESSAGE(entry.path().filename().string().find("nsv-tmp") == std::string::npos,
                        "temporary left behind: " << entry.path());
  BOOST_CHECK_THROW(write_npy((scratch_dir() / "ragged.npy").string(), Batch{MatD::Ones(2, 2), MatD::Ones(3, 2)}, false),
                    std::runtime_error);
  BOOST_CHECK(!fs::exists(scratch_dir() / "ragged.npy"));
  // A target that cannot be replaced (a folder): the message carries the failing call's error,
  // not "Success", and the temporary is gone.
  const fs::path folder = scratch_dir() / "a_folder";
  fs::create_directories(folder);
  try {
    write_file_atomically(folder.string(), "contents");
    BOOST_ERROR("writing over a folder was accepted");
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    BOOST_CHECK_MESSAGE(what.find("Success") == std::string::npos && what.find("directory") != std::string::npos, what);
  }
  BOOST_CHECK(fs::is_directory(folder));
  BOOST_CHECK(!fs::exists(scratch_dir() / ".a_folder.nsv-tmp"));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()

}  // namespace nsv::checks
