#include "auth/sigv4.h"

#include <algorithm>
#include <cctype>
#include <ctime>
#include <optional>

#include "auth/crypto.h"
#include "protocol/core/hex.h"

namespace sluice::auth {
namespace {

constexpr std::string_view algorithm = "AWS4-HMAC-SHA256";

char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

bool iequals(std::string_view a, std::string_view b) {
    return a.size() == b.size() &&
           std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               return lower(x) == lower(y);
           });
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) {
        s.remove_prefix(1);
    }
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) {
        s.remove_suffix(1);
    }
    return s;
}

/// Percent-decoding ('+' stays '+'); a malformed escape stays as it is.
std::string uri_decode(std::string_view s) {
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (const int byte = percent_escape_value(s.substr(i)); byte >= 0) {
            out.push_back(static_cast<char>(byte));
            i += 2;
            continue;
        }
        out.push_back(s[i]);
    }
    return out;
}

std::vector<std::pair<std::string, std::string>> query_params(std::string_view raw) {
    std::vector<std::pair<std::string, std::string>> out;
    std::size_t start = 0;
    while (start < raw.size()) {
        auto end = raw.find('&', start);
        if (end == std::string_view::npos) {
            end = raw.size();
        }
        const auto pair = raw.substr(start, end - start);
        start = end + 1;
        if (pair.empty()) {
            continue;
        }
        const auto eq = pair.find('=');
        out.emplace_back(uri_decode(pair.substr(0, eq)),
                         eq == std::string_view::npos ? std::string()
                                                      : uri_decode(pair.substr(eq + 1)));
    }
    return out;
}

const std::string* find_param(const std::vector<std::pair<std::string, std::string>>& params,
                              std::string_view name) {
    for (const auto& [k, v] : params) {
        if (k == name) {
            return &v;
        }
    }
    return nullptr;
}

const std::string* find_header(const sigv4_request& req, std::string_view name) {
    for (const auto& [k, v] : req.headers) {
        if (iequals(k, name)) {
            return &v;
        }
    }
    return nullptr;
}

/// "20150830T123600Z" -> a time point; nullopt when malformed.
std::optional<std::chrono::system_clock::time_point> parse_amz_date(std::string_view d) {
    if (d.size() != 16 || d[8] != 'T' || d[15] != 'Z') {
        return std::nullopt;
    }
    auto digits = [&](std::size_t at, std::size_t n) -> int {
        int v = 0;
        for (std::size_t i = at; i < at + n; ++i) {
            if (d[i] < '0' || d[i] > '9') {
                return -1;
            }
            v = v * 10 + (d[i] - '0');
        }
        return v;
    };
    std::tm tm{};
    tm.tm_year = digits(0, 4) - 1900;
    tm.tm_mon = digits(4, 2) - 1;
    tm.tm_mday = digits(6, 2);
    tm.tm_hour = digits(9, 2);
    tm.tm_min = digits(11, 2);
    tm.tm_sec = digits(13, 2);
    if (tm.tm_year < 70 || tm.tm_mon < 0 || tm.tm_mon > 11 || tm.tm_mday < 1 ||
        tm.tm_mday > 31 || tm.tm_hour < 0 || tm.tm_hour > 23 || tm.tm_min < 0 ||
        tm.tm_min > 59 || tm.tm_sec < 0 || tm.tm_sec > 60) {
        return std::nullopt;
    }
    return std::chrono::system_clock::from_time_t(timegm(&tm));
}

std::string format_amz_date(std::chrono::system_clock::time_point t) {
    const std::time_t tt = std::chrono::system_clock::to_time_t(t);
    std::tm tm{};
    gmtime_r(&tt, &tm);
    char buf[32];
    std::strftime(buf, sizeof(buf), "%Y%m%dT%H%M%SZ", &tm);
    return buf;
}

sigv4_outcome refuse(sigv4_error e, std::string message, sigv4_outcome base = {}) {
    base.error = e;
    base.message = std::move(message);
    return base;
}

