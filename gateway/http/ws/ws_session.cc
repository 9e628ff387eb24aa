#include "gateway/http/ws/ws_session.h"

#include <limits>
#include <sstream>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/websocket/rfc6455.hpp>

#include "gateway/http/http_quotas.h"
#include "gateway/httpcore/logger.h"
#include "gateway/http/http_auth.h"
#include "gateway/core/metrics.h"

namespace sluice::gateway::ws {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
using clock = std::chrono::steady_clock;
using rest::code;

namespace {

constexpr auto forever = std::chrono::hours(24 * 365);
constexpr std::int64_t max_credit = std::int64_t(1) << 53;

std::int64_t code_of(code c) { return static_cast<std::int64_t>(c); }

/// "from": "earliest" | "latest" | {"offset": n} | {"timestamp": ms}.
std::optional<start_position> parse_from(const json::value* v) {
    start_position out;
    if (!v || v->IsNull()) {
        return out;
    }
    if (v->IsString()) {
        const auto s = json::as_view(*v);
        if (s == "earliest") {
            out.what = start_position::kind::earliest;
            return out;
        }
        if (s == "latest") {
            return out;
        }
        return std::nullopt;
    }
    if (auto off = json::get_int(*v, "offset"); off && *off >= 0) {
        out.what = start_position::kind::offset;
        out.value = *off;
        return out;
    }
    if (auto ts = json::get_int(*v, "timestamp"); ts && *ts >= 0) {
        out.what = start_position::kind::timestamp;
        out.value = *ts;
        return out;
    }
    return std::nullopt;
}

/// A key, value or header value of a produce op: strings as UTF-8 (or base64 with
/// "format":"base64"), other JSON values as their JSON text, null as null.
std::variant<std::optional<std::string>, std::string> produce_bytes(const json::value* v,
                                                                   bool base64) {
    if (!v || v->IsNull()) {
        return std::optional<std::string>();
    }
    if (v->IsString()) {
        if (!base64) {
            return std::optional<std::string>(std::string(json::as_view(*v)));
        }
        auto bytes = json::base64_bytes(*v);
        if (!bytes) {
            return std::string("is not valid base64");
        }
        return std::optional<std::string>(std::move(*bytes));
    }
    auto text = json::to_stored_text(*v);
    if (!text) {
        return std::string("holds a number out of the range of a double");
    }
    return std::optional<std::string>(std::move(*text));
}

}  // namespace

ws_session::ws_session(ws_context& ctx, http_request_context& http)
    : ctx_(ctx),
      http_(http),
      ex_(http.executor),
      ws_(http.stream->stream),
      write_timer_(http.executor) {}

ws_session::~ws_session() = default;

void ws_session::spawn(asio::awaitable<void> task) {
    ++tasks_;
    asio::co_spawn(ex_, std::move(task), [self = shared_from_this()](std::exception_ptr e) {
        if (e) {
            try {
                std::rethrow_exception(e);
            } catch (const std::exception& ex) {
                http_log().error("websocket from {}: task failed: {}",
                                 self->http_.peer.address().to_string(), ex.what());
            }
            self->shut();
            boost::system::error_code ignored;
            beast::get_lowest_layer(self->ws_).socket().close(ignored);
        }
        --self->tasks_;
        self->tasks_changed_.notify();
    });
}

void ws_session::send(std::string frame) {
    queued_bytes_ += frame.size();
    queue_.push_back(std::move(frame));
    queue_changed_.notify();
}

bool ws_session::permitted(const std::string& id, const acl_checks& checks) {
    // The audit log's action: what the op asks (a produce writes, or creates its topic).
    const bool produce = !checks.empty() && (checks.front().op == auth::acl_operation::write ||
                                             checks.front().op == auth::acl_operation::create);
    const auto denied = refused_check(ctx_.rc.chain, http_requester(http_, policy_front::websocket),
                                      produce ? "produce" : "subscribe", checks);
    if (!denied) {
        return true;
    }
    send_error(id, code_of(code::forbidden), denial_message(*denied));
    return false;
}

void ws_session::send_error(const std::string& id, std::int64_t c, std::string_view message) {
    json::writer w;
    w.start_object();
    w.field("op", "error");
    if (!id.empty()) {
        w.key("id");
        w.raw(id);
    }
    w.field("code", c);
    w.field("message", message);
    w.end_object();
    send(w.str());
}

void ws_session::shut() {
    if (closing_) {
        return;
    }
    closing_ = true;
    for (auto& [k, sub] : subscriptions_) {
        sub->cancelled = true;
        sub->reader->close();
    }
    queue_changed_.notify();
    credit_changed_.notify();
}

asio::awaitable<void> ws_session::wait_for_room(std::size_t limit) {
    while (!closing_ && queued_bytes_ >= limit) {
        const auto seen = queue_changed_.version();
        if (closing_ || queued_bytes_ < limit) {
            break;
        }
        co_await queue_changed_.wait(seen, clock::now() + forever);
    }
}

asio::awaitable<void> ws_session::writer() {
    const auto timeout = ctx_.rc.settings.streams.websocket_write_timeout;
    for (;;) {
        while (queue_.empty() && !closing_) {
            const auto seen = queue_changed_.version();
            if (!queue_.empty() || closing_) {
                break;
            }
            co_await queue_changed_.wait(seen, clock::now() + forever);
        }
        if (closing_ || queue_.empty()) {
            break;
        }
        std::string frame = std::move(queue_.front());
        queue_.pop_front();
        // A client that does not drain the frame in time is dropped.
        write_timer_.expires_after(timeout);
        write_timer_.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
            if (!ec) {
                http_log().debug("websocket from {}: write timed out; dropping it",
                                 self->http_.peer.address().to_string());
                if (self->ctx_.dropped_write_timeout != nullptr) {
                    self->ctx_.dropped_write_timeout->inc();
                }
                boost::system::error_code ignored;
                beast::get_lowest_layer(self->ws_).socket().close(ignored);
            }
        });
        ws_.text(true);
        boost::system::error_code ec;
        co_await ws_.async_write(asio::buffer(frame), asio::redirect_error(asio::use_awaitable, ec));
        write_timer_.cancel();
        queued_bytes_ -= frame.size();
        queue_changed_.notify();
        if (ec) {
            boost::system::error_code ignored;
            beast::get_lowest_layer(ws_).socket().close(ignored);
            break;
        }
    }
    writing_done_ = true;
    shut();
}

