#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include "gateway/core/connection_tracker.h"
#include "gateway/core/io_pool.h"
#include "gateway/core/metrics.h"
#include "gateway/core/tcp_listener.h"

namespace sluice::gateway {
namespace {
namespace asio = boost::asio;
using asio::ip::tcp;

asio::awaitable<void> fail_at_once(tcp::socket) {
    throw std::runtime_error("a bug in the protocol");
    co_return;
}

asio::awaitable<void> greet(tcp::socket socket, std::atomic<int>* served) {
    co_await asio::async_write(socket, asio::buffer("ok\n", 3), asio::use_awaitable);
    ++*served;
}

/// Runs `io` on this thread until `done()` holds or a few seconds pass (the listener's
/// work is event-driven; the bound only keeps a broken test from hanging).
template <typename Pred>
bool drive(asio::io_context& io, Pred done, std::chrono::seconds limit = std::chrono::seconds(5)) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!done()) {
        if (std::chrono::steady_clock::now() > deadline) {
            return false;
        }
        io.run_for(std::chrono::milliseconds(2));
    }
    return true;
}

std::string read_all(tcp::socket& s) {
    std::string out;
    char buf[256];
    boost::system::error_code ec;
    for (;;) {
        const std::size_t n = s.read_some(asio::buffer(buf), ec);
        if (ec) {
            return out;
        }
        out.append(buf, n);
    }
}

/// A listener on 127.0.0.1:0 over a one-context pool that the test drives itself.
class TcpListenerTest : public ::testing::Test {
protected:
    TcpListenerTest() : tracker_(metrics_.get_gauge("open", "open connections")) {}

    void listen(connection_handler handler, std::string name = "test") {
        listener_ = std::make_unique<tcp_listener>(
            pool_, tracker_, metrics_, listener_options{name, "--test", "legacy_accepted_total"},
            endpoint{"127.0.0.1", 0}, std::move(handler));
        listener_->start();
    }

    ~TcpListenerTest() override {
        if (listener_) {
            listener_->stop();
            settle();
        }
    }

    /// Runs what is ready now and what that makes ready (the accept loop's end after stop).
    void settle() { io().run_for(std::chrono::milliseconds(20)); }

    asio::io_context& io() { return pool_.context(0); }
    tcp::endpoint where() const { return listener_->local_endpoint(); }
    std::uint64_t value(const std::string& name) {
        return metrics_.get_counter(name, "", {{"listener", "test"}}).value();
    }

    io_pool pool_{1};
    metrics_registry metrics_;
    connection_tracker tracker_;
    std::unique_ptr<tcp_listener> listener_;
    asio::io_context client_io_;
};

TEST_F(TcpListenerTest, ThrowingConnectionIsCountedAndTheListenerKeepsAccepting) {
    std::atomic<int> served = 0;
    int opened = 0;
    listen([&](tcp::socket socket, std::uint64_t) {
        ++opened;
        if (opened == 1) {
            return connection_session{fail_at_once(std::move(socket)), [](stop_mode) {}};
        }
        return connection_session{greet(std::move(socket), &served), [](stop_mode) {}};
    });

    tcp::socket first(client_io_);
    first.connect(where());
    ASSERT_TRUE(drive(io(), [&] { return value("sluice_connection_failures_total") == 1; }));
    EXPECT_EQ(read_all(first), "");  // closed without an answer

    tcp::socket second(client_io_);
    second.connect(where());
    ASSERT_TRUE(drive(io(), [&] { return served == 1 && tracker_.size() == 0; }));
    EXPECT_EQ(read_all(second), "ok\n");

    EXPECT_EQ(value("sluice_connection_failures_total"), 1u);
    EXPECT_EQ(value("sluice_connections_accepted_total"), 2u);
    EXPECT_EQ(metrics_.get_counter("legacy_accepted_total", "").value(), 2u);
    const std::string text = metrics_.render();
    EXPECT_NE(text.find("sluice_connection_failures_total{listener=\"test\"} 1"),
              std::string::npos);
}

TEST_F(TcpListenerTest, ThrowingConnectionHandlerIsCountedToo) {
    listen([](tcp::socket, std::uint64_t) -> connection_session {
        throw std::runtime_error("cannot build the session");
    });
    tcp::socket client(client_io_);
    client.connect(where());
    ASSERT_TRUE(drive(io(), [&] { return value("sluice_connection_failures_total") == 1; }));
    EXPECT_EQ(tracker_.size(), 0u);
    EXPECT_EQ(read_all(client), "");
}