/// The parts both forms carry.
struct signature_parts {
    std::string access_key_id;
    std::string date;  // YYYYMMDD of the scope
    std::string region;
    std::string service;
    std::vector<std::string> signed_headers;
    std::string signature;  // hex
    std::string amz_date;
};

/// "ID/DATE/REGION/SERVICE/aws4_request" into `p`; false when malformed.
bool parse_credential(std::string_view credential, signature_parts& p) {
    std::vector<std::string> parts;
    std::size_t start = 0;
    while (true) {
        auto end = credential.find('/', start);
        parts.emplace_back(credential.substr(start, end == std::string_view::npos
                                                        ? std::string_view::npos
                                                        : end - start));
        if (end == std::string_view::npos) {
            break;
        }
        start = end + 1;
    }
    if (parts.size() != 5 || parts[0].empty() || parts[1].size() != 8 || parts[2].empty() ||
        parts[4] != "aws4_request") {
        return false;
    }
    p.access_key_id = parts[0];
    p.date = parts[1];
    p.region = parts[2];
    p.service = parts[3];
    return true;
}

std::vector<std::string> split_signed_headers(std::string_view s) {
    std::vector<std::string> out;
    std::size_t start = 0;
    while (start <= s.size()) {
        auto end = s.find(';', start);
        if (end == std::string_view::npos) {
            end = s.size();
        }
        std::string name(s.substr(start, end - start));
        std::transform(name.begin(), name.end(), name.begin(), lower);
        if (!name.empty()) {
            out.push_back(std::move(name));
        }
        start = end + 1;
    }
    return out;
}

const std::string missing_message = "Request is missing Authentication Token";
/// AWS's own wording for SignatureDoesNotMatch (what SDKs and users search for).
const std::string mismatch_message =
    "The request signature we calculated does not match the signature you provided. Check "
    "your AWS Secret Access Key and signing method. Consult the service documentation for "
    "details.";
constexpr std::string_view unsigned_payload = "UNSIGNED-PAYLOAD";
const std::string incomplete_prefix = "Authorization header requires ";

}  // namespace

std::string_view sigv4_error_code(sigv4_error e) {
    switch (e) {
        case sigv4_error::none:
            return "";
        case sigv4_error::missing_authentication_token:
            return "MissingAuthenticationToken";
        case sigv4_error::incomplete_signature:
            return "IncompleteSignature";
        case sigv4_error::invalid_client_token_id:
            return "InvalidClientTokenId";
        case sigv4_error::signature_does_not_match:
            return "SignatureDoesNotMatch";
        case sigv4_error::request_expired:
            return "RequestExpired";
        case sigv4_error::invalid_parameter_combination:
            return "InvalidParameterCombination";
    }
    return "";
}

unsigned sigv4_error_status(sigv4_error e) {
    switch (e) {
        case sigv4_error::none:
            return 200;
        case sigv4_error::missing_authentication_token:
        case sigv4_error::invalid_client_token_id:
        case sigv4_error::signature_does_not_match:
            return 403;
        case sigv4_error::incomplete_signature:
        case sigv4_error::request_expired:
        case sigv4_error::invalid_parameter_combination:
            return 400;
    }
    return 400;
}

std::string hex_lower(std::string_view bytes) {
    static constexpr char digits[] = "0123456789abcdef";
    std::string out;
    out.reserve(bytes.size() * 2);
    for (unsigned char c : bytes) {
        out.push_back(digits[c >> 4]);
        out.push_back(digits[c & 15]);
    }
    return out;
}

std::string sigv4_uri_encode(std::string_view s, bool keep_slash) {
    static constexpr char digits[] = "0123456789ABCDEF";
    std::string out;
    for (unsigned char c : s) {
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
            c == '-' || c == '_' || c == '.' || c == '~' || (keep_slash && c == '/')) {
            out.push_back(static_cast<char>(c));
        } else {
            out.push_back('%');
            out.push_back(digits[c >> 4]);
            out.push_back(digits[c & 15]);
        }
    }
    return out;
}