asio::awaitable<void> ws_session::run() {
    auto self = shared_from_this();
    http_.stream->taken = true;
    const auto& st = ctx_.rc.settings.streams;
    websocket::stream_base::timeout timeouts{};
    timeouts.handshake_timeout = std::chrono::seconds(30);
    timeouts.idle_timeout = st.websocket_idle_timeout;
    timeouts.keep_alive_pings = true;
    ws_.set_option(timeouts);
    ws_.read_message_max(st.websocket_max_message_bytes);
    ws_.auto_fragment(false);  // one frame per message: the queue bounds its size already
    ws_.set_option(websocket::stream_base::decorator(
        [](websocket::response_type& res) { res.set(beast::http::field::server, "sluice"); }));

    boost::system::error_code ec;
    auto& leftover = http_.stream->buffer;
    if (leftover.size() > 0) {
        // The client sent frames right behind its upgrade request: hand the whole byte stream
        // to the handshake, which passes what follows the request on to the frame reader.
        std::ostringstream os;
        os << http_.req;
        std::string raw = os.str();
        raw += beast::buffers_to_string(leftover.data());
        leftover.consume(leftover.size());
        co_await ws_.async_accept(asio::buffer(raw), asio::redirect_error(asio::use_awaitable, ec));
    } else {
        co_await ws_.async_accept(http_.req, asio::redirect_error(asio::use_awaitable, ec));
    }
    if (ec) {
        co_return;
    }
    std::weak_ptr<ws_session> weak = self;
    http_.finish->on_request([weak] {
        if (auto s = weak.lock()) {
            s->spawn(s->say_goodbye());  // the pending read then ends
        }
    });
    spawn(writer());

    beast::flat_buffer buffer;
    while (!closing_) {
        // A client that does not read gets its ops held back.
        co_await wait_for_room(ctx_.rc.settings.streams.websocket_queue_max_bytes);
        if (closing_) {
            break;
        }
        buffer.clear();
        co_await ws_.async_read(buffer, asio::redirect_error(asio::use_awaitable, ec));
        if (ec) {
            http_log().debug("websocket from {}: {}", http_.peer.address().to_string(),
                             ec.message());
            if (ec == beast::error::timeout && ctx_.dropped_idle_timeout != nullptr) {
                ctx_.dropped_idle_timeout->inc();  // silent past websocket.idle.timeout.ms
            }
            break;
        }
        if (!ws_.got_text()) {
            send_error("", code_of(code::bad_request),
                       "binary frames are not supported: send JSON text frames");
            continue;
        }
        auto text = beast::buffers_to_string(buffer.data());
        if (!json::valid_utf8(text)) {
            // compat: Beast 1.74 checks UTF-8 frame by frame and lets a message through whose
            // empty final frame follows a fragment ending inside a character; RFC 6455 section
            // 8.1 fails such a connection with 1007.
            http_log().debug("websocket from {}: a text message that is not UTF-8",
                             http_.peer.address().to_string());
            co_await ws_.async_close(websocket::close_code::bad_payload,
                                     asio::redirect_error(asio::use_awaitable, ec));
            break;
        }
        co_await on_message(std::move(text));
    }
    shut();
    write_timer_.cancel();
    if (!writing_done_) {
        boost::system::error_code ignored;
        beast::get_lowest_layer(ws_).socket().cancel(ignored);
    }
    while (tasks_ > 0) {
        const auto seen = tasks_changed_.version();
        if (tasks_ == 0) {
            break;
        }
        co_await tasks_changed_.wait(seen, clock::now() + forever);
    }
    http_.finish->clear();
}

