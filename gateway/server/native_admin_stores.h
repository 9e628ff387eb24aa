// What the native client level's admin reads and changes outside the backend (owned by
// gateway/server): backend/api's acl_store over the authorizer (auth/; its own checks,
// auth::validate, refuse what cannot be stored) and broker_config_store over the Kafka front's
// dynamic configs (gateway/kafka/dynamic_configs.h), so that REST changes what the Kafka
// admin APIs change.
#pragma once

#include <memory>

#include "auth/authorizer.h"
#include "backend/api/acls.h"
#include "backend/api/broker_config_store.h"
#include "gateway/kafka/dynamic_configs.h"

namespace sluice::gateway {

/// An acl_store over `authz`, which must outlive it; with the authorizer disabled every call
/// answers unsupported (Kafka's SECURITY_DISABLED).
std::unique_ptr<backend::api::acl_store> make_authorizer_acl_store(auth::authorizer& authz);

/// A broker_config_store over `store`, whose changes `topics` puts in force; both must
/// outlive it.
std::unique_ptr<backend::api::broker_config_store> make_dynamic_broker_config_store(
    dynamic_configs& store, backend::api::topics& topics);

}  // namespace sluice::gateway
