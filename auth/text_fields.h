// The field encoding of sluice's small text files in the data directory (DATA_DIR/acls,
// DATA_DIR/quotas): one record a line, fields separated by one space, each field
// percent-encoded ('%', space and control bytes as %XX) so that any name fits in one field.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::auth {

/// `s` with '%', bytes up to and including space, and DEL written as %XX.
std::string encode_field(std::string_view s);
/// The inverse of encode_field; nullopt when a '%' is not followed by two hex digits.
std::optional<std::string> decode_field(std::string_view s);
/// `s` split at every single space (empty fields kept).
std::vector<std::string_view> split_spaces(std::string_view s);

}  // namespace sluice::auth