asio::awaitable<void> ws_session::say_goodbye() {
    boost::system::error_code ignored;
    co_await ws_.async_close(websocket::close_code::going_away,
                             asio::redirect_error(asio::use_awaitable, ignored));
}

asio::awaitable<void> ws_session::on_message(std::string text) {
    json::document doc;
    if (auto why = json::parse(text, doc)) {
        send_error("", code_of(code::bad_request), "Malformed JSON: " + *why);
        co_return;
    }
    if (!doc.IsObject()) {
        send_error("", code_of(code::bad_request), "a message must be a JSON object with an op");
        co_return;
    }
    std::string id;
    if (const auto* v = json::member(doc, "id"); v && !v->IsNull()) {
        if (!v->IsString() && !v->IsNumber()) {
            send_error("", code_of(code::bad_request), "id must be a string or a number");
            co_return;
        }
        id = json::to_string(*v);
    }
    const auto op = json::get_string(doc, "op");
    if (!op) {
        send_error(id, code_of(code::bad_request), "a message needs an op");
    } else if (*op == "subscribe") {
        co_await on_subscribe(doc, id);
    } else if (*op == "unsubscribe") {
        on_unsubscribe(doc, id);
    } else if (*op == "produce") {
        co_await on_produce(doc, id);
    } else if (*op == "commit") {
        co_await on_commit(doc, id);
    } else if (*op == "credit") {
        on_credit(doc, id);
    } else {
        send_error(id, code_of(code::bad_request), "unknown op '" + std::string(*op) + "'");
    }
}

