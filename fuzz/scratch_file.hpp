#pragma once
// The fuzzers feed the parsers through a real file, as users do: the input is written to one
// scratch file per process (in $TMPDIR), overwritten for every input, so the harnesses exercise
// the same InputFile path (stat, open, size checks) that the command line uses.
#include <cstddef>
#include <cstdint>
#include <string>

namespace nsv::fuzz {

// Writes the bytes to this process's scratch file named `name` and returns its path.
std::string write_scratch(const std::string& name, const std::uint8_t* data, std::size_t size);

}  // namespace nsv::fuzz
