#include "gateway/server/native_admin_stores.h"

#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "gateway/core/logger.h"

namespace sluice::gateway {
namespace {
namespace api = backend::api;

// api's enums and auth's carry the same Kafka wire codes.
auth::acl_binding auth_binding_of(api::acl_binding b) {
    return auth::acl_binding{static_cast<auth::resource_type>(b.resource_type),
                             std::move(b.resource_name),
                             static_cast<auth::pattern_type>(b.pattern_type),
                             std::move(b.principal),
                             std::move(b.host),
                             static_cast<auth::acl_operation>(b.operation),
                             static_cast<auth::acl_permission>(b.permission)};
}

api::acl_binding api_binding_of(auth::acl_binding b) {
    return api::acl_binding{static_cast<api::acl_resource_type>(b.type),
                            std::move(b.name),
                            static_cast<api::acl_pattern_type>(b.pattern),
                            std::move(b.principal),
                            std::move(b.host),
                            static_cast<api::acl_operation>(b.operation),
                            static_cast<api::acl_permission>(b.permission)};
}

auth::acl_binding_filter auth_filter_of(const api::acl_filter& f) {
    return auth::acl_binding_filter{static_cast<auth::resource_type>(f.resource_type),
                                    f.resource_name,
                                    static_cast<auth::pattern_type>(f.pattern_type),
                                    f.principal,
                                    f.host,
                                    static_cast<auth::acl_operation>(f.operation),
                                    static_cast<auth::acl_permission>(f.permission)};
}

std::vector<api::acl_binding> api_bindings_of(std::vector<auth::acl_binding> bs) {
    std::vector<api::acl_binding> out;
    out.reserve(bs.size());
    for (auto& b : bs) {
        out.push_back(api_binding_of(std::move(b)));
    }
    return out;
}

std::unexpected<api::backend_error> acl_store_failure(api::errc e, std::string message) {
    return api::backend_failure(api::make_error_code(e), std::move(message));
}

class authorizer_acl_store final : public api::acl_store {
public:
    explicit authorizer_acl_store(auth::authorizer& authz) : authz_(authz) {}

    api::backend_result<std::vector<api::acl_binding>> describe_acls(
        const api::acl_filter& filter) override {
        if (!authz_.enabled()) {
            return disabled();
        }
        const auto f = auth_filter_of(filter);
        if (auto why = auth::validate(f)) {
            return acl_store_failure(api::errc::invalid_request, *why);
        }
        return api_bindings_of(authz_.describe_acls(f));
    }

    api::backend_result<void> create_acls(std::vector<api::acl_binding> bindings) override {
        if (!authz_.enabled()) {
            return disabled();
        }
        std::vector<auth::acl_binding> bs;
        bs.reserve(bindings.size());
        for (auto& b : bindings) {
            bs.push_back(auth_binding_of(std::move(b)));
            if (auto why = auth::validate(bs.back())) {
                return acl_store_failure(api::errc::invalid_request, *why);
            }
        }
        try {
            for (auto& result : authz_.create_acls(bs)) {
                if (result) {
                    return acl_store_failure(api::errc::invalid_request, *result);
                }
            }
        } catch (const std::runtime_error& e) {
            server_log().error("cannot save the ACLs: {}", e.what());
            return acl_store_failure(api::errc::unknown, "cannot save the ACLs");
        }
        return {};
    }

    api::backend_result<std::vector<api::acl_binding>> delete_acls(
        const api::acl_filter& filter) override {
        if (!authz_.enabled()) {
            return disabled();
        }
        const auth::acl_binding_filter filters[] = {auth_filter_of(filter)};
        try {
            auto results = authz_.delete_acls(filters);
            if (results.front().error) {
                return acl_store_failure(api::errc::invalid_request, *results.front().error);
            }
            return api_bindings_of(std::move(results.front().deleted));
        } catch (const std::runtime_error& e) {
            server_log().error("cannot save the ACLs: {}", e.what());
            return acl_store_failure(api::errc::unknown, "cannot save the ACLs");
        }
    }

private:
    static std::unexpected<api::backend_error> disabled() {
        // Kafka's SecurityDisabledException message.
        return acl_store_failure(api::errc::unsupported, "No Authorizer is configured on the broker");
    }

    auth::authorizer& authz_;
};

class dynamic_broker_config_store final : public api::broker_config_store {
public:
    dynamic_broker_config_store(dynamic_configs& store, api::topics& topics)
        : store_(store), topics_(topics) {}

    std::map<std::string, std::string> cluster_default() const override {
        return store_.cluster_default();
    }

    api::awaitable<api::backend_result<void>> alter(std::string name,
                                                    std::vector<api::config_change> changes,
                                                    bool validate_only) override {
        std::vector<config_op> ops;
        ops.reserve(changes.size());
        for (auto& c : changes) {
            ops.push_back(config_op{std::move(c.name), static_cast<config_op::kind>(c.operation),
                                    std::move(c.value)});
        }
        const auto outcome = store_.alter_broker(name, ops, false, validate_only);
        using protocol::kafka::error_code;
        switch (outcome.error) {
            case error_code::none:
                break;
            case error_code::invalid_config:
                co_return acl_store_failure(api::errc::invalid_config, outcome.message);
            case error_code::kafka_storage_error:
                co_return acl_store_failure(api::errc::storage_error, outcome.message);
            default:
                co_return acl_store_failure(api::errc::invalid_request, outcome.message);
        }
        if (outcome.apply_needed) {
            co_await topics_.apply_dynamic_configs();
        }
        co_return api::backend_result<void>{};
    }

private:
    dynamic_configs& store_;
    api::topics& topics_;
};

}  // namespace

std::unique_ptr<backend::api::broker_config_store> make_dynamic_broker_config_store(
    dynamic_configs& store, backend::api::topics& topics) {
    return std::make_unique<dynamic_broker_config_store>(store, topics);
}

std::unique_ptr<backend::api::acl_store> make_authorizer_acl_store(auth::authorizer& authz) {
    return std::make_unique<authorizer_acl_store>(authz);
}

}  // namespace sluice::gateway