asio::awaitable<void> ws_session::on_subscribe(const json::value& msg, std::string id) {
    if (subscriptions_.contains(id)) {
        send_error(id, code_of(code::consumer_already_subscribed),
                   id.empty() ? "already subscribed: give each subscription an id"
                              : "already subscribed with this id");
        co_return;
    }
    topic_subscription::spec spec;
    if (const auto* t = json::member(msg, "topics"); t && t->IsArray()) {
        for (const auto& v : t->GetArray()) {
            if (!v.IsString() || v.GetStringLength() == 0) {
                spec.topics.clear();
                break;
            }
            spec.topics.emplace_back(std::string(json::as_view(v)));
        }
    } else if (auto one = json::get_string(msg, "topic"); one && !one->empty()) {
        spec.topics.emplace_back(std::string(*one));
    }
    if (spec.topics.empty()) {
        send_error(id, code_of(code::bad_request), "topics must be a non-empty array of names");
        co_return;
    }
    if (const auto* g = json::member(msg, "group"); g && !g->IsNull()) {
        if (!g->IsString() || g->GetStringLength() == 0) {
            send_error(id, code_of(code::bad_request), "group must be a non-empty string");
            co_return;
        }
        spec.group = sluice::group_id(std::string(json::as_view(*g)));
    }
    if (ctx_.rc.chain.authorizing()) {
        for (const auto& t : spec.topics) {
            if (!permitted(id, subscribe_checks(t.value, spec.group ? spec.group->value : ""))) {
                co_return;
            }
        }
    }
    auto from = parse_from(json::member(msg, "from"));
    if (!from) {
        send_error(id, code_of(code::bad_request),
                   "from must be \"earliest\", \"latest\", {\"offset\": n} or "
                   "{\"timestamp\": ms}");
        co_return;
    }
    spec.from = *from;
    stream_format format = stream_format::string;
    if (auto f = json::get_string(msg, "format")) {
        auto parsed = parse_stream_format(*f);
        if (!parsed) {
            send_error(id, code_of(code::bad_request),
                       "format must be \"string\", \"base64\" or \"json\"");
            co_return;
        }
        format = *parsed;
    }
    frame_encoding encoding = frame_encoding::records;
    if (const auto* e = json::member(msg, "encoding"); e && !e->IsNull()) {
        const auto parsed = e->IsString() ? parse_frame_encoding(json::as_view(*e)) : std::nullopt;
        if (!parsed) {
            send_error(id, code_of(code::bad_request),
                       "encoding must be \"records\" (the default) or \"compact\"");
            co_return;
        }
        encoding = *parsed;
    }
    if (const auto* c = json::member(msg, "credit"); c && !c->IsNull()) {
        if (!c->IsInt64() || c->GetInt64() < 0) {
            send_error(id, code_of(code::bad_request), "credit must be a non-negative integer");
            co_return;
        }
        credit_mode_ = true;
        credit_ = std::min(max_credit, credit_ + c->GetInt64());
        credit_changed_.notify();
    }
    spec.client = backend::api::client_info{"sluice-websocket", http_.peer.address().to_string()};
    std::vector<topic_name> topics = spec.topics;
    auto& rc = ctx_.rc;
    topic_subscription::services svc{*rc.client, rc.settings.member_session_timeout_ms};
    auto member_executor = ctx_.next_executor();
    auto opened = co_await topic_subscription::open(svc, std::move(spec), member_executor);
    if (auto* e = std::get_if<rest::error>(&opened)) {
        send_error(id, code_of(e->code), e->message);
        co_return;
    }
    auto sub = std::make_shared<subscription>();
    sub->key = id;
    sub->reader = std::move(std::get<0>(opened));
    sub->format = format;
    sub->encoding = encoding;
    if (closing_) {
        sub->reader->close();
        co_return;
    }
    subscriptions_[id] = sub;
    json::writer w;
    w.start_object();
    w.field("op", "subscribed");
    if (!id.empty()) {
        w.key("id");
        w.raw(id);
    }
    w.key("topics");
    w.start_array();
    for (const auto& t : topics) {
        w.string(t.value);
    }
    w.end_array();
    w.end_object();
    send(w.str());
    spawn(read_subscription(sub));
}

void ws_session::on_unsubscribe(const json::value&, std::string id) {
    std::vector<std::shared_ptr<subscription>> gone;
    if (id.empty()) {
        for (auto& [k, sub] : subscriptions_) {
            gone.push_back(sub);
        }
        subscriptions_.clear();
    } else {
        auto it = subscriptions_.find(id);
        if (it == subscriptions_.end()) {
            send_error(id, code_of(code::bad_request), "no subscription has this id");
            return;
        }
        gone.push_back(it->second);
        subscriptions_.erase(it);
    }
    for (auto& sub : gone) {
        sub->cancelled = true;
        sub->reader->close();
        json::writer w;
        w.start_object();
        w.field("op", "unsubscribed");
        if (!sub->key.empty()) {
            w.key("id");
            w.raw(sub->key);
        }
        w.end_object();
        send(w.str());
    }
    queue_changed_.notify();
    credit_changed_.notify();
}