std::string sigv4_canonical_query(std::string_view raw_query, std::string_view skip) {
    std::vector<std::pair<std::string, std::string>> encoded;
    for (const auto& [k, v] : query_params(raw_query)) {
        if (!skip.empty() && k == skip) {
            continue;
        }
        encoded.emplace_back(sigv4_uri_encode(k, false), sigv4_uri_encode(v, false));
    }
    std::sort(encoded.begin(), encoded.end());
    std::string out;
    for (const auto& [k, v] : encoded) {
        if (!out.empty()) {
            out += '&';
        }
        out += k + "=" + v;
    }
    return out;
}

std::string sigv4_canonical_request(const sigv4_request& req,
                                    const std::vector<std::string>& signed_headers,
                                    std::string_view payload_hash, std::string_view skip_param) {
    std::string out = req.method + "\n";
    out += req.path.empty() ? std::string("/") : sigv4_uri_encode(req.path, true);
    out += "\n" + sigv4_canonical_query(req.query, skip_param) + "\n";
    std::string names;
    for (const auto& name : signed_headers) {
        std::string value;
        for (const auto& [k, v] : req.headers) {
            if (!iequals(k, name)) {
                continue;
            }
            // Trimmed, and runs of spaces inside collapsed to one.
            std::string collapsed;
            for (char c : trim(v)) {
                if (c == ' ' && !collapsed.empty() && collapsed.back() == ' ') {
                    continue;
                }
                collapsed.push_back(c);
            }
            value += value.empty() ? collapsed : "," + collapsed;
        }
        out += name + ":" + value + "\n";
        names += names.empty() ? name : ";" + name;
    }
    out += "\n" + names + "\n";
    out += payload_hash;
    return out;
}

std::string sigv4_string_to_sign(std::string_view amz_date, std::string_view scope,
                                 std::string_view canonical_request) {
    std::string out(algorithm);
    out += "\n";
    out += amz_date;
    out += "\n";
    out += scope;
    out += "\n";
    out += hex_lower(hash(hash_algorithm::sha256, canonical_request));
    return out;
}

std::string sigv4_signing_key(std::string_view secret, std::string_view date,
                              std::string_view region, std::string_view service) {
    const auto h = hash_algorithm::sha256;
    std::string k = hmac(h, "AWS4" + std::string(secret), date);
    k = hmac(h, k, region);
    k = hmac(h, k, service);
    return hmac(h, k, "aws4_request");
}

