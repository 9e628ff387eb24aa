// sqs_load: load on an SQS endpoint over the AWS JSON 1.0 protocol (plain HTTP/1.1 keep-alive
// connections, one per thread, no SDK), so that the same tool measures sluice and any SQS
// emulator alike.
//
//   sqs_load throughput --endpoint http://127.0.0.1:9324[,URL...] [--queue sqs-load]
//            [--queues 1] [--messages 200000] [--senders 4] [--receivers 4] [--size 100]
//            [--batch 10] [--cpu-pids PID,PID]
//   sqs_load latency --endpoint http://127.0.0.1:9324 [--queue sqs-latency] [--rate 1000]
//            [--seconds 10] [--receivers 2] [--size 100]
//
// throughput: creates the queue, then two phases. Send: --senders threads send --messages
// messages with SendMessageBatch (--batch per request); sent/s is messages answered over the
// phase's wall time. Receive: --receivers threads loop ReceiveMessage (10 at a time, long poll
// of 1 s) and DeleteMessageBatch of what came, until every message is deleted; received/s is
// messages deleted over that phase's wall time. Failed batch entries are counted, not retried.
// --queues N (N > 1): the queues <queue>-0 .. <queue>-(N-1), sender and receiver thread i on queue
// i % N; several endpoints (gateways of one fleet serving the same queues): thread i calls
// endpoint (i / N) % endpoints, so that every queue is reached through every endpoint when there
// are threads enough. The queues are created through the first endpoint.
// --cpu-pids: the processes serving the endpoint (a gateway and its cluster); the CPU they used
// in each phase (/proc/<pid>/stat utime + stime, summed) is reported per 1,000 messages.
// latency: one sender paces SendMessage at --rate per second for --seconds; --receivers
// threads long poll (20 s, 10 at a time) and delete. Each body carries its send time (one
// process, one steady clock), so send-to-receive latency is measured per message; the first
// second is warm-up and not counted.
// Prints the figures and one line "RESULT {json}" for scripts (scripts/run-sqs-bench). Not a
// test: nothing here gates a build.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>

#include "protocol/core/json.h"

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using clock_type = std::chrono::steady_clock;

namespace {

struct endpoint {
    std::string host;
    std::string port;
};

struct options {
    std::string mode;
    std::vector<endpoint> endpoints;
    std::string queue;
    int queues = 1;
    std::int64_t messages = 200000;
    int senders = 4;
    int receivers = 4;
    std::size_t size = 100;
    int batch = 10;
    int rate = 1000;
    int seconds = 10;
    std::vector<int> cpu_pids;
};

/// CPU seconds (user + system) the processes have used so far; 0 for one that is gone.
double cpu_seconds(const std::vector<int>& pids) {
    double total = 0;
    const double tick = static_cast<double>(sysconf(_SC_CLK_TCK));
    for (int pid : pids) {
        std::FILE* f = std::fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "r");
        if (!f) {
            continue;
        }
        char buf[4096];
        const std::size_t n = std::fread(buf, 1, sizeof buf - 1, f);
        std::fclose(f);
        buf[n] = 0;
        // Fields after the command (which may hold spaces) start after the last ')'.
        const char* p = std::strrchr(buf, ')');
        unsigned long long utime = 0;
        unsigned long long stime = 0;
        if (p && std::sscanf(p + 2,
                             "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime,
                             &stime) == 2) {
            total += static_cast<double>(utime + stime) / tick;
        }
    }
    return total;
}

[[noreturn]] void usage(const char* why) {
    std::fprintf(stderr, "sqs_load: %s\nusage: sqs_load throughput|latency --endpoint URL [...]\n", why);
    std::exit(2);
}

