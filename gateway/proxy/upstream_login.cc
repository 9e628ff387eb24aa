#include "gateway/proxy/upstream_login.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include "auth/sasl/sasl_client.h"
#include "gateway/proxy/upstream_exchange.h"
#include "gateway/proxy/upstream_stream.h"
#include "protocol/kafka/messages/sasl_authenticate.h"
#include "protocol/kafka/messages/sasl_handshake.h"

namespace sluice::gateway::proxy {
namespace kafka = protocol::kafka;

namespace {

std::string login_upper(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(),
                   [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
    return s;
}

std::string login_property(const std::map<std::string, std::string>& p, const std::string& k) {
    const auto it = p.find(k);
    return it == p.end() ? std::string() : it->second;
}

/// The path of sasl.oauthbearer.token.endpoint.url=file:PATH (file:///PATH too); empty when
/// not set. Any other URL is refused: the proxy does not ask a token endpoint.
std::string upstream_token_file(const std::map<std::string, std::string>& p) {
    const std::string url = login_property(p, "sasl.oauthbearer.token.endpoint.url");
    if (url.empty()) {
        return {};
    }
    std::string path;
    std::string why;
    if (!token_file_of_url(url, path, why)) {
        throw std::invalid_argument("upstream.sasl.oauthbearer.token.endpoint.url=" + url +
                                    ": " + why);
    }
    return path;
}

/// Who a login is, for its failure lines (never a secret).
std::string login_who(const upstream_login& login) {
    return login.token_file.empty() ? "user " + login.username
                                    : "the token in " + login.token_file;
}

}  // namespace

bool token_file_of_url(std::string_view url, std::string& path, std::string& why) {
    if (!url.starts_with("file:")) {
        why = "the Kafka proxy reads tokens from file: URLs only";
        return false;
    }
    std::string_view rest = url.substr(5);
    while (rest.starts_with("//")) {
        rest.remove_prefix(1);
    }
    if (rest.empty()) {
        why = "names no file";
        return false;
    }
    path = std::string(rest);
    return true;
}

bool read_token_file(const std::string& path, std::string& token, std::string& why) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        why = "token file " + path + ": cannot read: " + std::strerror(errno);
        return false;
    }
    // A JWT is a few kilobytes; anything much larger is not a token.
    std::string text(64 * 1024 + 1, '\0');
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    text.resize(static_cast<std::size_t>(in.gcount()));
    if (in.bad()) {
        why = "token file " + path + ": cannot read";
        return false;
    }
    if (text.size() > 64 * 1024) {
        why = "token file " + path + ": larger than 64 KiB";
        return false;
    }
    const auto from = text.find_first_not_of(" \t\r\n");
    if (from == std::string::npos) {
        why = "token file " + path + ": empty";
        return false;
    }
    token = text.substr(from, text.find_last_not_of(" \t\r\n") - from + 1);
    return true;
}

upstream_login read_upstream_login(const std::map<std::string, std::string>& properties) {
    const std::string protocol = login_upper(login_property(properties, "security.protocol"));
    upstream_login out;
    if (protocol.empty() || protocol == "PLAINTEXT" || protocol == "SSL") {
        return out;
    }
    if (protocol != "SASL_PLAINTEXT" && protocol != "SASL_SSL") {
        throw std::invalid_argument("upstream.security.protocol=" + protocol +
                                    ": expected PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL");
    }
    out.mechanism = login_upper(login_property(properties, "sasl.mechanism"));
    if (out.mechanism.empty()) {
        out.mechanism = "GSSAPI";  // librdkafka's default
    }
    if (out.mechanism == "OAUTHBEARER") {
        out.token_file = upstream_token_file(properties);
        if (out.token_file.empty()) {
            throw std::invalid_argument(
                "upstream.sasl.mechanism=OAUTHBEARER: the Kafka proxy logs in with a token read "
                "from a file: set upstream.sasl.oauthbearer.token.endpoint.url=file:PATH "
                "(librdkafka's unsecured JWTs and OIDC token requests are not spoken)");
        }
        return out;
    }
    if (out.mechanism != "PLAIN" && out.mechanism != "SCRAM-SHA-256" &&
        out.mechanism != "SCRAM-SHA-512") {
        throw std::invalid_argument("upstream.sasl.mechanism=" + out.mechanism +
                                    ": the Kafka proxy logs in to the upstream with PLAIN, "
                                    "SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER only");
    }
    out.username = login_property(properties, "sasl.username");
    out.password = login_property(properties, "sasl.password");
    if (out.username.empty()) {
        throw std::invalid_argument("upstream.sasl.username: needed with "
                                    "upstream.security.protocol=" + protocol);
    }
    return out;
}

