// Fuzzes how the REST produce calls read the records of a body (gateway/http/rest/
// record_json.h), after the JSON reading fuzz_http_json covers:
//   0, 1: the rest as a v2 body {"records":[...]} with binary (0) or JSON (1) keys and values:
//         every record is read or refused with a REST Proxy code and a message; a read
//         binary value is the base64 its string says; a read JSON value is JSON text;
//   2:    the rest as a v3 body, one record or several concatenated: each is read or refused
//         with a 400; a report's key and value sizes are the sizes of the bytes produced;
//   3:    the rest as an RFC 3339 timestamp: what reads prints back to a time that reads the
//         same.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <variant>

#include "gateway/http/json.h"
#include "gateway/http/rest/record_json.h"

using namespace sluice::gateway;
using namespace sluice::gateway::rest;

namespace {

void check(bool ok) {
    if (!ok) {
        std::abort();
    }
}

void check_error(const record_error& e) {
    check(!e.message.empty());
    check(static_cast<std::int32_t>(e.c) >= 400);
}

void v2_body(std::string_view text, bool json_values) {
    json::document doc;
    if (json::parse(text, doc) || !doc.IsObject()) {
        return;
    }
    const json::value* recs = json::member(doc, "records");
    if (!recs || !recs->IsArray()) {
        return;
    }
    for (const auto& r : recs->GetArray()) {
        auto read = read_v2_record(r, json_values, 3);
        if (auto* e = std::get_if<record_error>(&read)) {
            check_error(*e);
            continue;
        }
        const auto& rec = std::get<outgoing_record>(read);
        check(!rec.partition || *rec.partition >= 0);
        const json::value* v = json::member(r, "value");
        if (!rec.value) {
            check(!v || v->IsNull());
        } else if (json_values) {
            json::document back;
            check(!json::parse(*rec.value, back));
        } else {
            check(v && v->IsString() && json::base64_bytes(*v) == rec.value);
        }
    }
}

void v3_body(std::string_view text) {
    while (!text.empty()) {
        json::document doc;
        std::size_t used = 0;
        bool incomplete = false;
        if (json::parse_prefix(text, doc, used, incomplete) || used == 0) {
            return;
        }
        text.remove_prefix(used);
        auto read = read_v3_record(doc);
        if (auto* e = std::get_if<record_error>(&read)) {
            check_error(*e);
            check(e->c == code::bad_request);
            continue;
        }
        const auto& r = std::get<v3_record>(read);
        check(!r.key || r.key->size == (r.record.key ? r.record.key->size() : 0));
        check(!r.value || r.value->size == (r.record.value ? r.record.value->size() : 0));
        check(!r.record.partition || *r.record.partition >= 0);
    }
}

void timestamp(std::string_view text) {
    const auto ms = parse_timestamp(text);
    if (!ms || *ms < -62135596800000 || *ms > 253402300799999) {
        return;  // printed as four-digit years only
    }
    check(parse_timestamp(format_timestamp(*ms)) == ms);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0 || size > 64 * 1024) {
        return 0;
    }
    const std::string_view input(reinterpret_cast<const char*>(data + 1), size - 1);
    switch (data[0] % 4) {
        case 0:
        case 1:
            v2_body(input, data[0] % 4 == 1);
            break;
        case 2:
            v3_body(input);
            break;
        default:
            timestamp(input);
            break;
    }
    return 0;
}