options parse(int argc, char** argv) {
    if (argc < 2) {
        usage("no mode");
    }
    options o;
    o.mode = argv[1];
    if (o.mode != "throughput" && o.mode != "latency") {
        usage("the mode is throughput or latency");
    }
    o.queue = o.mode == "throughput" ? "sqs-load" : "sqs-latency";
    for (int i = 2; i < argc; ++i) {
        const std::string a = argv[i];
        if (i + 1 >= argc) {
            usage("an option without its value");
        }
        const std::string v = argv[++i];
        if (a == "--endpoint") {
            o.endpoints.clear();
            for (std::size_t at = 0; at < v.size();) {
                const auto comma = v.find(',', at);
                std::string rest = v.substr(at, comma - at);
                at = comma == std::string::npos ? v.size() : comma + 1;
                rest = rest.starts_with("http://") ? rest.substr(7) : rest;
                rest = rest.substr(0, rest.find('/'));
                const auto colon = rest.rfind(':');
                if (colon == std::string::npos) {
                    usage("an endpoint needs a port");
                }
                o.endpoints.push_back({rest.substr(0, colon), rest.substr(colon + 1)});
            }
        } else if (a == "--queue") {
            o.queue = v;
        } else if (a == "--queues") {
            o.queues = std::stoi(v);
        } else if (a == "--messages") {
            o.messages = std::stoll(v);
        } else if (a == "--senders") {
            o.senders = std::stoi(v);
        } else if (a == "--receivers") {
            o.receivers = std::stoi(v);
        } else if (a == "--size") {
            o.size = std::stoul(v);
        } else if (a == "--batch") {
            o.batch = std::clamp(std::stoi(v), 1, 10);
        } else if (a == "--rate") {
            o.rate = std::stoi(v);
        } else if (a == "--seconds") {
            o.seconds = std::stoi(v);
        } else if (a == "--cpu-pids") {
            for (std::size_t at = 0; at < v.size();) {
                const auto comma = v.find(',', at);
                o.cpu_pids.push_back(std::stoi(v.substr(at, comma - at)));
                at = comma == std::string::npos ? v.size() : comma + 1;
            }
        } else {
            usage(("unknown option " + a).c_str());
        }
    }
    if (o.endpoints.empty()) {
        o.endpoints.push_back({"127.0.0.1", "9324"});
    }
    if (o.queues < 1 || o.queues > o.senders || o.queues > o.receivers) {
        usage("--queues is 1 .. the number of senders and of receivers");
    }
    return o;
}

/// One keep-alive connection to the endpoint. Not thread-safe: one per thread.
class sqs_connection {
public:
    /// To endpoint number `at` (modulo their count).
    explicit sqs_connection(const options& o, std::size_t at = 0)
        : ep_(o.endpoints[at % o.endpoints.size()]), stream_(io_) {
        asio::ip::tcp::resolver resolver(io_);
        stream_.connect(resolver.resolve(ep_.host, ep_.port));
        stream_.socket().set_option(asio::ip::tcp::no_delay(true));
    }

    /// Calls `action` with a JSON body; the parsed answer. Throws on a transport error or an
    /// answer that is not 200.
    rapidjson::Document call(const std::string& action, std::string body) {
        http::request<http::string_body> req{http::verb::post, "/", 11};
        req.set(http::field::host, ep_.host + ":" + ep_.port);
        req.set(http::field::content_type, "application/x-amz-json-1.0");
        req.set("X-Amz-Target", "AmazonSQS." + action);
        req.keep_alive(true);
        req.body() = std::move(body);
        req.prepare_payload();
        http::write(stream_, req);
        http::response<http::string_body> res;
        buffer_.clear();
        http::read(stream_, buffer_, res);
        rapidjson::Document doc;
        if (res.result_int() == 200 && res.body().empty()) {
            // An empty answer of an action with nothing to say (local-aws-sqs answers an empty
            // receive so).
            doc.SetObject();
            return doc;
        }
        if (!sluice::protocol::parse_json(doc, res.body()) || !doc.IsObject()) {
            throw std::runtime_error(action + ": not a JSON answer: " + res.body().substr(0, 200));
        }
        if (res.result_int() != 200) {
            throw std::runtime_error(action + ": HTTP " + std::to_string(res.result_int()) + ": " +
                                     res.body().substr(0, 300));
        }
        return doc;
    }

private:
    const endpoint& ep_;
    asio::io_context io_;
    beast::tcp_stream stream_;
    beast::flat_buffer buffer_;
};

std::string quoted(const std::string& s) {
    rapidjson::StringBuffer buf;
    rapidjson::Writer<rapidjson::StringBuffer> w(buf);
    w.String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
    return std::string(buf.GetString(), buf.GetSize());
}

std::string create_queue(const options& o, const std::string& name) {
    sqs_connection c(o);
    auto doc = c.call("CreateQueue", "{\"QueueName\":" + quoted(name) + "}");
    return doc["QueueUrl"].GetString();
}

/// Receipt handles of a ReceiveMessage answer, and each body.
struct received {
    std::vector<std::string> handles;
    std::vector<std::string> bodies;
};

