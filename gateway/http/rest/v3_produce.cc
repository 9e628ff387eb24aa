// REST Proxy API v3 produce: POST /v3/clusters/{cluster_id}/topics/{topic_name}/records.
//
// The body is one record, or several concatenated ({..}{..}, whitespace between allowed):
//   {"partition_id": n?, "headers": [{"name", "value": "<base64>"|null}]?,
//    "key": {"type": "BINARY"|"JSON"|"STRING", "data": ..}?, "value": {...}?,
//    "timestamp": "2021-02-05T19:14:42Z"?}
// Each record gets one delivery report, in order: {"error_code": 200, "cluster_id",
// "topic_name", "partition_id", "offset", "timestamp", "key": {"type", "size"}, "value": ...}
// or {"error_code": 400, "message": "..."}. A missing topic is created first when
// auto.create.topics.enable is on (CREATE on the cluster or the topic needed: 403 40301
// otherwise), else 404 40403 (the v3 API's code for an unknown topic-partition).
//
// Streamed form (Transfer-Encoding: chunked): records are read as they arrive and the reports
// go back as chunks of a 200 answer while the client still sends (compat: the REST Proxy's
// streaming mode). Reading runs ahead of producing: while one group's append waits to be
// durable, the body is read and parsed on (up to a bound), and the next produce call takes
// every record parsed meanwhile, so a fast sender's records share one append and its fsync. One
// record, not chunked: its report is the answer, with the report's status. The route reads
// its body itself (a streamed-body route); a record larger than http.request.max.bytes ends
// the stream with a 413 report.
//
// POST .../records:batch (kafka-rest's produceRecordsBatch): {"entries": [{"id": "1", ...the
// fields of one record}]}, at most api.v3.produce.batch.maximum.entries; ids 1 to 80 of
// [0-9a-zA-Z-_], distinct. A batch that breaks these is refused whole (422, 42208); otherwise
// the entries are produced in one call and the answer is 207 {"successes": [{"id", ...the
// report's fields}], "failures": [{"id", "error_code", "message"}]}, each list in entry order.
// An entry that cannot be produced fails alone: a bad record (400), a negative partition_id
// (40402, "Partition not found.", as kafka-rest's batch), a partition the topic does not have
// (40403, kafka-rest's code for Kafka's UNKNOWN_TOPIC_OR_PARTITION).
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/chunk_encode.hpp>
#include <boost/beast/http/serializer.hpp>
#include <boost/beast/http/write.hpp>

#include <set>

#include "gateway/http/rest/record_json.h"
#include "gateway/http/rest/rest_routes.h"
#include "gateway/http/rest/v3_support.h"

