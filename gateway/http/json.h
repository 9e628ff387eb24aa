// JSON for the HTTP front (owned by gateway/http): reading request bodies and WebSocket
// messages, writing answers. RapidJSON underneath (chosen by measurement: docs/benchmarks.md,
// "Choosing the JSON library"); this header is the one place that knows it.
//
// Reading is iterative (no recursion, so a deeply nested document cannot exhaust the stack),
// validates UTF-8, and works on bytes whose size the caller has already bounded (the HTTP
// body limit, the WebSocket message limit): a parsed document costs a small multiple of its
// text. Writing escapes every string and replaces invalid UTF-8 with U+FFFD, so what sluice
// writes is always valid JSON whatever bytes a record holds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

namespace sluice::gateway::json {

using value = rapidjson::Value;
using document = rapidjson::Document;

/// Parses all of `text` as one JSON value. Nullopt on success; otherwise what is wrong and
/// where ("Invalid value. at offset 12").
std::optional<std::string> parse(std::string_view text, document& out);

/// Parses all of `text` as one JSON value in place, as parse() does (the same values, the same
/// error messages) but faster: strings are unescaped inside `text`, and `out` points into it,
/// so `text` must outlive `out` and holds no useful text afterwards, whatever the outcome. For
/// a request body the handler owns (the REST v2 produce body).
std::optional<std::string> parse_in_place(std::string& text, document& out);

/// Parses the first JSON value of `text` (concatenated JSON, as the v3 streamed produce sends):
/// whitespace before it is skipped, `consumed` receives the bytes up to the end of the value.
/// Returns an error message, or nullopt; `incomplete` is set when `text` ends inside the value
/// (more bytes may complete it) rather than holding something that is not JSON.
std::optional<std::string> parse_prefix(std::string_view text, document& out,
                                        std::size_t& consumed, bool& incomplete);

/// The text of `v`, compact.
std::string to_string(const value& v);
/// The text of `v` to store (a record's JSON value), as to_string writes it; nullopt when `v`
/// holds a number no double can hold: RapidJSON reads some such numbers (a mantissa of more
/// than 19 digits with a large exponent) as infinities, which JSON has no text for.
std::optional<std::string> to_stored_text(const value& v);

// --- typed access: nullptr/nullopt when absent or of another type ---------------------------

const value* member(const value& obj, std::string_view name);
std::optional<std::string_view> get_string(const value& obj, std::string_view name);
/// A JSON integer that fits int64 (1.0 and "1" are not integers).
std::optional<std::int64_t> get_int(const value& obj, std::string_view name);
std::optional<bool> get_bool(const value& obj, std::string_view name);
inline std::string_view as_view(const value& v) { return {v.GetString(), v.GetStringLength()}; }
/// The bytes of a JSON string holding base64, as the REST Proxy and the WebSocket API read it
/// (the standard alphabet, padding optional); nullopt when it is not base64.
std::optional<std::string> base64_bytes(const value& v);

// --- writing -----------------------------------------------------------------------------------

/// True when `s` is valid UTF-8 (no overlong forms, no surrogates).
bool valid_utf8(std::string_view s);
/// `s` with every invalid UTF-8 sequence replaced by U+FFFD.
std::string repair_utf8(std::string_view s);

/// A compact JSON writer into a growable buffer. Strings are escaped and made valid UTF-8.
/// Not thread-safe; reuse one with clear() to keep its buffer.
class writer {
public:
    writer() : w_(buf_) {}
    writer(const writer&) = delete;
    writer& operator=(const writer&) = delete;

    /// An object after a complete top-level value starts the next one of a sequence of JSON
    /// texts (v3 produce answers one report per record, one after another).
    void start_object() {
        if (w_.IsComplete()) {
            w_.Reset(buf_);
        }
        w_.StartObject();
    }
    void end_object() { w_.EndObject(); }
    void start_array() { w_.StartArray(); }
    void end_array() { w_.EndArray(); }
    void key(std::string_view k);
    void string(std::string_view s);
    void int64(std::int64_t v) { w_.Int64(v); }
    void uint64(std::uint64_t v) { w_.Uint64(v); }
    void boolean(bool v) { w_.Bool(v); }
    void null() { w_.Null(); }
    /// Bytes as a base64 string.
    void base64(std::string_view bytes);
    /// Text that already is one valid JSON value (a record's JSON value), written as is.
    void raw(std::string_view json) {
        w_.RawValue(json.data(), json.size(), rapidjson::kObjectType);
    }
    /// A parsed value.
    void value(const json::value& v) { v.Accept(w_); }

    void field(std::string_view k, std::string_view v) {
        key(k);
        string(v);
    }
    void field(std::string_view k, std::int64_t v) {
        key(k);
        int64(v);
    }
    void null_field(std::string_view k) {
        key(k);
        null();
    }

    std::string_view view() const { return {buf_.GetString(), buf_.GetSize()}; }
    std::string str() const { return std::string(view()); }
    std::size_t size() const { return buf_.GetSize(); }
    void clear() {
        buf_.Clear();
        w_.Reset(buf_);
    }

private:
    rapidjson::StringBuffer buf_;
    rapidjson::Writer<rapidjson::StringBuffer> w_;
    std::string scratch_;
};

/// True when `text` is exactly one valid JSON value (records stored by the JSON format are
/// written into answers as they are only after this check).
bool is_json(std::string_view text);

}  // namespace sluice::gateway::json
