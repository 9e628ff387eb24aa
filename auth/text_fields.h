// The field encoding and the reader of sluice's small text files in the data directory
// (DATA_DIR/acls, DATA_DIR/quotas, DATA_DIR/credentials): a magic line, then one record a line,
// fields separated by one space, each field percent-encoded ('%', space and control bytes as %XX)
// so that any name fits in one field.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <stdexcept>
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

/// What a record handler of read_record_file throws for a wrong line; the reader turns it into
/// a std::runtime_error "FILE:LINE: reason".
class bad_record : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// Reads one of these files: blank lines and '#' comments are skipped, the first other line
/// must be `magic` ("not a sluice WHAT file" otherwise), and `on_record` gets every line after
/// it. Returns false, without calling on_record, when the file does not exist. Throws
/// std::runtime_error naming the file (and the line, for a wrong one).
bool read_record_file(const std::filesystem::path& file, std::string_view magic,
                      std::string_view what,
                      const std::function<void(std::string_view line)>& on_record);

}  // namespace sluice::auth
