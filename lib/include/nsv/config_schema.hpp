#pragma once
// The configuration schema: the names a user types for every enum of a configuration (on the
// command line, as Python keywords, in CSV and JSON columns) and NsConfig's defaults, in one
// place. Every front end reads it: the CLI's choices and help, the Python keywords' defaults and
// choices (_nsverify.config_schema()), the sweep's CSV codec.
//
// One table per enum (NameTable: the field it configures and its named values, in the order
// they are listed), defined next to the enum's other records; one generic mechanism reads them
// all: parse_named (text -> value, throwing InvalidField naming the field and the choices),
// name_of (value -> its first name), choices_of / choices_text (the listed names).
#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "nsv/invalid_field.hpp"
#include "nsv/kernels.hpp"
#include "nsv/mesh.hpp"
#include "nsv/model.hpp"
#include "nsv/strategy.hpp"

namespace nsv {

template <class E>
struct NamedValue {
  E value{};
  std::string_view name;
  std::string_view note = {};  // what the choice means, for help texts: "cpu | cuda-tf32 (TF32 GEMMs)"
  bool listed = true;          // false: an alias accepted but not offered (dtype float32 = fp32)
};

template <class E>
struct NameTable {
  std::string_view field;  // the configuration field it sets (InvalidField::field)
  std::span<const NamedValue<E>> values;
};

// The backends a user chooses by name (make_backend; it also takes cuda's combined options,
// cuda-tf32-batched, cuda-loop).
enum class BackendChoice { cpu, cuda, cuda_tf32, cuda_batched };
inline constexpr BackendChoice kDefaultBackend = BackendChoice::cpu;

// The tables (found by name_table(std::type_identity<E>) from the generic functions below).
const NameTable<Kernel>& name_table(std::type_identity<Kernel>);
const NameTable<Products>& name_table(std::type_identity<Products>);
const NameTable<DType>& name_table(std::type_identity<DType>);
const NameTable<Accumulate>& name_table(std::type_identity<Accumulate>);
const NameTable<Strategy>& name_table(std::type_identity<Strategy>);
const NameTable<Target>& name_table(std::type_identity<Target>);
const NameTable<ReductionOrder>& name_table(std::type_identity<ReductionOrder>);
const NameTable<FusedKind>& name_table(std::type_identity<FusedKind>);  // the option's spelling: none, qkv:glm, gate_up
const NameTable<BackendChoice>& name_table(std::type_identity<BackendChoice>);
const NameTable<DpPartition>& name_table(std::type_identity<DpPartition>);  // mesh.cpp

template <class E>
const NameTable<E>& names_of() {
  return name_table(std::type_identity<E>{});
}

namespace detail {
[[noreturn]] void refuse_name(std::string_view field, std::string_view text, const std::vector<std::string>& choices);
[[noreturn]] void unnamed_value(std::string_view field);
}  // namespace detail

// The listed names, in table order (CLI::IsMember, argparse choices).
template <class E>
std::vector<std::string> choices_of() {
  std::vector<std::string> out;
  for (const auto& n : names_of<E>().values)
    if (n.listed) out.emplace_back(n.name);
  return out;
}

// The listed names joined by `separator`, each followed by " (note)" when `with_notes` and it has one.
template <class E>
std::string choices_text(std::string_view separator, bool with_notes = false) {
  std::string out;
  for (const auto& n : names_of<E>().values) {
    if (!n.listed) continue;
    if (!out.empty()) out += separator;
    out += n.name;
    if (with_notes && !n.note.empty()) out += " (" + std::string(n.note) + ")";
  }
  return out;
}

// The value named `text` (any of its names, aliases included). Throws InvalidField(field, "must
// be one of a, b, c; got 'x'"), `field` defaulting to the table's.
template <class E>
E parse_named(std::string_view text, std::string_view field = {}) {
  const NameTable<E>& t = names_of<E>();
  for (const auto& n : t.values)
    if (n.name == text) return n.value;
  detail::refuse_name(field.empty() ? t.field : field, text, choices_of<E>());
}

// A value's name (its first entry).
template <class E>
std::string_view name_of(E value) {
  const NameTable<E>& t = names_of<E>();
  for (const auto& n : t.values)
    if (n.value == value) return n.name;
  detail::unnamed_value(t.field);
}

// An NsConfig as the names a user types: the fields of `nsv ns`'s flags and of the Python
// keywords. ns_config_names() holds NsConfig{}'s values, the defaults of every front end.
struct NsConfigNames {
  std::string kernel;
  int steps = 0;
  std::string dtype, accumulate, products;
  std::string coeffs;      // a built-in schedule or a file of 'a b c' lines (resolve_schedule)
  std::string restart_at;  // a restart list as text (restarts_text)
};
NsConfigNames ns_config_names(const NsConfig& = NsConfig{});
// Parses every field (InvalidField naming it for an unknown name), resolves the schedule and
// validates the whole (NsConfig::validate).
NsConfig ns_config_from_names(const NsConfigNames&);

// A matrix shape as a user types it: "512x1024" -> {512, 1024}, each side 1..kMaxShapeSide
// (nsv/input_limits.hpp); throws std::invalid_argument saying the expected form.
std::pair<std::int64_t, std::int64_t> parse_shape(std::string_view);

// The schema as data for front ends that cannot read the tables (Python): per field its default
// (null when the library has none) and its choices (empty: free text; coeffs also takes a file).
struct FieldSchema {
  std::string field;
  nlohmann::json default_value;
  std::vector<std::string> choices;
};
std::vector<FieldSchema> config_schema();

}  // namespace nsv