received receive(sqs_connection& c, const std::string& url_json, int wait_seconds) {
    auto doc = c.call("ReceiveMessage", "{\"QueueUrl\":" + url_json +
                                            ",\"MaxNumberOfMessages\":10,\"WaitTimeSeconds\":" +
                                            std::to_string(wait_seconds) + "}");
    received r;
    if (doc.HasMember("Messages") && doc["Messages"].IsArray()) {
        for (const auto& m : doc["Messages"].GetArray()) {
            r.handles.emplace_back(m["ReceiptHandle"].GetString());
            r.bodies.emplace_back(m["Body"].GetString(), m["Body"].GetStringLength());
        }
    }
    return r;
}

/// Deletes them; the entries that failed.
std::size_t delete_batch(sqs_connection& c, const std::string& url_json,
                         const std::vector<std::string>& handles) {
    std::string body = "{\"QueueUrl\":" + url_json + ",\"Entries\":[";
    for (std::size_t i = 0; i < handles.size(); ++i) {
        body += (i ? ",{\"Id\":\"" : "{\"Id\":\"") + std::to_string(i) +
                "\",\"ReceiptHandle\":" + quoted(handles[i]) + "}";
    }
    body += "]}";
    auto doc = c.call("DeleteMessageBatch", std::move(body));
    return doc.HasMember("Failed") && doc["Failed"].IsArray() ? doc["Failed"].Size() : 0;
}

double seconds_since(clock_type::time_point t) {
    return std::chrono::duration<double>(clock_type::now() - t).count();
}

