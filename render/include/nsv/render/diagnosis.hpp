#pragma once
// The words and tables of `nsv diagnose` (and of the report's diagnosis section): JSON (schema
// nsv.diagnose/1), markdown and plain text, from the library's Diagnosis.
#include <nlohmann/json.hpp>
#include <string>

#include "nsv/analysis/diagnose.hpp"

namespace nsv {

// What a run's verdict says in one phrase: the matching semantics' label ("per-shard NS,
// local-shape scale"), "unexplained (closest: ...)", or "not classified: ...".
std::string verdict_words(const RunVerdict&);

// "warning: the weights before the step differ ..." with the count and the largest rel. diff, when
// some matrix's dumped weights differ between the runs; empty when none does.
std::string weights_warning(const Diagnosis&);

// nsv.diagnose/1: {schema, model, tp, muon{...}, ns{...}, bounds{match, invariance: derivation},
// params[{name, rows, cols, split_axis, shard_widths, first_step, grad{...}|null, weight{...}|null, update{rel_diff,
// cosine, norm_ratio, max_abs_diff, bit_identical}, reference{...}, candidate{match, label,
// verdict, also_within[], not_classified, delta_rounding, fits[{semantics, label, rel_diff,
// own_error, bound, within, same_bits_as[]}]}, tp_invariant, invariance_bound,
// input_difference}], not_dumped[], skipped[]}.
nlohmann::json diagnosis_json(const Diagnosis&);
std::string diagnosis_markdown(const Diagnosis&);
std::string diagnosis_text(const Diagnosis&);

}  // namespace nsv
