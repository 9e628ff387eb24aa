// Fuzzes the JSON reading every HTTP body goes through (gateway/http/json.h: REST v2 and v3
// produce bodies, consumer-instance requests, WebSocket ops) and the Content-Type and Accept
// parsing of the REST Proxy's media types. What parses must write back to text that parses
// to the same value (numbers to within a few units in the last place: RapidJSON's reading
// without full precision); the in-place parser must agree with the copying one; the streamed
// (prefix) parser must agree with parsing what it consumed; repaired text is valid UTF-8 and
// valid text is left alone; the writer turns any bytes into a JSON string.
#include <cstddef>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "gateway/http/json.h"
#include "gateway/http/rest/media_type.h"

using namespace sluice::gateway;

namespace {

void fail(const char* what, int line) {
    std::fprintf(stderr, "fuzz_http_json: check failed at line %d: %s\n", line, what);
    std::abort();
}
#define check(x) ((x) ? static_cast<void>(0) : fail(#x, __LINE__))

/// The same value: same types and strings, numbers within a few ulps.
bool same(const json::value& a, const json::value& b) {
    if (a.IsNumber() && b.IsNumber()) {
        if (a.IsInt64() && b.IsInt64()) {
            return a.GetInt64() == b.GetInt64();
        }
        if (a.IsUint64() && b.IsUint64()) {
            return a.GetUint64() == b.GetUint64();
        }
        const double x = a.GetDouble();
        const double y = b.GetDouble();
        return x == y || std::fabs(x - y) <= std::fabs(x) * 1e-15 || (std::isinf(x) && x == y);
    }
    if (a.GetType() != b.GetType()) {
        return false;
    }
    if (a.IsString()) {
        return json::as_view(a) == json::as_view(b);
    }
    if (a.IsArray()) {
        if (a.Size() != b.Size()) {
            return false;
        }
        for (rapidjson::SizeType i = 0; i < a.Size(); ++i) {
            if (!same(a[i], b[i])) {
                return false;
            }
        }
        return true;
    }
    if (a.IsObject()) {
        if (a.MemberCount() != b.MemberCount()) {
            return false;
        }
        for (auto i = a.MemberBegin(), j = b.MemberBegin(); i != a.MemberEnd(); ++i, ++j) {
            if (json::as_view(i->name) != json::as_view(j->name) || !same(i->value, j->value)) {
                return false;
            }
        }
        return true;
    }
    return true;  // null, true, false
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size > 256 * 1024) {
        return 0;
    }
    const std::string_view text(reinterpret_cast<const char*>(data), size);

    json::document doc;
    const auto error = json::parse(text, doc);
    check(json::is_json(text) == !error);
    std::string in_place(text);
    json::document doc2;
    const auto error2 = json::parse_in_place(in_place, doc2);
    check(error.has_value() == error2.has_value());
    if (!error && json::to_stored_text(doc)) {
        const auto written = *json::to_stored_text(doc);
        check(same(doc, doc2));
        json::document again;
        check(!json::parse(written, again));
        check(json::valid_utf8(written));
        // Strings that hold a lone surrogate are written with U+FFFD in its place.
        rapidjson::StringBuffer raw;
        rapidjson::Writer<rapidjson::StringBuffer> raw_writer(raw);
        doc.Accept(raw_writer);
        if (json::valid_utf8(std::string_view(raw.GetString(), raw.GetSize()))) {
            check(same(again, doc));
        }
        if (doc.IsObject()) {
            for (const char* name : {"records", "value", "key", "partition", "op", "id"}) {
                (void)json::member(doc, name);
                (void)json::get_string(doc, name);
                (void)json::get_int(doc, name);
                (void)json::get_bool(doc, name);
            }
        }
        if (doc.IsString()) {
            (void)json::base64_bytes(doc);
        }
    }

    std::size_t consumed = 0;
    bool incomplete = false;
    json::document first;
    if (!json::parse_prefix(text, first, consumed, incomplete)) {
        check(consumed <= text.size());
        json::document prefix_doc;
        check(!json::parse(text.substr(0, consumed), prefix_doc));
        check(same(prefix_doc, first));
    }

    const auto repaired = json::repair_utf8(text);
    check(json::valid_utf8(repaired));
    if (json::valid_utf8(text)) {
        check(repaired == text);
    }
    json::writer w;
    w.string(text);
    json::document written;
    check(!json::parse(w.view(), written) && written.IsString());

    (void)rest::content_media(text);
    (void)rest::accepted_records_media(text);
    return 0;
}
