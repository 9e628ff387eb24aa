// HTTP load generator for the REST front (scripts/run-bench --only http): keep-alive
// connections posting REST Proxy v2 produce requests, or v3 streamed produce requests. Not a
// Google Benchmark; plain blocking Beast clients, one thread per connection. --tls: v2 over
// HTTPS (OpenSSL through asio::ssl::stream), the server verified against --ca-file.
//
// Modes:
//   v2        N records of S bytes in requests of B records (application/vnd.kafka.binary.v2+json,
//             base64 values) over C keep-alive connections; records/s, requests/s, latency
//   v3stream  N records of S bytes over C connections, each one chunked POST of
//             /v3/clusters/{id}/topics/{t}/records sending records while a second thread reads
//             the delivery reports; records/s
//
// Output: one JSON object on a line of its own on stdout, then a human line starting with '#'.
// Every loop is bounded by its record count and by --timeout.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using steady = std::chrono::steady_clock;

[[noreturn]] void die(const std::string& what) {
    std::fprintf(stderr, "http_load: %s\n", what.c_str());
    std::exit(1);
}

struct options {
    std::string mode;
    std::string host = "127.0.0.1";
    std::string port = "8082";
    std::string topic = "bench";
    std::string cluster;  // v3: the cluster id
    std::int64_t records = 1'000'000;
    std::size_t size = 100;
    int batch = 100;
    int connections = 4;
    int timeout_s = 300;
    bool tls = false;    // v2 over HTTPS
    std::string ca_file;  // --tls: the CA that signed the server's certificate
};

void usage() {
    std::fprintf(stderr,
                 "usage: http_load v2|v3stream --port P [--host H] [--topic T] [--cluster ID]\n"
                 "       [--records N] [--size S] [--batch B] [--connections C] [--timeout S]\n"
                 "       [--tls --ca-file PEM]   (v2 only: HTTPS, the server verified by PEM)\n");
    std::exit(2);
}

options parse(int argc, char** argv) {
    if (argc < 2) {
        usage();
    }
    options o;
    o.mode = argv[1];
    for (int i = 2; i < argc; ++i) {
        const std::string a = argv[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= argc) {
                usage();
            }
            return argv[++i];
        };
        if (a == "--host") o.host = next();
        else if (a == "--port") o.port = next();
        else if (a == "--topic") o.topic = next();
        else if (a == "--cluster") o.cluster = next();
        else if (a == "--records") o.records = std::stoll(next());
        else if (a == "--size") o.size = std::stoul(next());
        else if (a == "--batch") o.batch = std::stoi(next());
        else if (a == "--connections") o.connections = std::stoi(next());
        else if (a == "--timeout") o.timeout_s = std::stoi(next());
        else if (a == "--tls") o.tls = true;
        else if (a == "--ca-file") o.ca_file = next();
        else usage();
    }
    if (o.mode != "v2" && o.mode != "v3stream") {
        usage();
    }
    if (o.tls && o.mode != "v2") {
        die("--tls: only the v2 mode speaks HTTPS (v3stream reads and writes from two threads)");
    }
    if (o.tls && o.ca_file.empty()) {
        die("--tls needs --ca-file, the CA that signed the server's certificate");
    }
    if (o.tls && !std::ifstream(o.ca_file)) {
        die("--ca-file " + o.ca_file + ": cannot be read");
    }
    return o;
}

std::string base64(const std::string& in) {
    static const char* t = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    std::size_t i = 0;
    for (; i + 3 <= in.size(); i += 3) {
        const unsigned v = (unsigned char)in[i] << 16 | (unsigned char)in[i + 1] << 8 |
                           (unsigned char)in[i + 2];
        out += t[v >> 18 & 63];
        out += t[v >> 12 & 63];
        out += t[v >> 6 & 63];
        out += t[v & 63];
    }
    if (i < in.size()) {
        unsigned v = (unsigned char)in[i] << 16;
        if (i + 1 < in.size()) {
            v |= (unsigned char)in[i + 1] << 8;
        }
        out += t[v >> 18 & 63];
        out += t[v >> 12 & 63];
        out += i + 1 < in.size() ? t[v >> 6 & 63] : '=';
        out += '=';
    }
    return out;
}

std::string payload(std::size_t size, std::int64_t i) {
    std::string v = std::to_string(i);
    v.resize(size, 'x');
    return v;
}