int run_throughput(const options& o) {
    const auto queues = static_cast<std::size_t>(o.queues);
    std::vector<std::string> url_json;  // per queue
    for (std::size_t q = 0; q < queues; ++q) {
        url_json.push_back(quoted(create_queue(
            o, queues == 1 ? o.queue : o.queue + "-" + std::to_string(q))));
    }
    // Thread i: queue i % queues, endpoint i / queues.
    auto queue_of = [&](int i) { return static_cast<std::size_t>(i) % queues; };
    auto endpoint_of = [&](int i) { return static_cast<std::size_t>(i) / queues; };
    const std::string payload(o.size, 'x');
    std::atomic<std::int64_t> claimed{0};
    std::atomic<std::int64_t> sent{0};
    std::vector<std::atomic<std::int64_t>> sent_to(queues);
    std::vector<std::atomic<std::int64_t>> deleted_from(queues);
    std::atomic<std::int64_t> send_failed{0};
    std::atomic<bool> broken{false};
    std::mutex err_mu;
    std::string first_error;
    auto fail = [&](const std::exception& e) {
        std::lock_guard lock(err_mu);
        if (first_error.empty()) {
            first_error = e.what();
        }
        broken = true;
    };

    auto cpu_each = [&] {  // per process, in --cpu-pids order
        std::vector<double> v;
        for (int pid : o.cpu_pids) {
            v.push_back(cpu_seconds({pid}));
        }
        return v;
    };
    const std::vector<double> each_at_start = cpu_each();
    const double cpu_at_start = cpu_seconds(o.cpu_pids);
    const auto send_start = clock_type::now();
    std::vector<std::thread> threads;
    for (int s = 0; s < o.senders; ++s) {
        threads.emplace_back([&, s] {
            try {
                const std::size_t q = queue_of(s);
                sqs_connection c(o, endpoint_of(s));
                while (!broken) {
                    const std::int64_t first = claimed.fetch_add(o.batch);
                    if (first >= o.messages) {
                        break;
                    }
                    const std::int64_t n = std::min<std::int64_t>(o.batch, o.messages - first);
                    std::string body = "{\"QueueUrl\":" + url_json[q] + ",\"Entries\":[";
                    for (std::int64_t i = 0; i < n; ++i) {
                        body += (i ? ",{\"Id\":\"m" : "{\"Id\":\"m") + std::to_string(i) +
                                "\",\"MessageBody\":\"" + payload + "\"}";
                    }
                    body += "]}";
                    auto doc = c.call("SendMessageBatch", std::move(body));
                    const std::int64_t failed =
                        doc.HasMember("Failed") && doc["Failed"].IsArray() ? doc["Failed"].Size() : 0;
                    sent += n - failed;
                    sent_to[q] += n - failed;
                    send_failed += failed;
                }
            } catch (const std::exception& e) {
                fail(e);
            }
        });
    }
    for (auto& t : threads) {
        t.join();
    }
    threads.clear();
    const double send_seconds = seconds_since(send_start);
    const std::vector<double> each_after_send = cpu_each();
    const double cpu_after_send = cpu_seconds(o.cpu_pids);

    std::atomic<std::int64_t> deleted{0};
    std::atomic<std::int64_t> delete_failed{0};
    const auto receive_start = clock_type::now();
    for (int r = 0; r < o.receivers && !broken; ++r) {
        threads.emplace_back([&, r] {
            try {
                const std::size_t q = queue_of(r);
                sqs_connection c(o, endpoint_of(r));
                int empty_in_a_row = 0;
                // Bounded: every message of its queue deleted, or 5 empty long polls of 1 s in
                // a row.
                while (!broken && deleted_from[q].load() < sent_to[q].load() &&
                       empty_in_a_row < 5) {
                    auto got = receive(c, url_json[q], 1);
                    if (got.handles.empty()) {
                        ++empty_in_a_row;
                        continue;
                    }
                    empty_in_a_row = 0;
                    const auto failed =
                        static_cast<std::int64_t>(delete_batch(c, url_json[q], got.handles));
                    deleted += static_cast<std::int64_t>(got.handles.size()) - failed;
                    deleted_from[q] += static_cast<std::int64_t>(got.handles.size()) - failed;
                    delete_failed += failed;
                }
            } catch (const std::exception& e) {
                fail(e);
            }
        });
    }
    for (auto& t : threads) {
        t.join();
    }
    const double receive_seconds = seconds_since(receive_start);
    const std::vector<double> each_after_receive = cpu_each();
    const double cpu_after_receive = cpu_seconds(o.cpu_pids);
    if (!first_error.empty()) {
        std::fprintf(stderr, "sqs_load: %s\n", first_error.c_str());
        return 1;
    }
    const double send_rate = static_cast<double>(sent.load()) / send_seconds;
    const double receive_rate = static_cast<double>(deleted.load()) / receive_seconds;
    std::printf("sent %lld in %.2f s: %.0f messages/s (%lld failed entries)\n",
                static_cast<long long>(sent.load()), send_seconds, send_rate,
                static_cast<long long>(send_failed.load()));
    std::printf("received and deleted %lld in %.2f s: %.0f messages/s (%lld failed deletes)\n",
                static_cast<long long>(deleted.load()), receive_seconds, receive_rate,
                static_cast<long long>(delete_failed.load()));
    // CPU of the serving processes per 1,000 messages, in ms (-1: not measured).
    const double send_cpu = o.cpu_pids.empty() || sent.load() == 0
                                ? -1
                                : (cpu_after_send - cpu_at_start) * 1e6 /
                                      static_cast<double>(sent.load());
    const double receive_cpu = o.cpu_pids.empty() || deleted.load() == 0
                                   ? -1
                                   : (cpu_after_receive - cpu_after_send) * 1e6 /
                                         static_cast<double>(deleted.load());
    // The same per process: "[send ms, receive+delete ms]" each, in --cpu-pids order.
    std::string by_pid = "[";
    for (std::size_t i = 0; i < o.cpu_pids.size(); ++i) {
        const double s = sent.load() == 0 ? -1
                                          : (each_after_send[i] - each_at_start[i]) * 1e6 /
                                                static_cast<double>(sent.load());
        const double r = deleted.load() == 0 ? -1
                                             : (each_after_receive[i] - each_after_send[i]) * 1e6 /
                                                   static_cast<double>(deleted.load());
        char cell[64];
        std::snprintf(cell, sizeof cell, "%s[%.1f,%.1f]", i ? "," : "", s, r);
        by_pid += cell;
        std::printf("  pid %d: send %.1f ms, receive+delete %.1f ms per 1,000 messages\n",
                    o.cpu_pids[i], s, r);
    }
    by_pid += "]";
    if (!o.cpu_pids.empty()) {
        std::printf("serving CPU per 1,000 messages: send %.0f ms, receive+delete %.0f ms\n",
                    send_cpu, receive_cpu);
    }
    std::printf("RESULT {\"mode\":\"throughput\",\"sent\":%lld,\"send_per_s\":%.0f,"
                "\"deleted\":%lld,\"receive_delete_per_s\":%.0f,\"send_failed\":%lld,"
                "\"delete_failed\":%lld,\"send_cpu_ms_per_1000\":%.0f,"
                "\"receive_delete_cpu_ms_per_1000\":%.0f,\"cpu_ms_per_1000_by_pid\":%s}\n",
                static_cast<long long>(sent.load()), send_rate,
                static_cast<long long>(deleted.load()), receive_rate,
                static_cast<long long>(send_failed.load()),
                static_cast<long long>(delete_failed.load()), send_cpu, receive_cpu,
                by_pid.c_str());
    return deleted.load() == sent.load() && sent.load() == o.messages ? 0 : 1;
}