sigv4_outcome verify_sigv4(const sigv4_request& req, const aws_key_store& keys,
                           std::string_view service, std::chrono::system_clock::time_point now,
                           const sigv4_rules& rules) {
    sigv4_outcome base;
    signature_parts p;
    const auto params = query_params(req.query);
    const std::string* auth_header = find_header(req, "Authorization");
    std::optional<std::chrono::seconds> presign_expires;
    std::string skip_param;
    if (auth_header != nullptr) {
        base.form = "Authorization";
        std::string_view v = trim(*auth_header);
        if (!v.starts_with(algorithm) || v.size() == algorithm.size() ||
            v[algorithm.size()] != ' ') {
            return refuse(sigv4_error::incomplete_signature,
                          "Unsupported Authorization type (expected AWS4-HMAC-SHA256)", base);
        }
        v.remove_prefix(algorithm.size());
        std::string credential;
        std::string signed_headers;
        std::size_t start = 0;
        while (start <= v.size()) {
            auto end = v.find(',', start);
            if (end == std::string_view::npos) {
                end = v.size();
            }
            const auto item = trim(v.substr(start, end - start));
            start = end + 1;
            const auto eq = item.find('=');
            if (eq == std::string_view::npos) {
                continue;
            }
            const auto key = item.substr(0, eq);
            const auto value = std::string(item.substr(eq + 1));
            if (key == "Credential") {
                credential = value;
            } else if (key == "SignedHeaders") {
                signed_headers = value;
            } else if (key == "Signature") {
                p.signature = value;
            }
        }
        if (credential.empty() || signed_headers.empty() || p.signature.empty()) {
            return refuse(sigv4_error::incomplete_signature,
                          incomplete_prefix +
                              "'Credential', 'SignedHeaders' and 'Signature' parameters.",
                          base);
        }
        if (!parse_credential(credential, p)) {
            return refuse(sigv4_error::incomplete_signature,
                          "Credential must be ACCESS_KEY_ID/DATE/REGION/SERVICE/aws4_request.",
                          base);
        }
        p.signed_headers = split_signed_headers(signed_headers);
        const std::string* date = find_header(req, "X-Amz-Date");
        if (date == nullptr) {
            return refuse(sigv4_error::incomplete_signature,
                          incomplete_prefix + "existence of a 'X-Amz-Date' header.", base);
        }
        p.amz_date = std::string(trim(*date));
    } else if (find_param(params, "X-Amz-Signature") != nullptr ||
               find_param(params, "X-Amz-Algorithm") != nullptr ||
               find_param(params, "X-Amz-Credential") != nullptr) {
        base.form = "query";
        const auto* alg = find_param(params, "X-Amz-Algorithm");
        const auto* credential = find_param(params, "X-Amz-Credential");
        const auto* date = find_param(params, "X-Amz-Date");
        const auto* expires = find_param(params, "X-Amz-Expires");
        const auto* headers = find_param(params, "X-Amz-SignedHeaders");
        const auto* signature = find_param(params, "X-Amz-Signature");
        if (!alg || !credential || !date || !expires || !headers || !signature) {
            return refuse(sigv4_error::incomplete_signature,
                          "A presigned request needs X-Amz-Algorithm, X-Amz-Credential, "
                          "X-Amz-Date, X-Amz-Expires, X-Amz-SignedHeaders and X-Amz-Signature.",
                          base);
        }
        if (*alg != algorithm) {
            return refuse(sigv4_error::incomplete_signature,
                          "X-Amz-Algorithm must be AWS4-HMAC-SHA256.", base);
        }
        if (!parse_credential(*credential, p)) {
            return refuse(sigv4_error::incomplete_signature,
                          "X-Amz-Credential must be ACCESS_KEY_ID/DATE/REGION/SERVICE/"
                          "aws4_request.",
                          base);
        }
        long long secs = -1;
        if (!expires->empty() && expires->size() <= 7 &&
            std::all_of(expires->begin(), expires->end(), ::isdigit)) {
            secs = std::stoll(*expires);
        }
        if (secs < 1 || secs > 604800) {
            return refuse(sigv4_error::incomplete_signature,
                          "X-Amz-Expires must be between 1 and 604800 seconds.", base);
        }
        presign_expires = std::chrono::seconds(secs);
        p.signed_headers = split_signed_headers(*headers);
        p.signature = *signature;
        p.amz_date = *date;
        skip_param = "X-Amz-Signature";
    } else {
        return refuse(sigv4_error::missing_authentication_token, missing_message, base);
    }
    base.access_key_id = p.access_key_id;

    const auto key = keys.find(p.access_key_id);
    if (!key) {
        return refuse(sigv4_error::invalid_client_token_id,
                      "The security token included in the request is invalid.", base);
    }
    base.user = key->user;
    const auto when = parse_amz_date(p.amz_date);
    if (!when || p.amz_date.substr(0, 8) != p.date) {
        return refuse(sigv4_error::incomplete_signature,
                      "X-Amz-Date must be YYYYMMDD'T'HHMMSS'Z' and match the credential's date.",
                      base);
    }
    if (p.service != service) {
        return refuse(sigv4_error::signature_does_not_match,
                      "Credential should be scoped to correct service: '" + std::string(service) +
                          "'.",
                      base);
    }
    if (presign_expires) {
        if (now > *when + *presign_expires) {
            return refuse(sigv4_error::request_expired,
                          "Request has expired (X-Amz-Date " + p.amz_date + " plus X-Amz-Expires).",
                          base);
        }
        if (*when > now + sigv4_max_skew) {
            return refuse(sigv4_error::request_expired,
                          "Request is not yet valid: " + p.amz_date + " is more than 15 minutes "
                          "after the server's time " + format_amz_date(now) + ".",
                          base);
        }
    } else if (*when + sigv4_max_skew < now || *when > now + sigv4_max_skew) {
        return refuse(sigv4_error::request_expired,
                      "Signature expired: " + p.amz_date + " is more than 15 minutes from the "
                      "server's time " + format_amz_date(now) + ".",
                      base);
    }
    if (std::find(p.signed_headers.begin(), p.signed_headers.end(), "host") ==
        p.signed_headers.end()) {
        return refuse(sigv4_error::signature_does_not_match,
                      "The Host header must be signed.", base);
    }

    // A presigned request is a URL: what it does is what its signed query says. A body or an
    // X-Amz-Target header would name another action or other parameters (the SQS front reads
    // both before the query string), so neither is taken.
    const std::string* target = find_header(req, "X-Amz-Target");
    if (presign_expires && rules.presigned_query_only) {
        if (target != nullptr) {
            return refuse(sigv4_error::invalid_parameter_combination,
                          "A presigned request takes its action from the signed query string: "
                          "send it without an X-Amz-Target header.",
                          base);
        }
        if (!req.body.empty()) {
            return refuse(sigv4_error::invalid_parameter_combination,
                          "A presigned request takes its action and parameters from the signed "
                          "query string only: send it without a body.",
                          base);
        }
    }
    // X-Amz-Target names the action of the JSON protocol: unsigned, it could be changed.
    if (target != nullptr && std::find(p.signed_headers.begin(), p.signed_headers.end(),
                                       "x-amz-target") == p.signed_headers.end()) {
        return refuse(sigv4_error::signature_does_not_match,
                      "The X-Amz-Target header names the action and must be signed (list it in "
                      "SignedHeaders).",
                      base);
    }

    // The payload hash is always the received body's. A client's X-Amz-Content-Sha256 is only
    // checked against it: trusted, it would let any body ride on another request's signature.
    const std::string body_hash = hex_lower(hash(hash_algorithm::sha256, req.body));
    std::vector<std::string> payload_hashes{body_hash};
    if (const auto* h = find_header(req, "X-Amz-Content-Sha256")) {
        const auto claimed = trim(*h);
        if (claimed == unsigned_payload) {
            if (!rules.unsigned_payload) {
                return refuse(sigv4_error::signature_does_not_match,
                              "X-Amz-Content-Sha256: UNSIGNED-PAYLOAD is not accepted by " +
                                  std::string(service) +
                                  ": sign the SHA-256 of the body (in lower-case hex).",
                              base);
            }
            payload_hashes = {std::string(unsigned_payload)};
        } else if (!constant_time_equal(claimed, body_hash)) {
            auto out = refuse(sigv4_error::signature_does_not_match, mismatch_message, base);
            out.detail = "X-Amz-Content-Sha256 is not the SHA-256 of the body received";
            return out;
        }
    } else if (presign_expires && rules.unsigned_payload) {
        payload_hashes.emplace_back(unsigned_payload);
    }

    const std::string scope = p.date + "/" + p.region + "/" + p.service + "/aws4_request";
    const std::string signing_key = sigv4_signing_key(key->secret, p.date, p.region, p.service);
    for (const auto& payload_hash : payload_hashes) {
        const auto canonical =
            sigv4_canonical_request(req, p.signed_headers, payload_hash, skip_param);
        const auto expected = hex_lower(hmac(hash_algorithm::sha256, signing_key,
                                             sigv4_string_to_sign(p.amz_date, scope, canonical)));
        if (constant_time_equal(expected, p.signature)) {
            return base;
        }
    }
    return refuse(sigv4_error::signature_does_not_match, mismatch_message, base);
}

}  // namespace sluice::auth