/// Serves until its stop function is called, then records the mode and ends.
struct stoppable {
    std::vector<stop_mode> modes;
    std::shared_ptr<tcp::socket> socket;
};

asio::awaitable<void> wait_for_close(std::shared_ptr<tcp::socket> socket) {
    char byte;
    boost::system::error_code ec;
    co_await socket->async_read_some(asio::buffer(&byte, 1),
                                     asio::redirect_error(asio::use_awaitable, ec));
}

TEST_F(TcpListenerTest, TrackerStopReachesTheProtocolsStopFunction) {
    stoppable conn;
    std::uint64_t seen_id = 0;
    listen([&](tcp::socket socket, std::uint64_t id) {
        seen_id = id;
        conn.socket = std::make_shared<tcp::socket>(std::move(socket));
        auto s = conn.socket;
        return connection_session{wait_for_close(s), [&conn, s](stop_mode mode) {
                                      conn.modes.push_back(mode);
                                      asio::post(s->get_executor(), [s] {
                                          boost::system::error_code ec;
                                          s->close(ec);
                                      });
                                  }};
    });
    tcp::socket client(client_io_);
    client.connect(where());
    ASSERT_TRUE(drive(io(), [&] { return conn.socket != nullptr && tracker_.size() == 1; }));
    EXPECT_NE(seen_id, 0u);

    tracker_.stop_all(stop_mode::finish);
    ASSERT_TRUE(drive(io(), [&] { return tracker_.size() == 0; }));
    ASSERT_EQ(conn.modes.size(), 1u);
    EXPECT_EQ(conn.modes[0], stop_mode::finish);
    EXPECT_EQ(value("sluice_connection_failures_total"), 0u);
}

TEST_F(TcpListenerTest, StopClosesThePort) {
    std::atomic<int> served = 0;
    listen([&](tcp::socket socket, std::uint64_t) {
        return connection_session{greet(std::move(socket), &served), [](stop_mode) {}};
    });
    const auto ep = where();
    listener_->stop();
    settle();
    tcp::socket client(client_io_);
    boost::system::error_code ec;
    client.connect(ep, ec);
    EXPECT_EQ(ec, asio::error::connection_refused);
}

TEST_F(TcpListenerTest, BindFailureNamesTheFlagAndTheAddress) {
    listen([](tcp::socket, std::uint64_t) -> connection_session { throw std::logic_error("x"); });
    const auto port = where().port();
    try {
        tcp_listener second(pool_, tracker_, metrics_, listener_options{"second", "--second", ""},
                            endpoint{"127.0.0.1", port}, nullptr);
        FAIL() << "bound a port in use";
    } catch (const std::runtime_error& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("--second"), std::string::npos) << what;
        EXPECT_NE(what.find("127.0.0.1:" + std::to_string(port)), std::string::npos) << what;
    }
    try {
        tcp_listener bad(pool_, tracker_, metrics_, listener_options{"bad", "--bad", ""},
                         endpoint{"no.such.host", 0}, nullptr);
        FAIL() << "listened on a host name";
    } catch (const std::runtime_error& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("--bad"), std::string::npos) << what;
        EXPECT_NE(what.find("no.such.host"), std::string::npos) << what;
    }
}

TEST_F(TcpListenerTest, AListenerTakesTheSocketBoundBeforeStartUp) {
    // run_server binds every port before it touches the disk; the listeners built later
    // serve those sockets. Two listeners on port 0: each takes one of the two sockets.
    listening_sockets early;
    early.bind(endpoint{"127.0.0.1", 0}, "--test");
    early.bind(endpoint{"127.0.0.1", 0}, "--test");
    EXPECT_THROW(early.bind(endpoint{"no.such.host", 0}, "--test"), std::runtime_error);
    pool_.adopt_listening_sockets(std::move(early));
    std::atomic<int> served = 0;
    listen([&](tcp::socket socket, std::uint64_t) {
        return connection_session{greet(std::move(socket), &served), [](stop_mode) {}};
    });
    tcp_listener second(pool_, tracker_, metrics_, listener_options{"second", "--second", ""},
                        endpoint{"127.0.0.1", 0}, nullptr);
    EXPECT_NE(where().port(), second.local_endpoint().port());
    EXPECT_EQ(pool_.take_listening_socket(tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)),
              -1);  // both taken
    tcp::socket client(client_io_);
    client.connect(where());
    ASSERT_TRUE(drive(io(), [&] { return served == 1; }));
    EXPECT_EQ(read_all(client), "ok\n");
}

