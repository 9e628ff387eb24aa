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
    if (!url.starts_with("file:")) {
        throw std::invalid_argument("upstream.sasl.oauthbearer.token.endpoint.url=" + url +
                                    ": the Kafka proxy reads tokens from file: URLs only");
    }
    std::string path = url.substr(5);
    while (path.starts_with("//")) {
        path.erase(0, 1);
    }
    if (path.empty()) {
        throw std::invalid_argument("upstream.sasl.oauthbearer.token.endpoint.url=" + url +
                                    ": names no file");
    }
    return path;
}

/// The token in `path`: its text, blanks and line ends around it removed. False with `why`.
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

/// Who a login is, for its failure lines (never a secret).
std::string login_who(const upstream_login& login) {
    return login.token_file.empty() ? "user " + login.username
                                    : "the token in " + login.token_file;
}

}  // namespace

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

boost::asio::awaitable<bool> log_in_upstream(upstream_stream& s, const upstream_login& login,
                                             std::string& why) {
    std::string secret = login.password;
    if (!login.token_file.empty() && !read_token_file(login.token_file, secret, why)) {
        co_return false;
    }
    auto client = auth::make_sasl_client(login.mechanism, login.username, std::move(secret));
    if (!client) {
        why = "SASL mechanism " + login.mechanism + " not spoken";
        co_return false;
    }
    kafka::sasl_handshake_request hs;
    hs.mechanism = login.mechanism;
    const auto shaken =
        co_await upstream_exchange<kafka::sasl_handshake_response>(s, hs, 1, 1, why);
    if (!shaken) {
        co_return false;
    }
    if (shaken->error_code != kafka::error_code::none) {
        why = "SaslHandshake " + login.mechanism + ": " +
              std::string(kafka::error_name(shaken->error_code));
        co_return false;
    }
    std::string message = client->start();
    for (std::int32_t correlation_id = 2; correlation_id < 8; ++correlation_id) {
        kafka::sasl_authenticate_request req;
        const auto* bytes = reinterpret_cast<const std::byte*>(message.data());
        req.auth_bytes.assign(bytes, bytes + message.size());
        const auto resp = co_await upstream_exchange<kafka::sasl_authenticate_response>(
            s, req, 1, correlation_id, why);
        if (!resp) {
            co_return false;
        }
        if (resp->error_code != kafka::error_code::none) {
            why = login_who(login) + " with " + login.mechanism + ": " +
                  std::string(kafka::error_name(resp->error_code)) +
                  (resp->error_message ? ": " + resp->error_message->substr(0, 200)
                                       : std::string());
            co_return false;
        }
        const std::string reply(reinterpret_cast<const char*>(resp->auth_bytes.data()),
                                resp->auth_bytes.size());
        const auto next = client->step(reply);
        if (next.what == auth::sasl_client_step::outcome::done) {
            co_return true;
        }
        if (next.what == auth::sasl_client_step::outcome::failure) {
            why = login_who(login) + " with " + login.mechanism + ": " + next.reason;
            co_return false;
        }
        message = next.message;
    }
    why = "the SASL exchange did not end";
    co_return false;
}

}  // namespace sluice::gateway::proxy
