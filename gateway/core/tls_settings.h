// The TLS settings of each listener, from the configuration: Kafka's and librdkafka's names
// (ssl.certificate.location, ssl.key.location, ssl.ca.location, ssl.client.auth,
// ssl.principal.mapping.rules), each also under Kafka's per-listener prefix
// listener.name.<name>. (e.g. listener.name.sasl_ssl.ssl.key.location), which wins over the
// plain key. Read once by run_server before anything starts.
#pragma once

#include <memory>
#include <string>

#include "auth/tls/tls_context.h"
#include "gateway/core/config.h"

namespace sluice::gateway {

/// The names a TLS listener's settings may be prefixed with: the Kafka security protocols in
/// lower case ("ssl", "sasl_ssl"), "https" (the HTTP listener's) and "sqs".
std::string tls_listener_name(security_protocol p);

/// The settings for the listener called `name` (see tls_listener_name). Marks every TLS key,
/// plain and prefixed for every listener name, as known. Throws config_error for a bad
/// ssl.client.auth value.
auth::tls_settings read_tls_settings(const config& cfg, const std::string& name);

/// Builds the context holder for the listener `what` ("Kafka listener SSL://HOST:PORT"): one
/// clear config_error when the certificate or key is not set or a file is bad.
std::shared_ptr<auth::tls_context_holder> open_tls_listener_context(const config& cfg,
                                                                    const std::string& name,
                                                                    const std::string& what);

}  // namespace sluice::gateway
