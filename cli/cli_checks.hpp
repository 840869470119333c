#pragma once
// Validators of numeric options. CLI11 prints "--flag: <message>"; each message says the allowed
// range and the value given, so a refusal says what to fix. NaN and infinities are refused by
// every real-valued option (CLI11 would parse "nan" and let it through to the arithmetic).
#include <CLI/CLI.hpp>
#include <cstdint>

namespace nsv::cli {

// Upper limits of counts given on the command line: far above any real model (2^20 heads, a
// grain of 2^20) and small enough that products of a few of them cannot overflow 64 bits.
inline constexpr std::int64_t kMaxCount = std::int64_t{1} << 20;
// Seeds are used as 64-bit generator seeds; 2^53 keeps them exact in JSON and CSV readers.
inline constexpr std::int64_t kMaxSeed = std::int64_t{1} << 53;
// nsv sweep --seeds N: N seeds per combination of the lists (each a full set of cases).
inline constexpr std::int64_t kMaxSweepSeeds = 100000;

// An integer in [lo, hi].
CLI::Validator integer_in(std::int64_t lo, std::int64_t hi);
// A finite real number in [lo, hi].
CLI::Validator finite_in(double lo, double hi);
// OpenMP threads: 1 .. kMaxThreads (OpenMP itself aborts on absurd counts).
inline constexpr int kMaxThreads = 1024;
CLI::Validator thread_count();
// --restart-at: steps between 0 and 1000, strictly increasing, separated by commas, or "none".
CLI::Validator restart_list();

}  // namespace nsv::cli
