// The seam through which the console changes the ACLs the gateway itself enforces in upstream
// mode (POST and DELETE /v1/console/gateway-acls, gateway/http/rest/v3_acls.cc): those are the
// fleet's, in the cluster's _sluice_security topic, so a change is stored there first and then
// applied here. Implemented by the server (gateway/server/security_topic.h), which owns the
// cluster.
#pragma once

#include <vector>

#include <boost/asio/awaitable.hpp>

#include "auth/authorizer.h"

namespace sluice::gateway {

class shared_acls {
public:
    virtual ~shared_acls() = default;
    /// Stores `bindings` (present: added; else removed) where every gateway of the fleet reads
    /// them, returns once the cluster has stored them (acks=all), then applies them to this
    /// gateway's ACLs. Throws std::runtime_error with the reason when the cluster did not
    /// store them (nothing changed here then).
    virtual boost::asio::awaitable<void> store(std::vector<auth::acl_binding> bindings,
                                               bool present) = 0;
};

}  // namespace sluice::gateway