int run_latency(const options& o) {
    const std::string url = create_queue(o, o.queue);
    const std::string url_json = quoted(url);
    const auto origin = clock_type::now();
    const auto warm_end = origin + std::chrono::seconds(1);
    const auto send_end = origin + std::chrono::seconds(1 + o.seconds);
    std::atomic<bool> sending{true};
    std::atomic<bool> broken{false};
    std::atomic<std::int64_t> sent{0};
    std::atomic<std::int64_t> got{0};
    std::mutex mu;
    std::vector<double> samples_ms;
    std::string first_error;
    auto fail = [&](const std::exception& e) {
        std::lock_guard lock(mu);
        if (first_error.empty()) {
            first_error = e.what();
        }
        broken = true;
    };

    std::vector<std::thread> threads;
    for (int r = 0; r < o.receivers; ++r) {
        threads.emplace_back([&] {
            try {
                sqs_connection c(o);
                std::vector<double> mine;
                // Bounded: the sender stopped and every message it sent has come.
                while (!broken && (sending || got.load() < sent.load())) {
                    auto m = receive(c, url_json, sending ? 20 : 1);
                    const auto now = clock_type::now();
                    for (const auto& body : m.bodies) {
                        const auto sent_at = clock_type::time_point(
                            clock_type::duration(std::stoll(body.substr(0, body.find(' ')))));
                        if (sent_at >= warm_end) {
                            mine.push_back(std::chrono::duration<double, std::milli>(now - sent_at).count());
                        }
                    }
                    got += static_cast<std::int64_t>(m.bodies.size());
                    if (!m.handles.empty()) {
                        (void)delete_batch(c, url_json, m.handles);
                    }
                    if (!sending && m.bodies.empty()) {
                        break;
                    }
                }
                std::lock_guard lock(mu);
                samples_ms.insert(samples_ms.end(), mine.begin(), mine.end());
            } catch (const std::exception& e) {
                fail(e);
            }
        });
    }
    try {
        sqs_connection c(o);
        const auto interval = std::chrono::nanoseconds(1000000000LL / std::max(o.rate, 1));
        auto next = clock_type::now();
        while (!broken && next < send_end) {
            std::this_thread::sleep_until(next);  // pacing the load, not synchronisation
            std::string body = std::to_string(clock_type::now().time_since_epoch().count()) + ' ';
            body.resize(std::max(body.size(), o.size), 'x');
            (void)c.call("SendMessage", "{\"QueueUrl\":" + url_json + ",\"MessageBody\":\"" + body + "\"}");
            ++sent;
            next += interval;
        }
    } catch (const std::exception& e) {
        fail(e);
    }
    sending = false;
    for (auto& t : threads) {
        t.join();
    }
    if (!first_error.empty()) {
        std::fprintf(stderr, "sqs_load: %s\n", first_error.c_str());
        return 1;
    }
    std::sort(samples_ms.begin(), samples_ms.end());
    auto pct = [&](double p) {
        if (samples_ms.empty()) {
            return 0.0;
        }
        const auto i = static_cast<std::size_t>(p * static_cast<double>(samples_ms.size() - 1));
        return samples_ms[i];
    };
    const double achieved = static_cast<double>(sent.load()) / (1.0 + o.seconds);
    std::printf("sent %lld at %.0f/s, received %lld; send-to-receive ms: p50 %.2f p99 %.2f max %.2f\n",
                static_cast<long long>(sent.load()), achieved, static_cast<long long>(got.load()),
                pct(0.5), pct(0.99), pct(1.0));
    std::printf("RESULT {\"mode\":\"latency\",\"sent\":%lld,\"received\":%lld,\"rate\":%.0f,"
                "\"p50_ms\":%.3f,\"p99_ms\":%.3f,\"max_ms\":%.3f}\n",
                static_cast<long long>(sent.load()), static_cast<long long>(got.load()), achieved,
                pct(0.5), pct(0.99), pct(1.0));
    return got.load() >= sent.load() ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
    const options o = parse(argc, argv);
    try {
        return o.mode == "throughput" ? run_throughput(o) : run_latency(o);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "sqs_load: %s\n", e.what());
        return 1;
    }
}
