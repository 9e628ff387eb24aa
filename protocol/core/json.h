// RapidJSON with the project's settings, for every module that reads or writes JSON (the SQS
// front's JSON protocol, queue attributes such as RedrivePolicy). Include this header, never
// <rapidjson/...> directly, so that the settings below hold everywhere.
//
// - std::string support is on.
// - A misuse of the API (reading a number as a string, ...) throws json_misuse instead of
//   asserting: input is checked before it is read, and a bug must not take the process down.
// - parse_json() parses iteratively (deeply nested input cannot exhaust the stack) and checks
//   that strings are valid UTF-8.
#pragma once

#include <stdexcept>
#include <string_view>

namespace sluice::protocol {
/// A RapidJSON call used against its contract (a bug of ours, not bad input).
class json_misuse : public std::logic_error {
public:
    using std::logic_error::logic_error;
};
}  // namespace sluice::protocol

#ifndef RAPIDJSON_HAS_STDSTRING
#define RAPIDJSON_HAS_STDSTRING 1
#endif
#ifndef RAPIDJSON_ASSERT
#define RAPIDJSON_ASSERT(x) \
    ((x) ? static_cast<void>(0) : throw ::sluice::protocol::json_misuse("rapidjson: " #x))
#endif

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wclass-memaccess"
#endif
#include <rapidjson/document.h>
#include <rapidjson/error/en.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

namespace sluice::protocol {

constexpr unsigned json_parse_flags =
    rapidjson::kParseIterativeFlag | rapidjson::kParseValidateEncodingFlag;

/// Parses `text` into `doc`; false (with doc.GetParseError()) when it is not one JSON value.
inline bool parse_json(rapidjson::Document& doc, std::string_view text) {
    doc.Parse<json_parse_flags>(text.data(), text.size());
    return !doc.HasParseError();
}

}  // namespace sluice::protocol