asio::awaitable<void> ws_session::read_subscription(std::shared_ptr<subscription> sub) {
    const auto& st = ctx_.rc.settings.streams;
    json::writer w;
    while (!closing_ && !sub->cancelled) {
        // Read once half the queue is free, not as soon as any of it is: a client behind gets
        // frames of at least half the queue (one being written while the next is built)
        // rather than a trickle of small ones, each a wake-up of both ends.
        co_await wait_for_room(st.websocket_queue_max_bytes / 2 + 1);
        if (closing_ || sub->cancelled) {
            break;
        }
        if (credit_mode_ && credit_ <= 0) {
            const auto seen = credit_changed_.version();
            if (credit_ <= 0 && !closing_ && !sub->cancelled) {
                co_await credit_changed_.wait(seen, clock::now() + forever);
            }
            continue;
        }
        const std::int64_t allowed =
            credit_mode_ ? credit_ : std::numeric_limits<std::int64_t>::max();
        const std::size_t room = st.websocket_queue_max_bytes - std::min(queued_bytes_, st.websocket_queue_max_bytes);
        const std::size_t budget = std::max<std::size_t>(room, 16 * 1024);
        const bool compact = sub->encoding == frame_encoding::compact;
        if (compact) {
            sub->compact.start(sub->key);
        } else {
            w.clear();
            w.start_object();
            w.field("op", "records");
            if (!sub->key.empty()) {
                w.key("id");
                w.raw(sub->key);
            }
            w.key("records");
            w.start_array();
        }
        std::int64_t n = 0;
        auto sink = [&](const topic_name& t, partition_id p,
                        const protocol::kafka::record_view& r) {
            const std::size_t size = compact ? sub->compact.size() : w.size();
            if (n >= allowed || (n > 0 && size >= budget)) {
                return false;
            }
            if (compact) {
                sub->compact.add(t, p, r, sub->format);
            } else {
                write_stream_record(w, t, p, r, sub->format);
            }
            ++n;
            return true;
        };
        backend::api::poll_limits limits;
        limits.max_wait = st.fetch_max_wait;
        limits.max_bytes = static_cast<std::int64_t>(budget);
        limits.partition_max_bytes = static_cast<std::int32_t>(std::min<std::size_t>(budget, 1 << 30));
        auto err = co_await sub->reader->poll(sink, limits);
        if (closing_ || sub->cancelled) {
            break;
        }
        if (n > 0) {
            if (credit_mode_) {
                credit_ -= n;
            }
            std::size_t frame_bytes = 0;
            if (compact) {
                std::string frame(sub->compact.finish());
                frame_bytes = frame.size();
                send(std::move(frame));
            } else {
                w.end_array();
                w.end_object();
                frame_bytes = w.size();
                send(w.str());
            }
            // consumer_byte_rate: over the quota, the next read waits (the stream is paced).
            co_await pace_stream(ctx_.rc.chain, policy_front::websocket, http_.principal,
                                 static_cast<double>(frame_bytes));
        }
        if (err) {
            send_error(sub->key, code_of(err->code), err->message);
            break;
        }
    }
}

asio::awaitable<void> ws_session::on_produce(const json::value& msg, std::string id) {
    const auto topic = json::get_string(msg, "topic");
    if (!topic || topic->empty()) {
        send_error(id, code_of(code::bad_request), "produce needs a topic");
        co_return;
    }
    if (ctx_.rc.chain.authorizing() && !permitted(id, produce_checks(*topic))) {
        co_return;
    }
    bool base64 = false;
    if (auto f = json::get_string(msg, "format")) {
        if (*f != "string" && *f != "base64") {
            send_error(id, code_of(code::bad_request), "format must be \"string\" or \"base64\"");
            co_return;
        }
        base64 = *f == "base64";
    }
    outgoing_record rec;
    auto key = produce_bytes(json::member(msg, "key"), base64);
    if (auto* why = std::get_if<std::string>(&key)) {
        send_error(id, code_of(code::serialization), "key " + *why);
        co_return;
    }
    rec.key = std::move(std::get<0>(key));
    auto value = produce_bytes(json::member(msg, "value"), base64);
    if (auto* why = std::get_if<std::string>(&value)) {
        send_error(id, code_of(code::serialization), "value " + *why);
        co_return;
    }
    rec.value = std::move(std::get<0>(value));
    if (const auto* p = json::member(msg, "partition"); p && !p->IsNull()) {
        if (!p->IsInt() || p->GetInt() < 0) {
            send_error(id, code_of(code::bad_request), "partition must be a non-negative integer");
            co_return;
        }
        rec.partition = p->GetInt();
    }
    if (const auto* t = json::member(msg, "timestamp"); t && !t->IsNull()) {
        if (!t->IsInt64() || t->GetInt64() < 0) {
            send_error(id, code_of(code::bad_request), "timestamp must be milliseconds");
            co_return;
        }
        rec.timestamp = t->GetInt64();
    }
    if (const auto* h = json::member(msg, "headers"); h && !h->IsNull()) {
        auto add = [&](std::string_view name, const json::value* v) {
            auto bytes = produce_bytes(v, base64);
            if (std::holds_alternative<std::string>(bytes)) {
                return false;
            }
            rec.headers.emplace_back(std::string(name), std::move(std::get<0>(bytes)));
            return true;
        };
        bool ok = true;
        if (h->IsObject()) {
            for (const auto& m : h->GetObject()) {
                ok = ok && add(json::as_view(m.name), &m.value);
            }
        } else if (h->IsArray()) {
            for (const auto& e : h->GetArray()) {
                auto name = json::get_string(e, "name");
                ok = ok && name && add(*name, json::member(e, "value"));
            }
        } else {
            ok = false;
        }
        if (!ok) {
            send_error(id, code_of(code::bad_request),
                       "headers must be an object of names to values");
            co_return;
        }
    }
    // producer_byte_rate: a principal already over its quota is refused (42901).
    const double bytes = static_cast<double>(
        (rec.key ? rec.key->size() : 0) + (rec.value ? rec.value->size() : 0));
    if (const auto wait = ws_produce_throttle(ctx_.rc.chain, http_.principal, bytes);
        wait.count() > 0) {
        send_error(id, too_many_requests_code,
                   "Request rate is over the producer_byte_rate quota; retry in " +
                       std::to_string(wait.count()) + " ms");
        co_return;
    }
    std::vector<outgoing_record> records;
    records.push_back(std::move(rec));
    const std::string name(*topic);
    const producer_identity who{ctx_.rc.chain, http_requester(http_, policy_front::websocket)};
    auto res = co_await ctx_.rc.producer.produce(topic_name(name), std::move(records), &who);
    if (res.refusal == produce_refusal::unknown_topic) {
        send_error(id, code_of(code::topic_not_found), rest::topic_not_found_message);
        co_return;
    }
    if (res.refusal == produce_refusal::create_denied) {
        (void)permitted(id, {*res.denied});  // reports the denial and answers 40301
        co_return;
    }
    if (res.refusal == produce_refusal::create_failed) {
        const auto e = rest::from_backend(res.create_error, rest::subject::topic);
        send_error(id, code_of(e.code), e.message);
        co_return;
    }
    if (res.refusal == produce_refusal::unknown_partition) {
        send_error(id, code_of(code::partition_not_found), rest::partition_not_found_message);
        co_return;
    }
    const auto& r = res.records.at(0);
    if (r.error) {
        send_error(id, code_of(rest::produce_error_code(r.error)), r.error.message());
        co_return;
    }
    json::writer w;
    w.start_object();
    w.field("op", "ack");
    if (!id.empty()) {
        w.key("id");
        w.raw(id);
    }
    w.field("topic", name);
    w.field("partition", r.partition);
    w.field("offset", r.offset);
    w.end_object();
    send(w.str());
}