tcp::socket connect(asio::io_context& io, const options& o) {
    tcp::resolver resolver(io);
    tcp::socket s(io);
    asio::connect(s, resolver.resolve(o.host, o.port));
    s.set_option(tcp::no_delay(true));
    return s;
}

struct result {
    std::int64_t records = 0;
    std::int64_t requests = 0;
    std::int64_t errors = 0;
    std::vector<double> latencies_ms;
};

/// Posts `count` records in requests of `batch` over `stream` (TCP or TLS), kept alive.
template <typename Stream>
void post_v2(Stream& stream, const options& o, std::int64_t first, std::int64_t count,
             result& out) {
    beast::flat_buffer buffer;
    const std::string target = "/topics/" + o.topic;
    for (std::int64_t done = 0; done < count;) {
        const std::int64_t n = std::min<std::int64_t>(o.batch, count - done);
        std::string body = "{\"records\":[";
        for (std::int64_t k = 0; k < n; ++k) {
            if (k) {
                body += ',';
            }
            body += "{\"value\":\"" + base64(payload(o.size, first + done + k)) + "\"}";
        }
        body += "]}";
        http::request<http::string_body> req{http::verb::post, target, 11};
        req.set(http::field::host, o.host);
        req.set(http::field::content_type, "application/vnd.kafka.binary.v2+json");
        req.body() = std::move(body);
        req.prepare_payload();
        const auto t0 = steady::now();
        http::write(stream, req);
        http::response<http::string_body> res;
        http::read(stream, buffer, res);
        out.latencies_ms.push_back(
            std::chrono::duration<double, std::milli>(steady::now() - t0).count());
        if (res.result_int() != 200 || res.body().find("\"error_code\":5") != std::string::npos) {
            ++out.errors;
        }
        ++out.requests;
        out.records += n;
        done += n;
    }
}

/// The client side of HTTPS: TLS 1.2 or later, the server's certificate verified against
/// --ca-file and its name against --host. One context per connection (each runs on its own
/// thread).
asio::ssl::context tls_client_context(const options& o) {
    asio::ssl::context ctx(asio::ssl::context::tls_client);
    ctx.set_options(asio::ssl::context::no_sslv2 | asio::ssl::context::no_sslv3 |
                    asio::ssl::context::no_tlsv1 | asio::ssl::context::no_tlsv1_1);
    ctx.load_verify_file(o.ca_file);
    ctx.set_verify_mode(asio::ssl::verify_peer);
    return ctx;
}

/// One keep-alive connection posting `count` records in requests of `batch`.
void run_v2(const options& o, std::int64_t first, std::int64_t count, result& out) {
    asio::io_context io;
    if (!o.tls) {
        beast::tcp_stream stream(connect(io, o));
        post_v2(stream, o, first, count, out);
        return;
    }
    auto ctx = tls_client_context(o);
    asio::ssl::stream<tcp::socket> stream(connect(io, o), ctx);
    boost::system::error_code not_ip;
    (void)asio::ip::make_address(o.host, not_ip);
    if (not_ip && !SSL_set_tlsext_host_name(stream.native_handle(), o.host.c_str())) {
        die("TLS: cannot set the server name " + o.host);  // SNI names a host, never an IP
    }
    stream.set_verify_callback(asio::ssl::host_name_verification(o.host));
    stream.handshake(asio::ssl::stream_base::client);
    post_v2(stream, o, first, count, out);
    boost::system::error_code ec;
    stream.shutdown(ec);  // close_notify both ways; the server closes the TCP connection
}

