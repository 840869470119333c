#pragma once
// DIR/grads.json, the description tools/make_grads.py writes beside a gradient folder: the model's
// dimensions (which fix the shapes of the seven Muon matrices read from the folder) and the
// initializer's standard deviation. Parsed strictly: every field present must be a number in its
// range, or the file is refused with the field and the value.
#include <optional>
#include <string>

#include "nsv/model.hpp"

namespace nsv::engine {

struct GradsDescription {
  ModelDims dims;
  std::optional<double> initializer_range;
};

// text: the file's contents; source: its path (for messages); defaults: the dimensions of fields
// the file leaves out. Throws std::invalid_argument "<source>: <field> ...".
GradsDescription parse_grads_description(const std::string& text, const std::string& source, const ModelDims& defaults);

}  // namespace nsv::engine
