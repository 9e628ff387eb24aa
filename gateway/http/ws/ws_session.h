// One WebSocket connection at /ws (owned by gateway/ws): JSON text frames in both directions,
// as docs/http.md ("WebSocket") describes. Client ops: subscribe, unsubscribe, produce,
// commit, credit. Server messages: subscribed, unsubscribed, records, ack, committed, error.
// A subscription's records frames are the documented default form or, when it asked for
// "encoding":"compact", compact_frame's.
//
//   reader (run)  --ops-->  subscriptions: one reader coroutine each --records frames--+
//        |                                                                           v
//        +--ack / error / committed frames--------------------------------->  outgoing queue
//                                                                                    |
//                                               writer coroutine: one frame at a time v socket
//
// Flow control: every frame goes through one outgoing queue bounded by
// websocket.queue.max.bytes; subscriptions read from the backend only while half the queue is
// free (so a client that reads nothing stops its readers, the server holds at most the queue,
// and a client that is behind gets large frames), and the reader takes no new op while the
// queue is full. With explicit credit
// ({"op":"credit","records":n}) a client never gets more records than it granted.
// Keep-alive: Beast's idle timeout with pings (a client silent for websocket.idle.timeout.ms,
// pong included, is dropped; pings go out at half that); a frame the client does not drain in
// websocket.write.timeout.ms drops it too.
//
// The router's guard has run before the upgrade: a page on an origin http.allowed.origins
// does not admit is refused with 403 (gateway/httpcore/cors.h), and so is a caller without valid
// credentials.
//
// Lifecycle: created by the /ws route handler, which awaits run(); run() returns once every
// coroutine of the session has ended. Concurrency: everything runs on the connection's
// executor (one io thread); a subscription's consumer runs its group work on its own strand.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/websocket/stream.hpp>

#include "gateway/httpcore/async_event.h"
#include "gateway/http/json.h"
#include "gateway/http/rest/rest_support.h"
#include "gateway/httpcore/router.h"
#include "gateway/http/stream_format.h"
#include "gateway/http/topic_subscription.h"
#include "gateway/http/ws/compact_frame.h"

namespace sluice::gateway {
class counter;
}

namespace sluice::gateway::ws {

/// What WebSocket sessions stand on: shared, read-only, thread-safe.
struct ws_context {
    rest::rest_context& rc;
    /// The io thread of each new subscription's consumer (its group work).
    std::function<boost::asio::any_io_executor()> next_executor;
    /// sluice_websocket_dropped_total{reason="write_timeout"} and {reason="idle_timeout"};
    /// null: not counted.
    counter* dropped_write_timeout = nullptr;
    counter* dropped_idle_timeout = nullptr;
};

class ws_session : public std::enable_shared_from_this<ws_session> {
public:
    ws_session(ws_context& ctx, http_request_context& http);
    ~ws_session();

    /// Accepts the upgrade and serves the connection until it ends.
    boost::asio::awaitable<void> run();

private:
    struct subscription {
        std::string key;                      // the client's id (raw JSON), or ""
        std::unique_ptr<topic_subscription> reader;
        stream_format format = stream_format::string;
        frame_encoding encoding = frame_encoding::records;
        compact_frame compact;  // the frame being built, with "encoding":"compact"
        bool cancelled = false;
        bool running = false;
    };

    boost::asio::awaitable<void> writer();
    /// Shutdown's first step: a close frame (going away).
    boost::asio::awaitable<void> say_goodbye();
    boost::asio::awaitable<void> read_subscription(std::shared_ptr<subscription> sub);
    boost::asio::awaitable<void> on_message(std::string text);
    boost::asio::awaitable<void> on_subscribe(const json::value& msg, std::string id);
    void on_unsubscribe(const json::value& msg, std::string id);
    boost::asio::awaitable<void> on_produce(const json::value& msg, std::string id);
    boost::asio::awaitable<void> on_commit(const json::value& msg, std::string id);
    void on_credit(const json::value& msg, std::string id);
    /// Until fewer than `limit` bytes are queued, or the session closes.
    boost::asio::awaitable<void> wait_for_room(std::size_t limit);
    void send(std::string frame);
    /// True when `checks` pass; otherwise answers the 40301 error for `id` (the session stays).
    bool permitted(const std::string& id, const acl_checks& checks);
    void send_error(const std::string& id, std::int64_t code, std::string_view message);
    void shut();
    void spawn(boost::asio::awaitable<void> task);

    ws_context& ctx_;
    http_request_context& http_;
    boost::asio::any_io_executor ex_;
    boost::beast::websocket::stream<http_stream&> ws_;
    boost::asio::steady_timer write_timer_;

    std::deque<std::string> queue_;
    std::size_t queued_bytes_ = 0;
    bool writing_done_ = false;
    bool closing_ = false;
    async_event queue_changed_;  // a frame was queued or sent, or the session is closing
    async_event credit_changed_;

    bool credit_mode_ = false;
    std::int64_t credit_ = 0;

    std::map<std::string, std::shared_ptr<subscription>> subscriptions_;
    std::size_t tasks_ = 0;  // coroutines spawned by the session still running
    async_event tasks_changed_;
};

/// Registers GET /ws on `routes`.
void add_ws_route(router& routes, ws_context& ctx);

}  // namespace sluice::gateway::ws