TEST(ListeningSockets, APortInUseNamesTheFlagAndTheAddress) {
    listening_sockets early;
    early.bind(endpoint{"127.0.0.1", 0}, "--kafka");
    const tcp::endpoint any(asio::ip::make_address("127.0.0.1"), 0);
    const int fd = early.take(any);
    ASSERT_GE(fd, 0);
    asio::io_context io;
    tcp::acceptor held(io);
    held.assign(tcp::v4(), fd);
    const auto port = held.local_endpoint().port();
    try {
        early.bind(endpoint{"127.0.0.1", port}, "--http");
        FAIL() << "bound a port in use";
    } catch (const std::runtime_error& e) {
        EXPECT_EQ(std::string(e.what()), "--http: cannot listen on 127.0.0.1:" +
                                             std::to_string(port) + ": Address already in use");
    }
    EXPECT_EQ(early.take(any), -1);
}

TEST_F(TcpListenerTest, LocalhostListensOnLoopback) {
    tcp_listener local(pool_, tracker_, metrics_, listener_options{"local", "--local", ""},
                       endpoint{"localhost", 0}, nullptr);
    EXPECT_EQ(local.local_endpoint().address().to_string(), "127.0.0.1");
    EXPECT_NE(local.local_endpoint().port(), 0);
}

/// The child of AcceptErrorsBackOffAndRecover: listens, tells the parent its port, runs out
/// of descriptors so that accept fails with EMFILE, then gets them back. Exit code 0 when
/// the accept errors were counted and the connection was then served.
int out_of_descriptors_child(int report_fd) {
    alarm(20);  // never outlive a broken test
    io_pool pool(1);
    metrics_registry metrics;
    connection_tracker tracker(metrics.get_gauge("open", "open"));
    std::atomic<int> served = 0;
    tcp_listener listener(pool, tracker, metrics, listener_options{"test", "--test", ""},
                          endpoint{"127.0.0.1", 0}, [&](tcp::socket socket, std::uint64_t) {
                              return connection_session{greet(std::move(socket), &served),
                                                        [](stop_mode) {}};
                          });
    auto& errors = metrics.get_counter("sluice_accept_errors_total", "", {{"listener", "test"}});
    listener.start();

    rlimit saved{};
    ::getrlimit(RLIMIT_NOFILE, &saved);
    const int lowest_free = ::open("/dev/null", O_RDONLY);
    ::close(lowest_free);
    rlimit starved = saved;
    starved.rlim_cur = static_cast<rlim_t>(lowest_free);  // every descriptor below is in use
    const std::uint16_t port = listener.local_endpoint().port();
    if (::write(report_fd, &port, sizeof port) != sizeof port ||
        ::setrlimit(RLIMIT_NOFILE, &starved) != 0) {
        return 3;
    }
    // The parent connects now; each accept fails until the limit is restored.
    auto& io = pool.context(0);
    if (!drive(io, [&] { return errors.value() >= 3; }, std::chrono::seconds(10))) {
        return 4;
    }
    ::setrlimit(RLIMIT_NOFILE, &saved);
    if (!drive(io, [&] { return served == 1; }, std::chrono::seconds(10))) {
        return 5;
    }
    listener.stop();
    io.run_for(std::chrono::milliseconds(20));
    return 0;
}

TEST(TcpListener, AcceptErrorsBackOffAndRecover) {
#if defined(__SANITIZE_ADDRESS__)
    // The sanitizer runtime opens files to check a pointer (UBSan's vptr check reads
    // /proc/self/maps): in a process with no descriptor left it reports false errors. The
    // Release run of this test covers the behaviour.
    GTEST_SKIP() << "a process out of descriptors breaks the sanitizers' own checks";
#endif
    int report[2];
    ASSERT_EQ(::pipe(report), 0);
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        ::close(report[0]);
        ::_exit(out_of_descriptors_child(report[1]));
    }
    ::close(report[1]);
    std::uint16_t port = 0;
    ASSERT_EQ(::read(report[0], &port, sizeof port), static_cast<ssize_t>(sizeof port));
    ::close(report[0]);

    asio::io_context io;
    tcp::socket client(io);
    client.connect(tcp::endpoint(asio::ip::address_v4::loopback(), port));
    const std::string got = read_all(client);

    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status)) << "child status " << status;
    EXPECT_EQ(WEXITSTATUS(status), 0);
    EXPECT_EQ(got, "ok\n");
}

}  // namespace
}  // namespace sluice::gateway
