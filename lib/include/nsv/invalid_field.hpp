#pragma once
// A configuration value out of range, named as the library's structs name it (`tp`, `steps`,
// `latency_us`). The library knows no command line: a front end maps the field to its own
// spelling (`--tp`, a Python keyword) and prints the requirement unchanged.
#include <stdexcept>
#include <string>

namespace nsv {

class InvalidField : public std::invalid_argument {
 public:
  // requirement: what the value must be and what it was, e.g. "must be between 1 and 1024, got 0".
  InvalidField(std::string field, std::string requirement)
      : std::invalid_argument(field + " " + requirement), field_(std::move(field)), requirement_(std::move(requirement)) {}

  const std::string& field() const { return field_; }
  const std::string& requirement() const { return requirement_; }

 private:
  std::string field_, requirement_;
};

}  // namespace nsv