std::optional<auth::tls_client_settings> read_upstream_tls_settings(
    const std::map<std::string, std::string>& properties) {
    const std::string protocol = login_upper(login_property(properties, "security.protocol"));
    if (protocol != "SSL" && protocol != "SASL_SSL") {
        return std::nullopt;
    }
    auth::tls_client_settings s;
    // librdkafka's names; a property the proxy cannot honour stops the start rather than
    // being ignored on the proxy's connections while librdkafka's honour it.
    for (const auto& [key, value] : properties) {
        if (key == "ssl.ca.location") {
            s.ca = value;
        } else if (key == "ssl.ca.pem") {
            s.ca_pem = value;
        } else if (key == "ssl.certificate.location") {
            s.certificate = value;
        } else if (key == "ssl.certificate.pem") {
            s.certificate_pem = value;
        } else if (key == "ssl.key.location") {
            s.key = value;
        } else if (key == "ssl.key.pem") {
            s.key_pem = value;
        } else if (key == "ssl.key.password") {
            s.key_password = value;
        } else if (key == "ssl.cipher.suites") {
            s.cipher_suites = value;
        } else if (key == "ssl.curves.list") {
            s.curves = value;
        } else if (key == "ssl.sigalgs.list") {
            s.sigalgs = value;
        } else if (key == "ssl.endpoint.identification.algorithm") {
            const std::string v = login_upper(value);
            if (v != "HTTPS" && v != "NONE") {
                throw std::invalid_argument("upstream.ssl.endpoint.identification.algorithm=" +
                                            value + ": expected https or none");
            }
            s.verify_host = v == "HTTPS";
        } else if (key == "enable.ssl.certificate.verification") {
            const std::string v = login_upper(value);
            if (v != "TRUE" && v != "FALSE") {
                throw std::invalid_argument("upstream.enable.ssl.certificate.verification=" +
                                            value + ": expected true or false");
            }
            s.verify_certificate = v == "TRUE";
        } else if (key.starts_with("ssl.") || key.starts_with("ssl_")) {
            throw std::invalid_argument(
                "upstream." + key +
                ": not honoured by the Kafka proxy's upstream connections (they take "
                "ssl.ca.location/.pem, ssl.certificate.location/.pem, ssl.key.location/.pem, "
                "ssl.key.password, ssl.cipher.suites, ssl.curves.list, ssl.sigalgs.list, "
                "ssl.endpoint.identification.algorithm)");
        }
    }
    return s;
}

std::shared_ptr<auth::tls_client_context> build_upstream_tls(
    const auth::tls_client_settings& s) {
    try {
        return auth::build_client_context(s);
    } catch (const auth::tls_error& e) {
        throw std::invalid_argument(e.what());
    }
}

std::shared_ptr<auth::tls_client_context> read_upstream_tls(
    const std::map<std::string, std::string>& properties) {
    const auto settings = read_upstream_tls_settings(properties);
    if (!settings) {
        return nullptr;
    }
    try {
        return build_upstream_tls(*settings);
    } catch (const std::invalid_argument& e) {
        const std::string why = e.what();
        throw std::invalid_argument(why.starts_with("ssl.") ? "upstream." + why
                                                            : "upstream TLS: " + why);
    }
}

upstream_sasl_exchange::upstream_sasl_exchange(const upstream_login& login,
                                               std::int32_t first_correlation_id)
    : login_(login),
      correlation_id_(first_correlation_id),
      // SaslHandshake, then at most six SaslAuthenticate rounds (SCRAM needs two).
      last_correlation_id_(first_correlation_id + 6) {}

upstream_sasl_exchange::step upstream_sasl_exchange::fail(std::string why) {
    why_ = std::move(why);
    client_.reset();
    return step{state::failed, {}};
}

upstream_sasl_exchange::step upstream_sasl_exchange::start() {
    std::string secret = login_.password;
    std::string why;
    if (!login_.token_file.empty() && !read_token_file(login_.token_file, secret, why)) {
        return fail(std::move(why));
    }
    client_ = auth::make_sasl_client(login_.mechanism, login_.username, std::move(secret));
    if (!client_) {
        return fail("SASL mechanism " + login_.mechanism + " not spoken");
    }
    kafka::sasl_handshake_request hs;
    hs.mechanism = login_.mechanism;
    return step{state::sending, upstream_request(hs, 1, correlation_id_)};
}

