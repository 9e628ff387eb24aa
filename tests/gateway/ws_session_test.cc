// The WebSocket session (gateway/http/ws/ws_session) over the fake backend. A session runs only on a
// connection, so each test serves /ws through a real http_connection on 127.0.0.1 (port 0) and
// talks to it with Beast's WebSocket client, all on one io_context in this thread.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/websocket/stream.hpp>

#include "gateway/httpcore/http_connection.h"
#include "gateway/http/http_settings.h"
#include "gateway/http/record_producer.h"
#include "gateway/core/metrics.h"
#include "gateway/http/ws/ws_session.h"

#include "tests/gateway/fake_backend.h"
#include "tests/gateway/fake_client.h"
#include "tests/gateway/front_support.h"

namespace sluice::gateway::ws {
namespace {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
using testing::fake_call;
namespace api = backend::api;
using client_stream = websocket::stream<beast::tcp_stream>;

class WsSession : public ::testing::Test {
public:
    WsSession()
        : producer(*client_level, api::acks::all),
          rc{settings, "cluster-1", 0, producer, {},
             client_level.get()},
          wsctx{rc, [this] { return asio::any_io_executor(io.get_executor()); }},
          acceptor(io, {asio::ip::make_address("127.0.0.1"), 0}) {
        settings.streams.fetch_max_wait = std::chrono::milliseconds(20);
        fake.add_topic("events", 1);
        add_ws_route(routes, wsctx);
    }

    using body = asio::awaitable<void> (*)(WsSession*, client_stream&);

    /// Serves one connection and runs `test` as its client; fails after 20 s of no end.
    void run(body test) {
        asio::co_spawn(io, serve_one(this), asio::detached);
        bool done = false;
        std::exception_ptr failure;
        asio::co_spawn(io, client(this, test), [&](std::exception_ptr e) {
            failure = e;
            done = true;
        });
        io.run_for(std::chrono::seconds(20));
        ASSERT_TRUE(done) << "the test did not end";
        if (failure) {
            std::rethrow_exception(failure);
        }
    }

    static asio::awaitable<void> serve_one(WsSession* t) {
        auto socket = co_await t->acceptor.async_accept(asio::use_awaitable);
        auto conn = std::make_shared<http_connection>(std::move(socket), 1, t->routes,
                                                      t->requests, http_limits{});
        co_await conn->run();
    }

    static asio::awaitable<void> client(WsSession* t, body test) {
        client_stream ws(co_await asio::this_coro::executor);
        co_await beast::get_lowest_layer(ws).async_connect(t->acceptor.local_endpoint(),
                                                           asio::use_awaitable);
        co_await ws.async_handshake("localhost", "/ws", asio::use_awaitable);
        co_await test(t, ws);
        if (!ws.is_open()) {
            co_return;  // the server closed
        }
        boost::system::error_code ec;
        co_await ws.async_close(websocket::close_code::normal,
                                asio::redirect_error(asio::use_awaitable, ec));
        // Drain until the server's close arrives.
        beast::flat_buffer b;
        while (!ec) {
            co_await ws.async_read(b, asio::redirect_error(asio::use_awaitable, ec));
        }
    }

