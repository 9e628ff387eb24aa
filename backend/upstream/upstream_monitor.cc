#include "backend/upstream/upstream_monitor.h"

#include <algorithm>
#include <utility>

#include <rapidjson/document.h>

#include "backend/upstream/upstream_common.h"

namespace sluice::backend::upstream {
namespace {

std::int64_t json_int(const rapidjson::Value& obj, const char* key) {
    auto it = obj.FindMember(key);
    if (it == obj.MemberEnd() || !it->value.IsNumber()) {
        return 0;
    }
    return it->value.IsInt64() ? it->value.GetInt64()
                               : static_cast<std::int64_t>(it->value.GetDouble());
}

std::string json_string(const rapidjson::Value& obj, const char* key) {
    auto it = obj.FindMember(key);
    if (it == obj.MemberEnd() || !it->value.IsString()) {
        return {};
    }
    return {it->value.GetString(), it->value.GetStringLength()};
}

/// A window object of librdkafka's statistics ("rtt", "throttle"): its `field`.
std::int64_t window_field(const rapidjson::Value& broker, const char* window, const char* field) {
    auto it = broker.FindMember(window);
    if (it == broker.MemberEnd() || !it->value.IsObject()) {
        return 0;
    }
    return json_int(it->value, field);
}

}  // namespace

api::client::stats::handle parse_statistics(std::string_view name, std::string_view json) {
    api::client::stats::handle out;
    out.name = std::string(name);
    rapidjson::Document doc;
    doc.Parse(json.data(), json.size());
    if (doc.HasParseError() || !doc.IsObject()) {
        return out;
    }
    out.queued_messages = json_int(doc, "msg_cnt");
    auto brokers = doc.FindMember("brokers");
    if (brokers == doc.MemberEnd() || !brokers->value.IsObject()) {
        return out;
    }
    for (const auto& [key, b] : brokers->value.GetObject()) {
        if (!b.IsObject()) {
            continue;
        }
        const std::string source = json_string(b, "source");
        if (source == "internal" || source == "logical") {
            continue;  // librdkafka's own queue "broker" and coordinator aliases
        }
        api::client::broker_stats s;
        s.name = json_string(b, "name");
        s.node_id = static_cast<std::int32_t>(json_int(b, "nodeid"));
        s.state = json_string(b, "state");
        s.requests_sent = json_int(b, "tx");
        s.request_errors =
            json_int(b, "txerrs") + json_int(b, "rxerrs") + json_int(b, "req_timeouts");
        s.rtt_avg_us = window_field(b, "rtt", "avg");
        s.rtt_p99_us = window_field(b, "rtt", "p99");
        s.throttle_avg_ms = window_field(b, "throttle", "avg");
        out.brokers.push_back(std::move(s));
    }
    std::sort(out.brokers.begin(), out.brokers.end(),
              [](const auto& a, const auto& b) { return a.node_id < b.node_id; });
    return out;
}

upstream_monitor::upstream_monitor(std::string bootstrap, clock::duration fresh_for)
    : bootstrap_(std::move(bootstrap)), fresh_for_(fresh_for) {}

void upstream_monitor::probe_succeeded() {
    std::lock_guard lock(mu_);
    if (!ever_ok_ || all_down_) {
        upstream_log().info("upstream {}: reachable", bootstrap_);
    }
    last_ok_ = clock::now();
    ever_ok_ = true;
    all_down_ = false;
    last_reason_.clear();
}

void upstream_monitor::probe_failed(const std::string& reason) {
    std::lock_guard lock(mu_);
    if (last_reason_.empty()) {
        last_reason_ = reason;
    }
}

void upstream_monitor::on_error(rd_kafka_resp_err_t err, const char* reason) {
    std::lock_guard lock(mu_);
    last_reason_ = reason ? reason : rd_kafka_err2str(err);
    if (err == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN) {
        if (!all_down_) {
            upstream_log().warn("upstream {}: every broker is down ({})", bootstrap_, last_reason_);
        }
        all_down_ = true;
    }
}

void upstream_monitor::on_statistics(const std::string& name, std::string_view json) {
    auto parsed = parse_statistics(name, json);
    std::lock_guard lock(mu_);
    handles_[name] = std::move(parsed);
}

void upstream_monitor::count_error(const api::backend_error& e) {
    if (!e) {
        return;
    }
    const auto n = errc_name(e.reason());
    std::lock_guard lock(mu_);
    ++errors_[std::string(n)];
}

api::client::health upstream_monitor::check() const {
    std::lock_guard lock(mu_);
    if (ever_ok_ && !all_down_ && clock::now() - last_ok_ <= fresh_for_) {
        return {};
    }
    api::client::health h;
    h.ready = false;
    if (last_reason_.empty()) {
        h.reason = "upstream " + bootstrap_ + ": " +
                   (ever_ok_ ? "no metadata answer recently" : "connecting");
    } else {
        h.reason = "upstream " + bootstrap_ + ": " + last_reason_;
    }
    return h;
}

api::client::stats upstream_monitor::statistics() const {
    api::client::stats out;
    {
        std::lock_guard lock(mu_);
        for (const auto& [name, h] : handles_) {
            out.handles.push_back(h);
        }
        out.errors = errors_;
    }
    if (auto c = consumers_->merged()) {
        out.handles.push_back(std::move(*c));
    }
    return out;
}

std::uint64_t consumer_statistics::add() {
    std::lock_guard lock(mu_);
    return next_id_++;
}

void consumer_statistics::on_statistics(std::uint64_t id, std::string_view json) {
    auto parsed = parse_statistics("consumers", json);
    std::lock_guard lock(mu_);
    live_[id] = std::move(parsed);
    reported_ = true;
}

void consumer_statistics::closed(std::uint64_t id) {
    std::lock_guard lock(mu_);
    auto it = live_.find(id);
    if (it == live_.end()) {
        return;
    }
    for (const auto& b : it->second.brokers) {
        auto& r = retired_[b.name];
        r.name = b.name;
        r.node_id = b.node_id;
        r.requests_sent += b.requests_sent;
        r.request_errors += b.request_errors;
    }
    live_.erase(it);
}

std::optional<api::client::stats::handle> consumer_statistics::merged() const {
    std::lock_guard lock(mu_);
    if (!reported_) {
        return std::nullopt;
    }
    std::map<std::string, api::client::broker_stats> by_name;
    for (const auto& [name, r] : retired_) {
        auto& b = by_name[name];
        b = r;
        b.state = "INIT";  // no live consumer holds a connection
        b.rtt_avg_us = b.rtt_p99_us = b.throttle_avg_ms = 0;
    }
    api::client::stats::handle out;
    out.name = "consumers";
    for (const auto& [id, h] : live_) {
        out.queued_messages += h.queued_messages;
        for (const auto& s : h.brokers) {
            auto [it, fresh] = by_name.try_emplace(s.name);
            auto& b = it->second;
            if (fresh) {
                b.name = s.name;
                b.node_id = s.node_id;
            }
            if (b.state != "UP") {
                b.state = s.state;  // UP once any live consumer's connection is
            }
            b.requests_sent += s.requests_sent;
            b.request_errors += s.request_errors;
            b.rtt_avg_us = std::max(b.rtt_avg_us, s.rtt_avg_us);
            b.rtt_p99_us = std::max(b.rtt_p99_us, s.rtt_p99_us);
            b.throttle_avg_ms = std::max(b.throttle_avg_ms, s.throttle_avg_ms);
        }
    }
    for (auto& [name, b] : by_name) {
        out.brokers.push_back(std::move(b));
    }
    std::sort(out.brokers.begin(), out.brokers.end(), [](const auto& a, const auto& b) {
        return a.node_id != b.node_id ? a.node_id < b.node_id : a.name < b.name;
    });
    return out;
}

}  // namespace sluice::backend::upstream
