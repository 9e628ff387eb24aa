#include "backend/log/topic_store.h"

#include <charconv>
#include <cstdio>

#include "backend/log/errc.h"
#include "protocol/core/crc32c.h"

namespace sluice::backend::log {

std::string encode_topic_record(const topic_record& r) {
    std::string out;
    out += "version=1\n";
    out += "name=" + r.name + "\n";
    out += "id=" + r.id.to_string() + "\n";
    out += "partitions=" + std::to_string(r.partitions) + "\n";
    out += std::string("internal=") + (r.internal ? "true" : "false") + "\n";
    for (const auto& [k, v] : r.overrides) {
        out += "config." + k + "=" + v + "\n";
    }
    char crc[16];
    std::snprintf(crc, sizeof crc, "%08x", protocol::crc32c(protocol::as_bytes(out)));
    out += std::string("crc=") + crc + "\n";
    return out;
}

result<topic_record> decode_topic_record(protocol::bytes_view bytes) {
    std::string_view text = protocol::as_chars(bytes);
    auto crc_at = text.rfind("crc=");
    if (crc_at == std::string_view::npos || (crc_at > 0 && text[crc_at - 1] != '\n')) {
        return fail(errc::storage_error);
    }
    std::string_view crc_text = text.substr(crc_at + 4);
    while (!crc_text.empty() && crc_text.back() == '\n') {
        crc_text.remove_suffix(1);
    }
    std::uint32_t crc = 0;
    auto [p, ec] = std::from_chars(crc_text.data(), crc_text.data() + crc_text.size(), crc, 16);
    if (ec != std::errc{} || p != crc_text.data() + crc_text.size() ||
        crc != protocol::crc32c(protocol::as_bytes(text.substr(0, crc_at)))) {
        return fail(errc::storage_error);
    }
    topic_record r;
    bool have_version = false;
    bool have_partitions = false;
    std::string_view body = text.substr(0, crc_at);
    while (!body.empty()) {
        auto nl = body.find('\n');
        std::string_view line = body.substr(0, nl);
        body.remove_prefix(nl == std::string_view::npos ? body.size() : nl + 1);
        auto eq = line.find('=');
        if (eq == std::string_view::npos) {
            return fail(errc::storage_error);
        }
        std::string_view key = line.substr(0, eq);
        std::string_view value = line.substr(eq + 1);
        if (key == "version") {
            if (value != "1") {
                return fail(errc::storage_error);
            }
            have_version = true;
        } else if (key == "name") {
            r.name = value;
        } else if (key == "id") {
            r.id = uuid::parse(value);
        } else if (key == "partitions") {
            auto [q, e] = std::from_chars(value.data(), value.data() + value.size(), r.partitions);
            if (e != std::errc{} || q != value.data() + value.size()) {
                return fail(errc::storage_error);
            }
            have_partitions = true;
        } else if (key == "internal") {
            r.internal = value == "true";
        } else if (key.substr(0, 7) == "config.") {
            r.overrides.emplace(std::string(key.substr(7)), std::string(value));
        }
    }
    if (!have_version || !have_partitions || r.name.empty() || r.id.is_zero()) {
        return fail(errc::storage_error);
    }
    return r;
}

}  // namespace sluice::backend::log
