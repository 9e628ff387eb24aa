#include "gateway/http/http_settings.h"

#include <algorithm>
#include <cctype>

namespace sluice::gateway {
namespace {

std::string trim(std::string s) {
    auto not_space = [](unsigned char c) { return !std::isspace(c); };
    s.erase(s.begin(), std::find_if(s.begin(), s.end(), not_space));
    s.erase(std::find_if(s.rbegin(), s.rend(), not_space).base(), s.end());
    return s;
}

std::vector<std::string> split_list(const std::string& s) {
    std::vector<std::string> out;
    std::size_t start = 0;
    while (start <= s.size()) {
        auto end = s.find(',', start);
        if (end == std::string::npos) {
            end = s.size();
        }
        auto item = trim(s.substr(start, end - start));
        if (!item.empty()) {
            out.push_back(std::move(item));
        }
        start = end + 1;
    }
    return out;
}

std::int64_t ranged(const config& cfg, const char* key, std::int64_t fallback, std::int64_t min,
                    std::int64_t max) {
    const std::int64_t v = cfg.get_int(key, fallback);
    if (v < min || v > max) {
        throw config_error(std::string(key) + ": must be between " + std::to_string(min) +
                           " and " + std::to_string(max));
    }
    return v;
}

std::chrono::milliseconds ms(const config& cfg, const char* key, std::chrono::milliseconds fallback,
                             std::int64_t min = 1) {
    return std::chrono::milliseconds(
        ranged(cfg, key, fallback.count(), min, 24LL * 3600 * 1000 * 365));
}

}  // namespace

std::vector<std::string> read_allowed_origins(const config& cfg) {
    std::vector<std::string> out;
    // compat: access.control.allow.origin is the REST Proxy's CORS list; an origin it names
    // is one whose pages are meant to call the API, so it is allowed by the same rule.
    for (const char* key : {"http.allowed.origins", "access.control.allow.origin"}) {
        for (const auto& item : split_list(cfg.get_string(key, ""))) {
            auto origin = normalize_origin(item);
            if (!origin) {
                throw config_error(std::string(key) + ": '" + item +
                                   "' is not an origin (scheme://host[:port], such as "
                                   "https://app.example.com, or *)");
            }
            if (std::find(out.begin(), out.end(), *origin) == out.end()) {
                out.push_back(std::move(*origin));
            }
        }
    }
    return out;
}

http_settings read_http_settings(const config& cfg) {
    http_settings s;
    constexpr std::int64_t int_max = 2147483647;
    s.limits.max_body_bytes = static_cast<std::uint64_t>(
        ranged(cfg, "http.request.max.bytes", 64LL * 1024 * 1024, 1024, 1LL << 40));

    s.cors.allow_origins = read_allowed_origins(cfg);
    s.cors.allow_methods = cfg.get_string("access.control.allow.methods", s.cors.allow_methods);
    s.cors.allow_headers = cfg.get_string("access.control.allow.headers", s.cors.allow_headers);

    for (const auto& mode : split_list(cfg.get_string("http.authentication", "none"))) {
        if (mode == "basic") {
            s.authentication.basic = true;
        } else if (mode == "bearer") {
            s.authentication.bearer = true;
        } else if (mode != "none") {
            throw config_error("http.authentication: unknown mode '" + mode +
                               "' (none, basic, bearer or basic,bearer)");
        }
    }

    s.advertised_url = cfg.get_string("http.advertised.url", "");
    while (!s.advertised_url.empty() && s.advertised_url.back() == '/') {
        s.advertised_url.pop_back();
    }
    if (!s.advertised_url.empty() && s.advertised_url.rfind("http://", 0) != 0 &&
        s.advertised_url.rfind("https://", 0) != 0) {
        throw config_error("http.advertised.url: must start with http:// or https://");
    }
    if (auto own = origin_of_url(s.advertised_url)) {
        s.cors.own_origins.push_back(std::move(*own));
    }
    s.api_v2_enable = cfg.get_bool("api.v2.enable", true);
    s.api_v3_enable = cfg.get_bool("api.v3.enable", true);

    const std::string acks = cfg.get_string("producer.acks", "all");
    if (acks == "all" || acks == "-1") {
        s.producer_acks = backend::api::acks::all;
    } else if (acks == "1") {
        s.producer_acks = backend::api::acks::leader;
    } else if (acks == "0") {
        s.producer_acks = backend::api::acks::none;
    } else {
        throw config_error("producer.acks: must be all, -1, 1 or 0");
    }

    s.consumer_instance_timeout =
        ms(cfg, "consumer.instance.timeout.ms", s.consumer_instance_timeout);
    s.consumer_request_timeout = ms(cfg, "consumer.request.timeout.ms", s.consumer_request_timeout);
    s.consumer_request_max_bytes =
        ranged(cfg, "consumer.request.max.bytes", s.consumer_request_max_bytes, 1, 1LL << 40);
    s.fetch_min_bytes =
        static_cast<std::int32_t>(ranged(cfg, "fetch.min.bytes", s.fetch_min_bytes, -1, 10000000));
    s.member_session_timeout_ms = static_cast<std::int32_t>(
        ranged(cfg, "consumer.session.timeout.ms", s.member_session_timeout_ms, 1000, int_max));

    auto& st = s.streams;
    st.websocket_max_message_bytes = static_cast<std::size_t>(ranged(
        cfg, "websocket.max.message.bytes", static_cast<std::int64_t>(st.websocket_max_message_bytes),
        1024, 1LL << 30));
    st.websocket_queue_max_bytes = static_cast<std::size_t>(
        ranged(cfg, "websocket.queue.max.bytes",
               static_cast<std::int64_t>(st.websocket_queue_max_bytes), 1024, 1LL << 32));
    st.sse_queue_max_bytes = static_cast<std::size_t>(ranged(
        cfg, "sse.queue.max.bytes", static_cast<std::int64_t>(st.sse_queue_max_bytes), 1024,
        1LL << 32));
    st.websocket_write_timeout = ms(cfg, "websocket.write.timeout.ms", st.websocket_write_timeout);
    st.sse_write_timeout = ms(cfg, "sse.write.timeout.ms", st.sse_write_timeout);
    st.websocket_idle_timeout =
        ms(cfg, "websocket.idle.timeout.ms", st.websocket_idle_timeout, 100);
    st.sse_keepalive_interval = ms(cfg, "sse.keepalive.interval.ms", st.sse_keepalive_interval);
    st.sse_retry = ms(cfg, "sse.retry.ms", st.sse_retry, 0);
    return s;
}

}  // namespace sluice::gateway
