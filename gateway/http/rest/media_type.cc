#include "gateway/http/rest/media_type.h"

#include <cctype>
#include <string>

namespace sluice::gateway::rest {
namespace {

/// "Application/JSON; charset=utf-8" -> "application/json".
std::string essence(std::string_view v) {
    const auto semi = v.find(';');
    v = v.substr(0, semi);
    while (!v.empty() && std::isspace(static_cast<unsigned char>(v.front()))) {
        v.remove_prefix(1);
    }
    while (!v.empty() && std::isspace(static_cast<unsigned char>(v.back()))) {
        v.remove_suffix(1);
    }
    std::string out(v);
    for (auto& c : out) {
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    return out;
}

media classify(const std::string& t) {
    if (t.empty() || t == "application/vnd.kafka.v2+json" || t == "application/json" ||
        t == "application/octet-stream") {
        return media::v2;
    }
    if (t == "application/vnd.kafka.binary.v2+json") {
        return media::binary;
    }
    if (t == "application/vnd.kafka.json.v2+json") {
        return media::json;
    }
    if (t == "application/vnd.kafka.avro.v2+json" || t == "application/vnd.kafka.jsonschema.v2+json" ||
        t == "application/vnd.kafka.protobuf.v2+json") {
        return media::schema;
    }
    return media::unsupported;
}

}  // namespace

media content_media(std::string_view content_type) { return classify(essence(content_type)); }

std::optional<media> accepted_records_media(std::string_view accept) {
    // The first listed type that names an embedded format decides; generic types (the plain
    // v2 type, application/json, */*) accept whatever the instance's format is.
    while (!accept.empty()) {
        const auto comma = accept.find(',');
        const std::string t = essence(accept.substr(0, comma));
        accept = comma == std::string_view::npos ? std::string_view() : accept.substr(comma + 1);
        const media m = classify(t);
        if (m == media::binary || m == media::json || m == media::schema) {
            return m;
        }
    }
    return std::nullopt;
}

}  // namespace sluice::gateway::rest
