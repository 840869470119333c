#pragma once
// The check records: one record per kind of check (a kernel, a TP function, their torch twins on
// real ranks, a whole optimizer) holding every setting a user gives it, each field with its name,
// type, default, range or choices and help text, in one place. Every front end reads them: the
// Python signatures' defaults and strict typing (nsverify/_records.py), `nsv check`'s flags
// (nsverify/cli.py builds them from the record), and the core, which validates a settings dict
// against the record again (settings_of) before it builds RunSettings, TpScope and NsConfig from it.
// A new option of every check is then one field here and the code that uses it.
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kernel_catalogue.hpp"
#include "nsv/config_schema.hpp"
#include "property_run.hpp"
#include "tp_catalogue.hpp"
#include "tp_cases.hpp"

namespace nsv::checks {

// The names a user types for a claim and a promise (the NameTable mechanism of every enum).
const NameTable<TpClaim>& name_table(std::type_identity<TpClaim>);
const NameTable<KernelPromise>& name_table(std::type_identity<KernelPromise>);

enum class CheckKind { kernel, tp, torch_kernel, torch_tp, optimizer };

enum class FieldType {
  integer,   // an int in [min, max]
  number,    // a real in [min, max]
  boolean,   // true or false, never a string or a number
  choice,    // one of `choices`
  text,      // free text (a path, a replay string)
  shape,     // (rows, cols), each side in [min, max]
  names,     // a property name or code, or a list of them
  callable,  // a Python callable, or one of `choices` where it has any (layout="plain" or a function)
};
std::string_view field_type_name(FieldType);

struct CheckField {
  std::string_view name;
  FieldType type;
  nlohmann::json default_value;  // null: the field's absence is its default (its help says what that means)
  bool nullable = false;         // None is a value the user may give (and means what the help says)
  double min = 0, max = 0;       // integer, number, shape: the inclusive range
  std::vector<std::string> choices;
  std::string_view help;
};

struct CheckRecord {
  CheckKind kind;
  std::string_view name;     // "kernel", "tp", "torch_kernel", "torch_tp", "optimizer"
  std::string_view summary;  // what the check runs, a line
  std::vector<CheckField> fields;

  const CheckField& field(std::string_view name) const;  // std::logic_error for a name it lacks
  // Every field of the record from `given` (an object of field -> value; absent fields take their
  // defaults): each value's type, range and choice checked, an unknown field refused. Throws
  // InvalidField naming the field, the allowed values and the value given. A callable field is
  // represented by the string "<callable>".
  nlohmann::json settings_of(const nlohmann::json& given) const;
};

std::span<const CheckRecord> check_records();
const CheckRecord& check_record(CheckKind);
const CheckRecord& check_record(std::string_view name);  // InvalidField("kind") for an unknown one

// The parts of validated settings that the catalogue's runners take.
RunSettings run_settings_of(const nlohmann::json& settings);
NsConfig ns_config_of(const nlohmann::json& settings);
TpScope tp_scope_of(const nlohmann::json& settings);

// RapidCheck's seed where the user gives none: fixed, so a check that passes in CI passes again.
inline constexpr std::uint64_t kDefaultSeed = 20261130;

}  // namespace nsv::checks