/// One chunked POST streaming `count` records; a second thread reads the reports.
void run_v3stream(const options& o, std::int64_t first, std::int64_t count, result& out) {
    asio::io_context io;
    tcp::socket s = connect(io, o);
    const std::string head = "POST /v3/clusters/" + o.cluster + "/topics/" + o.topic +
                             "/records HTTP/1.1\r\nHost: " + o.host +
                             "\r\nContent-Type: application/json\r\n"
                             "Transfer-Encoding: chunked\r\n\r\n";
    asio::write(s, asio::buffer(head));
    std::atomic<std::int64_t> reports{0};
    std::atomic<std::int64_t> bad{0};
    std::thread reader([&] {
        // Counts the reports ("error_code":NNN) in the chunked answer; the chunk framing in
        // between does not matter. `carry` keeps a tail that may hold a split report.
        const std::string key = "\"error_code\":";
        std::string carry;
        char buf[65536];
        boost::system::error_code ec;
        while (reports.load() < count) {
            const std::size_t got = s.read_some(asio::buffer(buf), ec);
            if (ec) {
                break;
            }
            std::string text = carry + std::string(buf, got);
            std::size_t at = 0;
            std::size_t done_to = 0;
            while ((at = text.find(key, at)) != std::string::npos &&
                   at + key.size() + 3 <= text.size()) {
                if (text.compare(at + key.size(), 3, "200") != 0) {
                    ++bad;
                }
                reports.fetch_add(1);
                at += key.size() + 3;
                done_to = at;
            }
            const std::size_t keep = text.size() > 16 ? text.size() - 16 : 0;
            carry = text.substr(std::max(done_to, keep));
        }
    });
    // Records go out in chunks of `batch` records, as a streaming client writes them.
    for (std::int64_t done = 0; done < count;) {
        const std::int64_t n = std::min<std::int64_t>(o.batch, count - done);
        std::string chunk;
        for (std::int64_t k = 0; k < n; ++k) {
            chunk += "{\"value\":{\"type\":\"BINARY\",\"data\":\"" +
                     base64(payload(o.size, first + done + k)) + "\"}}";
        }
        char size_line[32];
        std::snprintf(size_line, sizeof size_line, "%zx\r\n", chunk.size());
        std::string frame = size_line + chunk + "\r\n";
        asio::write(s, asio::buffer(frame));
        done += n;
        // Stay within a window of reports behind, as a client bounding its memory would.
        while (done - reports.load() > 20 * o.batch) {
            std::this_thread::sleep_for(std::chrono::microseconds(200));
        }
    }
    asio::write(s, asio::buffer(std::string("0\r\n\r\n")));
    reader.join();
    out.records = reports.load();
    out.errors = bad.load();
    out.requests = 1;
}

}  // namespace

int main(int argc, char** argv) {
    const options o = parse(argc, argv);
    std::vector<result> results(static_cast<std::size_t>(o.connections));
    std::vector<std::thread> threads;
    const std::int64_t per = o.records / o.connections;
    const auto t0 = steady::now();
    for (int c = 0; c < o.connections; ++c) {
        threads.emplace_back([&, c] {
            try {
                if (o.mode == "v2") {
                    run_v2(o, c * per, per, results[static_cast<std::size_t>(c)]);
                } else {
                    run_v3stream(o, c * per, per, results[static_cast<std::size_t>(c)]);
                }
            } catch (const std::exception& e) {
                die(std::string("connection ") + std::to_string(c) + ": " + e.what());
            }
        });
    }
    for (auto& t : threads) {
        t.join();
    }
    const double secs = std::chrono::duration<double>(steady::now() - t0).count();
    result all;
    for (auto& r : results) {
        all.records += r.records;
        all.requests += r.requests;
        all.errors += r.errors;
        all.latencies_ms.insert(all.latencies_ms.end(), r.latencies_ms.begin(),
                                r.latencies_ms.end());
    }
    std::sort(all.latencies_ms.begin(), all.latencies_ms.end());
    auto pct = [&](double p) {
        if (all.latencies_ms.empty()) {
            return 0.0;
        }
        return all.latencies_ms[std::min(all.latencies_ms.size() - 1,
                                         static_cast<std::size_t>(p * all.latencies_ms.size()))];
    };
    std::printf(
        "{\"mode\":\"%s\",\"records\":%lld,\"requests\":%lld,\"errors\":%lld,\"seconds\":%.3f,"
        "\"records_per_s\":%.0f,\"requests_per_s\":%.0f,\"mb_per_s\":%.1f,\"p50_ms\":%.2f,"
        "\"p99_ms\":%.2f,\"connections\":%d,\"batch\":%d,\"size\":%zu}\n",
        o.mode.c_str(), (long long)all.records, (long long)all.requests, (long long)all.errors,
        secs, all.records / secs, all.requests / secs, all.records * o.size / secs / 1e6,
        pct(0.5), pct(0.99), o.connections, o.batch, o.size);
    std::printf("# %s: %lld records in %.2f s = %.0f records/s over %d connections (%lld errors)\n",
                o.mode.c_str(), (long long)all.records, secs, all.records / secs, o.connections,
                (long long)all.errors);
    return all.errors == 0 ? 0 : 1;
}
