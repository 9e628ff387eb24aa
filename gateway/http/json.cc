#include "gateway/http/json.h"

#include <cstring>

#include <rapidjson/error/en.h>
#include <rapidjson/memorystream.h>
#include <rapidjson/reader.h>

#include <fmt/format.h>

#include "protocol/core/base64.h"

namespace sluice::gateway::json {
namespace {

/// Not kParseFullPrecisionFlag: RapidJSON 1.1.0 reads "0e-38" with it as -4.45e-308 (a zero
/// mantissa in its big-integer path; fuzz_http_json found it). Without it a number is read to
/// within one unit in the last place of the nearest double.
constexpr unsigned parse_flags = rapidjson::kParseIterativeFlag |
                                 rapidjson::kParseValidateEncodingFlag;

/// Reads a string_view as a RapidJSON input stream (no NUL terminator needed).
class view_stream {
public:
    using Ch = char;
    explicit view_stream(std::string_view s) : begin_(s.data()), p_(s.data()), end_(s.data() + s.size()) {}
    Ch Peek() const { return p_ < end_ ? *p_ : '\0'; }
    Ch Take() { return p_ < end_ ? *p_++ : '\0'; }
    std::size_t Tell() const { return static_cast<std::size_t>(p_ - begin_); }
    Ch* PutBegin() { return nullptr; }
    void Put(Ch) {}
    void Flush() {}
    std::size_t PutEnd(Ch*) { return 0; }

private:
    const char* begin_;
    const char* p_;
    const char* end_;
};

std::string describe(const document& doc) {
    return fmt::format("{} at offset {}", rapidjson::GetParseError_En(doc.GetParseError()),
                       doc.GetErrorOffset());
}

/// Length of the valid UTF-8 sequence at s[i], or 0 when it is not one.
std::size_t utf8_sequence(std::string_view s, std::size_t i) {
    const auto c = static_cast<unsigned char>(s[i]);
    const std::size_t left = s.size() - i;
    auto cont = [&](std::size_t k) {
        return (static_cast<unsigned char>(s[i + k]) & 0xc0) == 0x80;
    };
    if (c < 0x80) {
        return 1;
    }
    if (c >= 0xc2 && c <= 0xdf) {
        return left >= 2 && cont(1) ? 2 : 0;
    }
    if (c >= 0xe0 && c <= 0xef) {
        if (left < 3 || !cont(1) || !cont(2)) {
            return 0;
        }
        const auto c1 = static_cast<unsigned char>(s[i + 1]);
        if ((c == 0xe0 && c1 < 0xa0) || (c == 0xed && c1 >= 0xa0)) {
            return 0;  // overlong, or a surrogate
        }
        return 3;
    }
    if (c >= 0xf0 && c <= 0xf4) {
        if (left < 4 || !cont(1) || !cont(2) || !cont(3)) {
            return 0;
        }
        const auto c1 = static_cast<unsigned char>(s[i + 1]);
        if ((c == 0xf0 && c1 < 0x90) || (c == 0xf4 && c1 >= 0x90)) {
            return 0;
        }
        return 4;
    }
    return 0;
}

/// Counts a JSON value's events without building anything (is_json).
struct null_handler : rapidjson::BaseReaderHandler<rapidjson::UTF8<>, null_handler> {
    bool Default() { return true; }
};

}  // namespace

std::optional<std::string> parse(std::string_view text, document& out) {
    view_stream in(text);
    out.ParseStream<parse_flags>(in);
    if (out.HasParseError()) {
        return describe(out);
    }
    return std::nullopt;
}

std::optional<std::string> parse_in_place(std::string& text, document& out) {
    // RapidJSON skips its SIMD scan of unescaped string runs while it validates encoding, so the
    // whole text is checked up front instead: in valid UTF-8 every string is valid, and a
    // non-ASCII byte outside a string is a syntax error either way. Text that is not valid
    // UTF-8 takes the validating parse, which names the error exactly as parse() does.
    if (!valid_utf8(text)) {
        return parse(text, out);
    }
    // A std::string keeps a NUL after its last byte: the end InsituStringStream stops at, as
    // view_stream answers '\0' at the end (and at a NUL inside, like RapidJSON's own streams).
    rapidjson::InsituStringStream in(text.data());
    out.ParseStream<rapidjson::kParseIterativeFlag | rapidjson::kParseInsituFlag>(in);
    if (out.HasParseError()) {
        return describe(out);
    }
    return std::nullopt;
}

std::optional<std::string> parse_prefix(std::string_view text, document& out,
                                        std::size_t& consumed, bool& incomplete) {
    incomplete = false;
    view_stream in(text);
    out.ParseStream<parse_flags | rapidjson::kParseStopWhenDoneFlag>(in);
    if (out.HasParseError()) {
        // Running out of bytes shows as an error at the very end of the input.
        incomplete = out.GetErrorOffset() >= text.size();
        return describe(out);
    }
    consumed = in.Tell();
    return std::nullopt;
}

std::string to_string(const value& v) {
    // For messages too: an infinity ends the text where it stands.
    return to_stored_text(v).value_or("<a number out of the range of a double>");
}

std::optional<std::string> to_stored_text(const value& v) {
    rapidjson::StringBuffer sb;
    rapidjson::Writer<rapidjson::StringBuffer> w(sb);
    if (!v.Accept(w)) {
        return std::nullopt;  // the writer refuses infinities and NaN
    }
    std::string_view text(sb.GetString(), sb.GetSize());
    // A lone surrogate escape ("\ude00") parses into bytes that are not UTF-8 (RapidJSON
    // checks pairs only); written out they would make text no JSON reader takes. They become
    // U+FFFD, as a Java client's UTF-8 encoder makes them '?' (found by fuzz_http_json).
    return valid_utf8(text) ? std::string(text) : repair_utf8(text);
}

const value* member(const value& obj, std::string_view name) {
    if (!obj.IsObject()) {
        return nullptr;
    }
    const auto it = obj.FindMember(
        rapidjson::Value(rapidjson::StringRef(name.data(), name.size())));
    return it == obj.MemberEnd() ? nullptr : &it->value;
}

std::optional<std::string_view> get_string(const value& obj, std::string_view name) {
    const value* v = member(obj, name);
    if (!v || !v->IsString()) {
        return std::nullopt;
    }
    return as_view(*v);
}

std::optional<std::int64_t> get_int(const value& obj, std::string_view name) {
    const value* v = member(obj, name);
    if (!v || !v->IsInt64()) {
        return std::nullopt;
    }
    return v->GetInt64();
}

std::optional<bool> get_bool(const value& obj, std::string_view name) {
    const value* v = member(obj, name);
    if (!v || !v->IsBool()) {
        return std::nullopt;
    }
    return v->GetBool();
}

bool valid_utf8(std::string_view s) {
    std::size_t i = 0;
    while (i < s.size()) {
        // ASCII fast path, eight bytes at a time.
        while (i + 8 <= s.size()) {
            std::uint64_t w;
            std::memcpy(&w, s.data() + i, 8);
            if (w & 0x8080808080808080ull) {
                break;
            }
            i += 8;
        }
        if (i >= s.size()) {
            break;
        }
        const std::size_t n = utf8_sequence(s, i);
        if (n == 0) {
            return false;
        }
        i += n;
    }
    return true;
}

std::string repair_utf8(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    std::size_t i = 0;
    while (i < s.size()) {
        const std::size_t n = utf8_sequence(s, i);
        if (n == 0) {
            out += "\xef\xbf\xbd";
            ++i;
        } else {
            out.append(s.data() + i, n);
            i += n;
        }
    }
    return out;
}

void writer::string(std::string_view s) {
    if (valid_utf8(s)) {
        w_.String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
        return;
    }
    scratch_ = repair_utf8(s);
    w_.String(scratch_.data(), static_cast<rapidjson::SizeType>(scratch_.size()));
}

void writer::key(std::string_view k) {
    if (valid_utf8(k)) {
        w_.Key(k.data(), static_cast<rapidjson::SizeType>(k.size()));
        return;
    }
    scratch_ = repair_utf8(k);
    w_.Key(scratch_.data(), static_cast<rapidjson::SizeType>(scratch_.size()));
}

void writer::base64(std::string_view bytes) {
    scratch_.clear();
    protocol::base64_encode(bytes, scratch_);
    w_.String(scratch_.data(), static_cast<rapidjson::SizeType>(scratch_.size()));
}

bool is_json(std::string_view text) {
    view_stream in(text);
    rapidjson::Reader reader;
    null_handler h;
    if (reader.Parse<parse_flags>(in, h).IsError()) {
        return false;
    }
    return true;
}

std::optional<std::string> base64_bytes(const value& v) {
    return protocol::base64_decode(as_view(v), protocol::base64_alphabet::standard,
                                   protocol::base64_padding::optional);
}

}  // namespace sluice::gateway::json
