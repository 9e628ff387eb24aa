// The log_dirs_reader of upstream mode (owned by gateway/server): the upstream client level's
// admin asks it for DescribeLogDirs (librdkafka 2.0.2 has no call for it); it asks each broker
// through gateway/proxy's connections of the gateway's own (upstream_log_dirs), with the
// `upstream.*` TLS and SASL login, each broker bounded by upstream.request.timeout.ms or 5 s,
// whichever is shorter (the console's pages wait for the sizes); an
// answer is reused for 5 s (the console refreshes every 2 s).
#pragma once

#include <memory>

#include "backend/api/client.h"
#include "gateway/server/upstream_settings.h"

namespace sluice::gateway {

/// Never throws: properties the gateway's own connections cannot honour (an OAUTHBEARER
/// login, a PKCS#12 keystore) make a reader that answers every broker with that reason.
std::shared_ptr<backend::api::log_dirs_reader> make_upstream_log_dirs_reader(
    const upstream_settings& upstream);

}  // namespace sluice::gateway