namespace sluice::gateway::rest {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

namespace {

/// Kafka's text for UNKNOWN_TOPIC_OR_PARTITION, which kafka-rest answers with 40403.
constexpr std::string_view unknown_partition_message =
    "This server does not host this topic-partition.";
constexpr auto unknown_partition_code = static_cast<std::int32_t>(code::unknown_topic_or_partition);

/// A delivery report's error (success reports are written from the produce outcome).
struct report_error {
    std::int32_t code = 400;
    std::string message;
};

void write_error_report(json::writer& w, const report_error& e) {
    w.start_object();
    w.field("error_code", e.code);
    w.field("message", e.message);
    w.end_object();
}

void write_data_info(json::writer& w, std::string_view name, const std::optional<data_info>& d) {
    w.key(name);
    if (!d) {
        w.null();
        return;
    }
    w.start_object();
    w.field("type", d->type);
    w.field("size", static_cast<std::int64_t>(d->size));
    w.end_object();
}

/// The records of one group read together: parsed ones and errors, in body order.
using slot = std::variant<v3_record, report_error>;

/// Where one record of a group went.
struct delivered {
    std::int32_t partition = 0;
    std::int64_t offset = 0;
    std::int64_t timestamp = 0;
};
using slot_outcome = std::variant<delivered, report_error>;

/// Produces the parsed records of `slots` in one call: one outcome per slot, in order.
asio::awaitable<std::vector<slot_outcome>> produce_slot_records(rest_context* rc,
                                                                const producer_identity* who,
                                                                const std::string& topic,
                                                                std::vector<slot>& slots) {
    std::vector<outgoing_record> records;
    std::vector<std::size_t> index;  // slot -> record
    for (std::size_t i = 0; i < slots.size(); ++i) {
        if (auto* p = std::get_if<v3_record>(&slots[i])) {
            index.push_back(records.size());
            records.push_back(std::move(p->record));
        } else {
            index.push_back(static_cast<std::size_t>(-1));
        }
    }
    produce_outcome res;
    if (!records.empty()) {
        res = co_await rc->producer.produce(topic_name(topic), std::move(records), who);
    }
    std::vector<slot_outcome> out;
    out.reserve(slots.size());
    for (std::size_t i = 0; i < slots.size(); ++i) {
        if (auto* e = std::get_if<report_error>(&slots[i])) {
            out.emplace_back(*e);
            continue;
        }
        if (res.refusal == produce_refusal::unknown_topic ||
            res.refusal == produce_refusal::unknown_partition) {
            out.emplace_back(
                report_error{unknown_partition_code, std::string(unknown_partition_message)});
            continue;
        }
        if (res.refusal == produce_refusal::create_denied ||
            res.refusal == produce_refusal::create_failed) {
            const error e = res.denied ? error{code::forbidden, denial_message(*res.denied)}
                                       : from_backend(res.create_error, subject::topic);
            out.emplace_back(report_error{static_cast<std::int32_t>(e.code), e.message});
            continue;
        }
        const auto& r = res.records[index[i]];
        if (r.error) {
            const auto c = produce_error_code(r.error);
            out.emplace_back(report_error{static_cast<std::int32_t>(c), r.error.message()});
            continue;
        }
        out.emplace_back(delivered{r.partition, r.offset, r.timestamp});
    }
    co_return out;
}

/// A success report's fields after its first (error_code, or the batch entry's id).
void write_delivered(json::writer& w, const rest_context* rc, const std::string& topic,
                     const delivered& d, const v3_record& p) {
    w.field("cluster_id", rc->cluster_id);
    w.field("topic_name", topic);
    w.field("partition_id", d.partition);
    w.field("offset", d.offset);
    w.field("timestamp", format_timestamp(d.timestamp));
    write_data_info(w, "key", p.key);
    write_data_info(w, "value", p.value);
}

/// Produces the parsed records of `slots` in one call and appends one report per slot.
/// Returns the HTTP status of the last report (for the one-record answer).
asio::awaitable<unsigned> produce_slots(rest_context* rc, const producer_identity* who,
                                        const std::string& topic, std::vector<slot> slots,
                                        json::writer& w) {
    const auto outcomes = co_await produce_slot_records(rc, who, topic, slots);
    unsigned status = 200;
    for (std::size_t i = 0; i < slots.size(); ++i) {
        if (const auto* e = std::get_if<report_error>(&outcomes[i])) {
            write_error_report(w, *e);
            status = e->code < 1000 ? static_cast<unsigned>(e->code)
                                    : http_status(static_cast<code>(e->code));
            continue;
        }
        w.start_object();
        w.field("error_code", 200);
        write_delivered(w, rc, topic, std::get<delivered>(outcomes[i]),
                        std::get<v3_record>(slots[i]));
        w.end_object();
        status = 200;
    }
    co_return status;
}

/// Parses every complete record at the front of `buf` into `slots`, erasing what it used.
/// Returns a fatal report (the stream cannot be framed any more), or nullopt.
std::optional<report_error> take_records(std::string& buf, std::vector<slot>& slots,
                                         bool at_end) {
    std::size_t used = 0;
    while (true) {
        std::string_view rest = std::string_view(buf).substr(used);
        const auto first = rest.find_first_not_of(" \t\r\n");
        if (first == std::string_view::npos) {
            used = buf.size();
            break;
        }
        json::document doc;
        std::size_t consumed = 0;
        bool incomplete = false;
        if (auto why = json::parse_prefix(rest, doc, consumed, incomplete)) {
            if (incomplete && !at_end) {
                break;  // the rest of this record has not arrived yet
            }
            buf.erase(0, used);
            return report_error{400, "Malformed JSON: " + *why};
        }
        auto rec = read_v3_record(doc);
        if (auto* e = std::get_if<record_error>(&rec)) {
            slots.push_back(report_error{static_cast<std::int32_t>(e->c), std::move(e->message)});
        } else {
            slots.push_back(std::move(std::get<v3_record>(rec)));
        }
        used += consumed;
    }
    buf.erase(0, used);
    return std::nullopt;
}

/// How far the body reader of a streamed produce may run ahead: parsed records not yet taken
/// by a produce call, in body bytes.
constexpr std::size_t read_ahead_bytes = 4 << 20;

/// A wake-up between the two sides of a streamed produce, which run on one io thread: a side
/// checks its condition, then waits; the other changes the state, then notifies. No wake-up is
/// lost because nothing runs between a check and the wait that follows it.
class stream_signal {
public:
    explicit stream_signal(const asio::any_io_executor& ex) : timer_(ex) {}
    asio::awaitable<void> wait() {
        timer_.expires_at(asio::steady_timer::time_point::max());
        boost::system::error_code ec;
        co_await timer_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
    void notify() { timer_.cancel(); }

private:
    asio::steady_timer timer_;
};

/// What the body reader of a streamed produce hands the producing side.
struct read_ahead_state {
    explicit read_ahead_state(const asio::any_io_executor& ex) : parsed_ready(ex), room(ex) {}
    /// Parsed records not produced yet, in body order, and the body bytes they came from.
    std::vector<slot> parsed;
    std::size_t parsed_bytes = 0;
    /// Why the body cannot be framed any more (ends the stream after `parsed`).
    std::optional<report_error> fatal;
    bool reader_done = false;
    /// The producing side gave up (the client stopped reading its reports).
    bool stop = false;
    stream_signal parsed_ready;  // parsed, fatal or reader_done changed
    stream_signal room;          // parsed was taken, or stop
};

/// Reads and parses the body into `st` until it ends, it cannot be framed, or the producing
/// side stops; waits while `ahead_bytes` of parsed records are not taken yet.
asio::awaitable<void> read_ahead(body_reader& body, read_ahead_state& st, std::size_t max_bytes,
                                 std::size_t ahead_bytes) {
    std::string buf;
    bool more = true;
    while (more && !st.stop) {
        while (st.parsed_bytes >= ahead_bytes && !st.stop) {
            co_await st.room.wait();
        }
        if (st.stop) {
            break;
        }
        const std::uint64_t before = body.bytes_read();
        more = co_await body.read_some(buf);
        st.parsed_bytes += static_cast<std::size_t>(body.bytes_read() - before);
        auto fatal = take_records(buf, st.parsed, !more);
        if (!fatal && buf.size() > max_bytes) {
            fatal = report_error{413, "The request included a message larger than the maximum "
                                      "message size the server can accept."};
        }
        if (fatal) {
            st.fatal = std::move(fatal);
            break;
        }
        st.parsed_ready.notify();
    }
    st.reader_done = true;
    st.parsed_ready.notify();
}

/// Discards the rest of a body (bounded), so that the connection can serve the next request.
asio::awaitable<void> drain(body_reader& body, std::uint64_t limit) {
    std::string scratch;
    std::uint64_t seen = 0;
    while (seen <= limit) {
        const bool more = co_await body.read_some(scratch);
        if (!more) {
            break;
        }
        seen += scratch.size();
        scratch.clear();
    }
}

/// An answer given before the body was read: the body is drained first.
asio::awaitable<handler_result> refuse(body_reader* body, std::uint64_t limit, http_response res) {
    if (body) {
        co_await drain(*body, limit);
    }
    co_return res;
}

}  // namespace

asio::awaitable<handler_result> produce_v3(rest_context* rc, http_request_context ctx) {
    const auto max_bytes = rc->settings.limits.max_body_bytes;
    // Answers given before the body is read; built as named values (g++ 12 and temporaries in
    // the arguments of a co_await call, see backend/api/README.md).
    std::optional<http_response> early;
    const auto cluster = *ctx.params.get("cluster_id");
    const auto ct = header(ctx.req, "Content-Type");
    const std::string topic(*ctx.params.get("topic_name"));
    const producer_identity who = producer_of(*rc, ctx);
    if (cluster != rc->cluster_id) {
        early = v3_error(code::not_found, "Cluster " + std::string(cluster) + " cannot be found.");
    } else if (!ct.empty() && content_media(ct) != media::v2) {
        early = v3_error(code::unsupported_media_type, std::string(unsupported_media_type_message));
    } else {
        // The topic (created now when it is missing and may be, before the body is read).
        auto found = co_await rc->producer.ensure_topic(topic_name(topic), &who);
        if (found.refusal == produce_refusal::unknown_topic) {
            early = v3_error(code::unknown_topic_or_partition,
                             std::string(unknown_partition_message));
        } else if (found.refusal == produce_refusal::create_denied) {
            early = report_denied(*rc, ctx, *found.denied, false);
        } else if (found.refusal == produce_refusal::create_failed) {
            early = error_response(from_backend(found.create_error, subject::topic), v3_type);
        } else if (const auto length = ctx.req.payload_size();
                   !ctx.req.chunked() && length && *length > max_bytes) {
            early = v3_error(code::payload_too_large,
                             "The request included a message larger than the maximum message "
                             "size the server can accept.");
        }
    }
    if (early) {
        http_response res = std::move(*early);
        co_return co_await refuse(ctx.body, max_bytes, std::move(res));
    }
    if (!ctx.body || !ctx.req.chunked()) {
        // The whole body, then one answer.
        std::string buf = ctx.req.body();
        if (ctx.body) {
            for (;;) {
                const bool more = co_await ctx.body->read_some(buf);
                if (!more) {
                    break;
                }
            }
        }
        std::vector<slot> slots;
        auto fatal = take_records(buf, slots, true);
        if (slots.empty() && !fatal) {
            co_return v3_error(code::unprocessable,
                               "Payload error. Request body is empty. Data is required.");
        }
        json::writer w;
        const std::size_t reports = slots.size() + (fatal ? 1 : 0);
        unsigned status = co_await produce_slots(rc, &who, topic, std::move(slots), w);
        if (fatal) {
            write_error_report(w, *fatal);
            status = 400;
        }
        co_return json_response(reports == 1 ? status : 200, v3_type, w.str());
    }

    // Streamed: reports go back as chunks while records keep coming.
    auto& stream = ctx.stream->stream;
    ctx.stream->taken = true;
    http::response<http::empty_body> head{http::status::ok, ctx.req.version()};
    head.set(http::field::server, "sluice");
    head.set(http::field::content_type, std::string(v3_type));
    if (!ctx.cors_origin.empty()) {
        head.set(http::field::access_control_allow_origin, ctx.cors_origin);
    }
    head.chunked(true);
    head.keep_alive(false);
    http::response_serializer<http::empty_body> sr{head};
    const auto write_timeout = rc->settings.limits.write_timeout;
    boost::system::error_code ec;
    stream.expires_after(write_timeout);
    co_await http::async_write_header(stream, sr, asio::redirect_error(asio::use_awaitable, ec));
    if (ec) {
        co_return stream_taken{};
    }
    // The body is read beside the producing below (read_ahead), which must not return before
    // the reader has finished: the reader uses this frame's state and the connection's body.
    // On this coroutine's executor: where the router runs it (metered under a request quota).
    const auto executor = co_await asio::this_coro::executor;
    read_ahead_state st(executor);
    bool reader_finished = false;
    asio::co_spawn(executor, read_ahead(*ctx.body, st, max_bytes, read_ahead_bytes),
                   [&](std::exception_ptr) {
                       reader_finished = true;
                       st.reader_done = true;
                       st.parsed_ready.notify();
                   });
    json::writer w;
    bool broken = false;
    std::exception_ptr failure;
    try {
        while (true) {
            while (st.parsed.empty() && !st.reader_done) {
                co_await st.parsed_ready.wait();
            }
            if (st.parsed.empty()) {
                break;
            }
            std::vector<slot> group = std::move(st.parsed);
            st.parsed.clear();
            st.parsed_bytes = 0;
            st.room.notify();
            w.clear();
            co_await produce_slots(rc, &who, topic, std::move(group), w);
            stream.expires_after(write_timeout);
            co_await asio::async_write(stream, http::make_chunk(asio::buffer(w.view())),
                                       asio::redirect_error(asio::use_awaitable, ec));
            if (ec) {
                broken = true;
                break;
            }
        }
    } catch (...) {
        failure = std::current_exception();
        broken = true;
    }
    if (broken) {
        // Stop the reader (a pending read ends cancelled) and wait until it has.
        st.stop = true;
        st.room.notify();
        stream.cancel();
    }
    while (!reader_finished) {
        co_await st.parsed_ready.wait();
    }
    if (failure) {
        std::rethrow_exception(failure);
    }
    if (broken) {
        co_return stream_taken{};
    }
    if (st.fatal) {
        w.clear();
        write_error_report(w, *st.fatal);
        stream.expires_after(write_timeout);
        co_await asio::async_write(stream, http::make_chunk(asio::buffer(w.view())),
                                   asio::redirect_error(asio::use_awaitable, ec));
        if (ec) {
            co_return stream_taken{};
        }
    }
    stream.expires_after(write_timeout);
    co_await asio::async_write(stream, http::make_chunk_last(),
                               asio::redirect_error(asio::use_awaitable, ec));
    stream.expires_never();
    co_return stream_taken{};
}

namespace {

/// A batch's refusal as a whole (kafka-rest's produceBatchException): 422, code 42208.
http_response batch_refused(std::string_view message) {
    return v3_error(code::produce_batch, std::string(message));
}

/// The entry ids kafka-rest accepts: 1 to 80 of [0-9a-zA-Z-_].
bool valid_batch_id(std::string_view id) {
    if (id.empty() || id.size() > 80) {
        return false;
    }
    for (const char c : id) {
        const bool ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
                        (c >= 'A' && c <= 'Z') || c == '-' || c == '_';
        if (!ok) {
            return false;
        }
    }
    return true;
}

}  // namespace

asio::awaitable<handler_result> produce_batch_v3(rest_context* rc, http_request_context ctx) {
    if (auto bad = check_cluster(rc, ctx)) {
        co_return std::move(*bad);
    }
    const auto ct = header(ctx.req, "Content-Type");
    if (!ct.empty() && content_media(ct) != media::v2) {
        co_return v3_error(code::unsupported_media_type,
                           std::string(unsupported_media_type_message));
    }
    const std::string topic(*ctx.params.get("topic_name"));
    const std::string_view body = ctx.req.body();
    if (body.find_first_not_of(" \t\r\n") == std::string_view::npos) {
        co_return batch_refused("Request body is empty. Data is required.");
    }
    json::document doc;
    if (auto bad = parse_body(ctx.req, doc, v3_type)) {
        co_return std::move(*bad);
    }
    const auto* entries = doc.IsObject() ? json::member(doc, "entries") : nullptr;
    if (entries == nullptr || !entries->IsArray()) {
        co_return v3_error(code::bad_request, "entries (an array of records) is required");
    }
    // The whole batch is checked before anything is produced, as kafka-rest does.
    std::vector<std::string> ids;
    std::set<std::string, std::less<>> seen;
    for (const auto& e : entries->GetArray()) {
        const auto id = e.IsObject() ? json::get_string(e, "id") : std::nullopt;
        if (!id || !valid_batch_id(*id)) {
            co_return batch_refused("Batch entry identifier is not a valid string.");
        }
        if (!seen.emplace(*id).second) {
            co_return batch_refused("Batch entry IDs are not distinct.");
        }
        ids.emplace_back(*id);
    }
    if (ids.empty()) {
        co_return batch_refused("Empty batch.");
    }
    if (ids.size() > static_cast<std::size_t>(rc->settings.produce_batch_max_entries)) {
        co_return batch_refused("Too many entries in batch.");
    }
    // The topic (created now when it is missing and may be).
    const producer_identity who = producer_of(*rc, ctx);
    auto found = co_await rc->producer.ensure_topic(topic_name(topic), &who);
    if (found.refusal == produce_refusal::unknown_topic) {
        co_return v3_error(code::unknown_topic_or_partition,
                           std::string(unknown_partition_message));
    }
    if (found.refusal == produce_refusal::create_denied) {
        co_return report_denied(*rc, ctx, *found.denied, false);
    }
    if (found.refusal == produce_refusal::create_failed) {
        co_return error_response(from_backend(found.create_error, subject::topic), v3_type);
    }
    // An entry naming a partition the topic does not have fails alone, as in kafka-rest (each
    // entry is its own send there); the others are produced.
    std::vector<slot> slots;
    for (const auto& e : entries->GetArray()) {
        // A negative partition_id: kafka-rest's batch checks it first (404 40402).
        if (const auto* p = json::member(e, "partition_id"); p && p->IsInt() && p->GetInt() < 0) {
            slots.push_back(report_error{static_cast<std::int32_t>(code::partition_not_found),
                                         "Partition not found."});
            continue;
        }
        auto rec = read_v3_record(e);
        if (auto* bad = std::get_if<record_error>(&rec)) {
            slots.push_back(
                report_error{static_cast<std::int32_t>(bad->c), std::move(bad->message)});
        } else if (const auto& p = std::get<v3_record>(rec).record.partition;
                   p && *p >= found.partitions) {
            slots.push_back(
                report_error{unknown_partition_code, std::string(unknown_partition_message)});
        } else {
            slots.push_back(std::move(std::get<v3_record>(rec)));
        }
    }
    const auto outcomes = co_await produce_slot_records(rc, &who, topic, slots);
    json::writer w;
    w.start_object();
    w.key("successes");
    w.start_array();
    for (std::size_t i = 0; i < slots.size(); ++i) {
        if (const auto* d = std::get_if<delivered>(&outcomes[i])) {
            w.start_object();
            w.field("id", ids[i]);
            write_delivered(w, rc, topic, *d, std::get<v3_record>(slots[i]));
            w.end_object();
        }
    }
    w.end_array();
    w.key("failures");
    w.start_array();
    for (std::size_t i = 0; i < slots.size(); ++i) {
        if (const auto* e = std::get_if<report_error>(&outcomes[i])) {
            w.start_object();
            w.field("id", ids[i]);
            w.field("error_code", std::int64_t{e->code});
            w.field("message", e->message);
            w.end_object();
        }
    }
    w.end_array();
    w.end_object();
    co_return json_response(207, v3_type, w.str());
}

}  // namespace sluice::gateway::rest