asio::awaitable<void> ws_session::on_commit(const json::value&, std::string id) {
    std::vector<std::shared_ptr<subscription>> grouped;
    for (auto& [k, sub] : subscriptions_) {
        if (sub->reader->has_group()) {
            grouped.push_back(sub);
        }
    }
    if (grouped.empty()) {
        send_error(id, code_of(code::illegal_state),
                   "Illegal state: commit needs a subscription with a group");
        co_return;
    }
    json::writer w;
    w.start_object();
    w.field("op", "committed");
    if (!id.empty()) {
        w.key("id");
        w.raw(id);
    }
    w.key("offsets");
    w.start_array();
    for (auto& sub : grouped) {
        auto res = co_await sub->reader->commit();
        if (auto* e = std::get_if<rest::error>(&res)) {
            send_error(id, code_of(e->code), e->message);
            co_return;
        }
        for (const auto& [k, off] : std::get<0>(res)) {
            w.start_object();
            w.field("topic", k.first.value);
            w.field("partition", k.second.value);
            w.field("offset", off);
            w.end_object();
        }
    }
    w.end_array();
    w.end_object();
    send(w.str());
}

void ws_session::on_credit(const json::value& msg, std::string id) {
    const auto* n = json::member(msg, "records");
    if (!n || !n->IsInt64() || n->GetInt64() < 1) {
        send_error(id, code_of(code::bad_request), "credit needs records: a positive integer");
        return;
    }
    credit_mode_ = true;
    credit_ = std::min(max_credit, credit_ + n->GetInt64());
    credit_changed_.notify();
}

namespace {

asio::awaitable<handler_result> serve(ws_context* ctx, http_request_context http) {
    if (!websocket::is_upgrade(http.req) || !http.stream) {
        auto res = error_response(426, "expected a WebSocket upgrade");
        res.set(beast::http::field::upgrade, "websocket");
        co_return res;
    }
    auto session = std::make_shared<ws_session>(*ctx, http);
    co_await session->run();
    co_return stream_taken{};
}

}  // namespace

void add_ws_route(router& routes, ws_context& ctx) {
    routes.add(beast::http::verb::get, "/ws",
               [c = &ctx](http_request_context http) { return serve(c, std::move(http)); });
}

}  // namespace sluice::gateway::ws
