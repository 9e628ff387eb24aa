// api::admin's ACLs over the cluster (owned by backend/upstream): DescribeAcls, CreateAcls and
// DeleteAcls through librdkafka's admin API, each bounded by the request timeout. librdkafka's
// enums carry Kafka's wire codes, as api's do.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "backend/upstream/upstream_admin.h"
#include "backend/upstream/upstream_admin_request.h"
#include "backend/upstream/upstream_common.h"

namespace sluice::backend::upstream {
namespace {

struct acl_binding_deleter {
    void operator()(rd_kafka_AclBinding_t* b) const noexcept { rd_kafka_AclBinding_destroy(b); }
};
using acl_binding_ptr = std::unique_ptr<rd_kafka_AclBinding_t, acl_binding_deleter>;

const char* c_str_or_null(const std::optional<std::string>& s) {
    return s ? s->c_str() : nullptr;
}

/// `f` as librdkafka's filter, or why it cannot be one (invalid_request).
api::backend_result<acl_binding_ptr> acl_filter_of(const api::acl_filter& f) {
    char err[512];
    acl_binding_ptr p(rd_kafka_AclBindingFilter_new(
        static_cast<rd_kafka_ResourceType_t>(f.resource_type), c_str_or_null(f.resource_name),
        static_cast<rd_kafka_ResourcePatternType_t>(f.pattern_type), c_str_or_null(f.principal),
        c_str_or_null(f.host), static_cast<rd_kafka_AclOperation_t>(f.operation),
        static_cast<rd_kafka_AclPermissionType_t>(f.permission), err, sizeof err));
    if (!p) {
        return api::backend_failure(api::make_error_code(api::errc::invalid_request), err);
    }
    return p;
}

api::acl_binding acl_binding_of(const rd_kafka_AclBinding_t* b) {
    auto text = [](const char* s) { return s ? std::string(s) : std::string(); };
    api::acl_binding out;
    out.resource_type = static_cast<api::acl_resource_type>(rd_kafka_AclBinding_restype(b));
    out.resource_name = text(rd_kafka_AclBinding_name(b));
    out.pattern_type =
        static_cast<api::acl_pattern_type>(rd_kafka_AclBinding_resource_pattern_type(b));
    out.principal = text(rd_kafka_AclBinding_principal(b));
    out.host = text(rd_kafka_AclBinding_host(b));
    out.operation = static_cast<api::acl_operation>(rd_kafka_AclBinding_operation(b));
    out.permission = static_cast<api::acl_permission>(rd_kafka_AclBinding_permission_type(b));
    return out;
}

}  // namespace

api::awaitable<api::backend_result<std::vector<api::acl_binding>>> upstream_admin::describe_acls(
    api::acl_filter filter) {
    auto blocking_job = [rk = rk_, timeout = timeout_,
                         f = std::move(filter)]() -> api::backend_result<std::vector<api::acl_binding>> {
        auto native_filter = acl_filter_of(f);
        if (!native_filter) {
            return std::unexpected(std::move(native_filter.error()));
        }
        auto ev = admin_detail::admin_request(rk, RD_KAFKA_ADMIN_OP_DESCRIBEACLS, timeout, false,
                                              [&](auto* options, auto* queue) {
                                                  rd_kafka_DescribeAcls(
                                                      rk, native_filter->get(), options, queue);
                                              });
        if (!ev) {
            return api::backend_failure(admin_detail::timed_out("DescribeAcls", timeout));
        }
        if (auto e = admin_detail::event_error(ev.get())) {
            return api::backend_failure(std::move(e));
        }
        std::vector<api::acl_binding> out;
        size_t n = 0;
        const auto* result = rd_kafka_event_DescribeAcls_result(ev.get());
        const rd_kafka_AclBinding_t** acls =
            result ? rd_kafka_DescribeAcls_result_acls(result, &n) : nullptr;
        out.reserve(n);
        for (size_t i = 0; i < n; ++i) {
            out.push_back(acl_binding_of(acls[i]));
        }
        return out;
    };
    auto r = co_await run_blocking(pool_, std::move(blocking_job));
    co_return counted(std::move(r));
}

api::awaitable<api::backend_result<void>> upstream_admin::create_acls(
    std::vector<api::acl_binding> bindings) {
    auto blocking_job = [rk = rk_, timeout = timeout_,
                         bs = std::move(bindings)]() -> api::backend_result<void> {
        if (bs.empty()) {
            return {};
        }
        std::vector<acl_binding_ptr> owned;
        std::vector<rd_kafka_AclBinding_t*> raw;
        for (const auto& b : bs) {
            char err[512];
            acl_binding_ptr p(rd_kafka_AclBinding_new(
                static_cast<rd_kafka_ResourceType_t>(b.resource_type), b.resource_name.c_str(),
                static_cast<rd_kafka_ResourcePatternType_t>(b.pattern_type), b.principal.c_str(),
                b.host.c_str(), static_cast<rd_kafka_AclOperation_t>(b.operation),
                static_cast<rd_kafka_AclPermissionType_t>(b.permission), err, sizeof err));
            if (!p) {
                return api::backend_failure(api::make_error_code(api::errc::invalid_request),
                                            err);
            }
            raw.push_back(p.get());
            owned.push_back(std::move(p));
        }
        auto ev = admin_detail::admin_request(rk, RD_KAFKA_ADMIN_OP_CREATEACLS, timeout, false,
                                              [&](auto* options, auto* queue) {
                                                  rd_kafka_CreateAcls(rk, raw.data(), raw.size(),
                                                                      options, queue);
                                              });
        if (!ev) {
            return api::backend_failure(admin_detail::timed_out("CreateAcls", timeout));
        }
        if (auto e = admin_detail::event_error(ev.get())) {
            return api::backend_failure(std::move(e));
        }
        size_t n = 0;
        const auto* result = rd_kafka_event_CreateAcls_result(ev.get());
        const rd_kafka_acl_result_t** results =
            result ? rd_kafka_CreateAcls_result_acls(result, &n) : nullptr;
        for (size_t i = 0; i < n; ++i) {
            if (auto e = admin_detail::error_of(rd_kafka_acl_result_error(results[i]))) {
                return api::backend_failure(std::move(e));
            }
        }
        return {};
    };
    auto r = co_await run_blocking(pool_, std::move(blocking_job));
    co_return counted(std::move(r));
}

api::awaitable<api::backend_result<std::vector<api::acl_binding>>> upstream_admin::delete_acls(
    api::acl_filter filter) {
    auto blocking_job = [rk = rk_, timeout = timeout_,
                         f = std::move(filter)]() -> api::backend_result<std::vector<api::acl_binding>> {
        auto native_filter = acl_filter_of(f);
        if (!native_filter) {
            return std::unexpected(std::move(native_filter.error()));
        }
        rd_kafka_AclBindingFilter_t* filters[] = {native_filter->get()};
        auto ev = admin_detail::admin_request(rk, RD_KAFKA_ADMIN_OP_DELETEACLS, timeout, false,
                                              [&](auto* options, auto* queue) {
                                                  rd_kafka_DeleteAcls(rk, filters, 1, options,
                                                                      queue);
                                              });
        if (!ev) {
            return api::backend_failure(admin_detail::timed_out("DeleteAcls", timeout));
        }
        if (auto e = admin_detail::event_error(ev.get())) {
            return api::backend_failure(std::move(e));
        }
        std::vector<api::acl_binding> out;
        size_t n = 0;
        const auto* result = rd_kafka_event_DeleteAcls_result(ev.get());
        const rd_kafka_DeleteAcls_result_response_t** responses =
            result ? rd_kafka_DeleteAcls_result_responses(result, &n) : nullptr;
        for (size_t i = 0; i < n; ++i) {
            if (auto e =
                    admin_detail::error_of(rd_kafka_DeleteAcls_result_response_error(responses[i]))) {
                return api::backend_failure(std::move(e));
            }
            size_t m = 0;
            const rd_kafka_AclBinding_t** matching =
                rd_kafka_DeleteAcls_result_response_matching_acls(responses[i], &m);
            for (size_t j = 0; j < m; ++j) {
                out.push_back(acl_binding_of(matching[j]));
            }
        }
        return out;
    };
    auto r = co_await run_blocking(pool_, std::move(blocking_job));
    co_return counted(std::move(r));
}

}  // namespace sluice::backend::upstream
