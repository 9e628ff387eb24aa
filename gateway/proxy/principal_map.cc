#include "gateway/proxy/principal_map.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>

namespace sluice::gateway::proxy {
namespace {

constexpr std::string_view map_blanks = " \t\r";

std::string_view map_trim(std::string_view s) {
    const auto from = s.find_first_not_of(map_blanks);
    if (from == std::string_view::npos) {
        return {};
    }
    return s.substr(from, s.find_last_not_of(map_blanks) - from + 1);
}

/// The next blank-separated word of `s`, removed from it.
std::string_view map_word(std::string_view& s) {
    s = map_trim(s);
    const auto end = std::min(s.find_first_of(map_blanks), s.size());
    const std::string_view w = s.substr(0, end);
    s = s.substr(end);
    return w;
}

/// `name` as given, or in `dir` when relative.
std::string map_file_name(std::string_view name, const std::string& dir) {
    if (name.front() == '/' || dir.empty()) {
        return std::string(name);
    }
    return dir + "/" + std::string(name);
}

}  // namespace

principal_map principal_map::load(const std::string& path, bool deny_unmapped,
                                  const principal_map_upstream& upstream) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        throw std::invalid_argument("proxy.principal.map " + path +
                                    ": cannot read: " + std::strerror(errno));
    }
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (in.bad()) {
        throw std::invalid_argument("proxy.principal.map " + path + ": cannot read");
    }
    const auto slash = path.rfind('/');
    return parse(text, "proxy.principal.map " + path, deny_unmapped, upstream,
                 slash == std::string::npos ? std::string()
                 : slash == 0              ? std::string("/")
                                           : path.substr(0, slash));
}

principal_map principal_map::parse(std::string_view text, const std::string& source,
                                   bool deny_unmapped, const principal_map_upstream& upstream,
                                   const std::string& dir) {
    principal_map out;
    out.deny_unmapped_ = deny_unmapped;
    std::size_t line_no = 0;
    while (!text.empty()) {
        const auto nl = std::min(text.find('\n'), text.size());
        std::string_view line = map_trim(text.substr(0, nl));
        text = text.substr(std::min(nl + 1, text.size()));
        ++line_no;
        if (line.empty() || line.front() == '#') {
            continue;
        }
        const std::string where = source + " line " + std::to_string(line_no);
        const auto arrow = line.find("->");
        if (arrow == std::string_view::npos) {
            throw std::invalid_argument(
                where + ": expected 'User:NAME -> MECHANISM USER PASSWORD'");
        }
        const std::string principal(map_trim(line.substr(0, arrow)));
        std::string_view rest = line.substr(arrow + 2);
        const auto colon = principal.find(':');
        // (A certificate's principal may hold blanks: "User:CN=Billing Service,O=example".)
        if (colon == std::string::npos || colon == 0 || colon + 1 == principal.size()) {
            throw std::invalid_argument(where + ": '" + principal +
                                        "' is not a principal (User:NAME)");
        }
        upstream_login login;
        login.mechanism = std::string(map_word(rest));
        for (auto& c : login.mechanism) {
            c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        }
        if (login.mechanism == "CERTIFICATE") {
            if (!upstream.tls || upstream.sasl) {
                throw std::invalid_argument(
                    where + ": " + principal + ": a CERTIFICATE entry needs "
                    "upstream.security.protocol=SSL (with SASL the broker takes the login's "
                    "principal, not the certificate's)");
            }
            const std::string_view certificate = map_word(rest);
            const std::string_view key = map_word(rest);
            if (certificate.empty() || key.empty()) {
                throw std::invalid_argument(where + ": " + principal +
                                            ": expected a certificate file and a key file after "
                                            "CERTIFICATE");
            }
            auth::tls_client_settings settings = *upstream.tls;
            settings.certificate = map_file_name(certificate, dir);
            settings.certificate_pem.clear();
            settings.key = map_file_name(key, dir);
            settings.key_pem.clear();
            settings.key_password = std::string(map_trim(rest));
            try {
                login.tls = build_upstream_tls(settings);
            } catch (const std::invalid_argument& e) {
                throw std::invalid_argument(where + ": " + principal + ": " + e.what());
            }
            login.mechanism.clear();  // no SASL login: the certificate is the login
            if (!out.entries_.emplace(principal, std::move(login)).second) {
                throw std::invalid_argument(where + ": " + principal + " is mapped twice");
            }
            continue;
        }
        if (login.mechanism != "PLAIN" && login.mechanism != "SCRAM-SHA-256" &&
            login.mechanism != "SCRAM-SHA-512" && login.mechanism != "OAUTHBEARER") {
            throw std::invalid_argument(where + ": mechanism '" + login.mechanism +
                                        "': expected PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, "
                                        "OAUTHBEARER or CERTIFICATE");
        }
        if (!upstream.sasl) {
            throw std::invalid_argument(
                where + ": " + principal + ": a " + login.mechanism + " entry needs "
                "upstream.security.protocol SASL_PLAINTEXT or SASL_SSL");
        }
        if (login.mechanism == "OAUTHBEARER") {
            // The words are not echoed: a token pasted in place of the URL stays out of
            // the error (and so out of the log).
            const std::string_view url = map_word(rest);
            if (url.empty() || !map_trim(rest).empty()) {
                throw std::invalid_argument(where + ": " + principal +
                                            ": expected one file:PATH URL after OAUTHBEARER "
                                            "(the file holding the token; no blanks)");
            }
            std::string path;
            std::string why;
            if (!token_file_of_url(url, path, why)) {
                throw std::invalid_argument(where + ": " + principal + ": OAUTHBEARER: " + why);
            }
            login.token_file = map_file_name(path, dir);
            // Read now as a CERTIFICATE entry's files are, so that a file missing or empty
            // stops the start (or the reload); then again at each login and re-authentication,
            // so a renewed token is used. The token itself is not kept.
            std::string token;
            if (!read_token_file(login.token_file, token, why)) {
                throw std::invalid_argument(where + ": " + principal + ": " + why);
            }
            if (!out.entries_.emplace(principal, std::move(login)).second) {
                throw std::invalid_argument(where + ": " + principal + " is mapped twice");
            }
            continue;
        }
        login.username = std::string(map_word(rest));
        login.password = std::string(map_trim(rest));
        if (login.username.empty() || login.password.empty()) {
            throw std::invalid_argument(where + ": " + principal +
                                        ": expected an upstream user name and a password after " +
                                        login.mechanism);
        }
        if (!out.entries_.emplace(principal, std::move(login)).second) {
            throw std::invalid_argument(where + ": " + principal + " is mapped twice");
        }
    }
    return out;
}

const upstream_login* principal_map::find(std::string_view principal) const {
    const auto it = entries_.find(principal);
    return it == entries_.end() ? nullptr : &it->second;
}

}  // namespace sluice::gateway::proxy