    testing::fake_backend fake;
    std::unique_ptr<backend::api::client> client_level = testing::client_over(fake);
    http_settings settings;
    record_producer producer;
    rest::rest_context rc;
    asio::io_context io;
    ws_context wsctx;
    router routes;
    metrics_registry metrics;
    counter& requests = metrics.get_counter("test_requests_total", "requests");
    asio::ip::tcp::acceptor acceptor;
};

asio::awaitable<void> send(client_stream& ws, std::string text) {
    ws.text(true);
    co_await ws.async_write(asio::buffer(text), asio::use_awaitable);
}

asio::awaitable<json::document> next_frame(client_stream& ws) {
    beast::flat_buffer b;
    co_await ws.async_read(b, asio::use_awaitable);
    json::document doc;
    const auto text = beast::buffers_to_string(b.data());
    EXPECT_FALSE(json::parse(text, doc).has_value()) << text;
    co_return doc;
}

asio::awaitable<void> sleep_for(std::chrono::milliseconds d) {
    asio::steady_timer timer(co_await asio::this_coro::executor, d);
    co_await timer.async_wait(asio::use_awaitable);
}

std::string_view op_of(const json::document& d) { return json::as_view(d["op"]); }

// --- produce -----------------------------------------------------------------------------------

asio::awaitable<void> produce_acks(WsSession* t, client_stream& ws) {
    co_await send(ws, R"({"op":"produce","id":7,"topic":"events","key":"k","value":{"n":1},)"
                      R"("headers":{"h":"v"}})");
    auto ack = co_await next_frame(ws);
    EXPECT_EQ(op_of(ack), "ack");
    EXPECT_EQ(ack["id"].GetInt(), 7);
    EXPECT_EQ(ack["offset"].GetInt64(), 0);
    const auto& got = t->fake.state().produced;
    EXPECT_EQ(got.size(), 1u);
    if (!got.empty()) {
        EXPECT_EQ(got[0].key, "k");
        EXPECT_EQ(got[0].value, R"({"n":1})");
        EXPECT_EQ(got[0].headers.size(), 1u);
    }
}

TEST_F(WsSession, ProduceIsAckedWithWhatTheBackendStored) { run(produce_acks); }

asio::awaitable<void> produce_errors(WsSession* t, client_stream& ws) {
    t->fake.script().fail_next(fake_call::produce, api::errc::storage_error, "disk full");
    co_await send(ws, R"({"op":"produce","id":"a","topic":"events","value":"x"})");
    auto e = co_await next_frame(ws);
    EXPECT_EQ(op_of(e), "error");
    EXPECT_EQ(json::as_view(e["id"]), "a");
    EXPECT_EQ(e["code"].GetInt(), 50701);
    co_await send(ws, R"({"op":"produce","id":"b","topic":"nope","value":"x"})");
    e = co_await next_frame(ws);
    EXPECT_EQ(e["code"].GetInt(), 40401);
    co_await send(ws, R"({"op":"produce","id":"c","topic":"events","partition":-1})");
    e = co_await next_frame(ws);
    EXPECT_EQ(e["code"].GetInt(), 400);
    co_await send(ws, R"({"op":"produce","id":"d","topic":"events","format":"base64",)"
                      R"("value":"@@"})");
    e = co_await next_frame(ws);
    EXPECT_EQ(e["code"].GetInt(), 42207);
    // The session is still there, and only the first reached the backend's produce.
    EXPECT_EQ(t->fake.script().count(fake_call::produce), 1u);
}

TEST_F(WsSession, ProduceErrorsAreErrorFramesAndTheSessionGoesOn) { run(produce_errors); }

// --- subscribe, credit -------------------------------------------------------------------------

asio::awaitable<void> seed_records(WsSession* t, int n) {
    for (int i = 0; i < n; ++i) {
        std::vector<outgoing_record> one(1);
        one[0].value = "r" + std::to_string(i);
        one[0].partition = 0;
        co_await t->producer.produce(topic_name("events"), std::move(one));
    }
}

asio::awaitable<void> credit_bounds_records(WsSession* t, client_stream& ws) {
    co_await seed_records(t, 5);
    co_await send(ws, R"({"op":"subscribe","id":"s","topic":"events","from":"earliest",)"
                      R"("credit":2})");
    auto f = co_await next_frame(ws);
    EXPECT_EQ(op_of(f), "subscribed");
    std::size_t got = 0;
    while (got < 2) {
        f = co_await next_frame(ws);
        EXPECT_EQ(op_of(f), "records");
        got += f["records"].Size();
    }
    EXPECT_EQ(got, 2u);
    // Out of credit: several fetch waits pass and no records come; the next frame is the
    // answer to what the client asks next.
    co_await sleep_for(std::chrono::milliseconds(150));
    co_await send(ws, R"({"op":"unknown-op","id":"probe"})");
    f = co_await next_frame(ws);
    EXPECT_EQ(op_of(f), "error");
    EXPECT_EQ(json::as_view(f["id"]), "probe");
    co_await send(ws, R"({"op":"credit","records":10})");
    while (got < 5) {
        f = co_await next_frame(ws);
        EXPECT_EQ(op_of(f), "records");
        if (op_of(f) != "records") {
            break;
        }
        got += f["records"].Size();
    }
    EXPECT_EQ(got, 5u);
    EXPECT_EQ(json::as_view(f["records"][f["records"].Size() - 1]["value"]), "r4");
}

TEST_F(WsSession, CreditBoundsTheRecordsSent) { run(credit_bounds_records); }

asio::awaitable<void> subscribe_errors(WsSession* t, client_stream& ws) {
    co_await send(ws, R"({"op":"subscribe","id":1,"topic":"nope"})");
    auto e = co_await next_frame(ws);
    EXPECT_EQ(op_of(e), "error");
    EXPECT_EQ(e["code"].GetInt(), 40401);
    t->fake.script().fail_next(fake_call::list_offsets, api::errc::storage_error);
    co_await send(ws, R"({"op":"subscribe","id":2,"topic":"events"})");
    e = co_await next_frame(ws);
    EXPECT_EQ(e["code"].GetInt(), 50701);
    co_await send(ws, R"({"op":"subscribe","id":3,"topic":"events","from":"yesterday"})");
    e = co_await next_frame(ws);
    EXPECT_EQ(e["code"].GetInt(), 400);
    co_await send(ws, R"({"op":"subscribe","id":4,"topic":"events","credit":-1})");
    e = co_await next_frame(ws);
    EXPECT_EQ(e["code"].GetInt(), 400);
    // A fetch failure while reading ends that subscription with an error frame.
    t->fake.script().fail_next(fake_call::fetch, api::errc::storage_error);
    co_await send(ws, R"({"op":"subscribe","id":5,"topic":"events"})");
    e = co_await next_frame(ws);
    EXPECT_EQ(op_of(e), "subscribed");
    e = co_await next_frame(ws);
    EXPECT_EQ(op_of(e), "error");
    EXPECT_EQ(e["id"].GetInt(), 5);
    EXPECT_EQ(e["code"].GetInt(), 50701);
}

TEST_F(WsSession, SubscribeErrorsFromTheRequestAndTheBackend) { run(subscribe_errors); }

// --- commit ------------------------------------------------------------------------------------

asio::awaitable<void> group_commit(WsSession* t, client_stream& ws) {
    co_await send(ws, R"({"op":"commit","id":"c0"})");
    auto f = co_await next_frame(ws);
    EXPECT_EQ(f["code"].GetInt(), 40903);  // no subscription with a group
    co_await seed_records(t, 3);
    co_await send(ws, R"({"op":"subscribe","id":"s","topic":"events","group":"g",)"
                      R"("from":"earliest"})");
    f = co_await next_frame(ws);
    EXPECT_EQ(op_of(f), "subscribed");
    std::size_t got = 0;
    while (got < 3) {
        f = co_await next_frame(ws);
        EXPECT_EQ(op_of(f), "records");
        got += f["records"].Size();
    }
    co_await send(ws, R"({"op":"commit","id":"c1"})");
    f = co_await next_frame(ws);
    EXPECT_EQ(op_of(f), "committed");
    EXPECT_EQ(f["offsets"].Size(), 1u);
    EXPECT_EQ(f["offsets"][0]["offset"].GetInt64(), 3);
    const auto& commits = t->fake.state().commits;
    EXPECT_EQ(commits.size(), 1u);
    if (!commits.empty()) {
        EXPECT_EQ(commits[0].group_id.value, "g");
        EXPECT_EQ(commits[0].topics.at(0).partitions.at(0).committed.value, 3);
    }
    // A commit the backend refuses is an error frame.
    t->fake.script().fail_next(fake_call::commit_offsets, api::errc::coordinator_not_available);
    co_await send(ws, R"({"op":"commit","id":"c2"})");
    f = co_await next_frame(ws);
    EXPECT_EQ(op_of(f), "error");
    EXPECT_EQ(json::as_view(f["id"]), "c2");
}

TEST_F(WsSession, CommitThroughTheGroupMember) { run(group_commit); }

// --- bad frames --------------------------------------------------------------------------------

asio::awaitable<void> bad_frames(WsSession*, client_stream& ws) {
    co_await send(ws, "{not json");
    auto e = co_await next_frame(ws);
    EXPECT_EQ(e["code"].GetInt(), 400);
    EXPECT_NE(json::as_view(e["message"]).find("Malformed JSON"), std::string_view::npos);
    co_await send(ws, "[1,2]");
    e = co_await next_frame(ws);
    EXPECT_EQ(e["code"].GetInt(), 400);
    co_await send(ws, R"({"id":{"x":1},"op":"credit"})");
    e = co_await next_frame(ws);
    EXPECT_EQ(e["code"].GetInt(), 400);
    co_await send(ws, R"({"op":"credit","records":0})");
    e = co_await next_frame(ws);
    EXPECT_EQ(e["code"].GetInt(), 400);
    ws.binary(true);
    const std::string bytes = "\x01\x02";
    co_await ws.async_write(asio::buffer(bytes), asio::use_awaitable);
    e = co_await next_frame(ws);
    EXPECT_NE(json::as_view(e["message"]).find("binary frames"), std::string_view::npos);
}

TEST_F(WsSession, BadFramesAreAnsweredAndTheSessionStays) { run(bad_frames); }

asio::awaitable<void> invalid_utf8(WsSession*, client_stream& ws) {
    ws.text(true);
    const std::string bad = "{\"op\":\"\xff\xfe\"}";
    co_await ws.async_write(asio::buffer(bad), asio::use_awaitable);
    beast::flat_buffer b;
    boost::system::error_code ec;
    co_await ws.async_read(b, asio::redirect_error(asio::use_awaitable, ec));
    EXPECT_TRUE(ec == websocket::error::closed) << ec.message();
    EXPECT_EQ(ws.reason().code, 1007);  // bad payload
}

TEST_F(WsSession, TextThatIsNotUtf8ClosesWith1007) { run(invalid_utf8); }

}  // namespace
}  // namespace sluice::gateway::ws