upstream_sasl_exchange::step upstream_sasl_exchange::authenticate(std::string message) {
    if (correlation_id_ >= last_correlation_id_) {
        return fail("the SASL exchange did not end");
    }
    ++correlation_id_;
    kafka::sasl_authenticate_request req;
    const auto* bytes = reinterpret_cast<const std::byte*>(message.data());
    req.auth_bytes.assign(bytes, bytes + message.size());
    return step{state::sending, upstream_request(req, 1, correlation_id_)};
}

upstream_sasl_exchange::step upstream_sasl_exchange::on_response(protocol::bytes_view response) {
    if (!client_) {
        return fail("SASL exchange not started");
    }
    // Both responses have header v0 at v1 (correlation id only).
    if (response.size() < 4 || protocol::load_i32(response.data()) != correlation_id_) {
        return fail("malformed response header");
    }
    protocol::reader r(response.subspan(4));
    if (!shaken_) {
        kafka::sasl_handshake_response resp;
        resp.decode(r, 1);
        if (!r.ok()) {
            return fail("malformed SaslHandshake response: " + r.error().message());
        }
        if (resp.error_code != kafka::error_code::none) {
            return fail("SaslHandshake " + login_.mechanism + ": " +
                        std::string(kafka::error_name(resp.error_code)));
        }
        shaken_ = true;
        return authenticate(client_->start());
    }
    kafka::sasl_authenticate_response resp;
    resp.decode(r, 1);
    if (!r.ok()) {
        return fail("malformed SaslAuthenticate response: " + r.error().message());
    }
    if (resp.error_code != kafka::error_code::none) {
        return fail(login_who(login_) + " with " + login_.mechanism + ": " +
                    std::string(kafka::error_name(resp.error_code)) +
                    (resp.error_message ? ": " + resp.error_message->substr(0, 200)
                                        : std::string()));
    }
    const std::string reply(reinterpret_cast<const char*>(resp.auth_bytes.data()),
                            resp.auth_bytes.size());
    auto next = client_->step(reply);
    if (next.what == auth::sasl_client_step::outcome::done) {
        session_lifetime_ms_ = std::max<std::int64_t>(0, resp.session_lifetime_ms);
        client_.reset();
        return step{state::done, {}};
    }
    if (next.what == auth::sasl_client_step::outcome::failure) {
        return fail(login_who(login_) + " with " + login_.mechanism + ": " + next.reason);
    }
    return authenticate(std::move(next.message));
}

std::chrono::milliseconds reauth_delay(std::int64_t session_lifetime_ms,
                                       std::chrono::milliseconds request_timeout,
                                       double jitter) {
    const double lifetime = static_cast<double>(std::max<std::int64_t>(1, session_lifetime_ms));
    jitter = std::clamp(jitter, 0.0, 1.0);
    double at = lifetime * (0.85 + 0.10 * jitter);
    const double latest = std::max(lifetime - static_cast<double>(request_timeout.count()),
                                   lifetime / 2);
    at = std::min(at, latest);
    return std::chrono::milliseconds(std::max<std::int64_t>(1, static_cast<std::int64_t>(at)));
}

boost::asio::awaitable<bool> log_in_upstream(upstream_stream& s, const upstream_login& login,
                                             std::string& why,
                                             std::int64_t* session_lifetime_ms) {
    upstream_sasl_exchange exchange(login);
    auto next = exchange.start();
    while (next.what == upstream_sasl_exchange::state::sending) {
        const auto& buf = next.request.buffer();
        boost::system::error_code ec;
        co_await s.write(boost::asio::buffer(buf.data(), buf.size()), ec);
        std::byte prefix[4];
        if (!ec) {
            co_await s.read(boost::asio::buffer(prefix, 4), ec);
        }
        if (ec) {
            why = ec.message();
            co_return false;
        }
        const std::int32_t size = protocol::load_i32(prefix);
        if (size < 4 || size > upstream_exchange_max_response_bytes) {
            why = "response size " + std::to_string(size) + " out of range";
            co_return false;
        }
        protocol::byte_buffer frame(static_cast<std::size_t>(size));
        frame.resize(static_cast<std::size_t>(size));
        co_await s.read(boost::asio::buffer(frame.data(), frame.size()), ec);
        if (ec) {
            why = ec.message();
            co_return false;
        }
        next = exchange.on_response(frame.view());
    }
    if (next.what == upstream_sasl_exchange::state::failed) {
        why = exchange.why();
        co_return false;
    }
    if (session_lifetime_ms != nullptr) {
        *session_lifetime_ms = exchange.session_lifetime_ms();
    }
    co_return true;
}

}  // namespace sluice::gateway::proxy
