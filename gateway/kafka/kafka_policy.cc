#include "gateway/kafka/kafka_policy.h"

#include <vector>

#include "protocol/kafka/api_table.h"

namespace sluice::gateway {
namespace {

access chain_access(const kafka_access& a) {
    return access{a.op, a.type, a.name, a.denial, a.alternative};
}

}  // namespace

requester kafka_requester(const request_context& ctx, std::string_view host) {
    return requester{policy_front::kafka, ctx.principal(), ctx.security().mechanism,
                     ctx.connection().peer, host, ctx.client_id()};
}

const policy_chain& kafka_chain(const request_context& ctx) { return ctx.svc().chain; }

std::string client_host(const request_context& ctx) {
    return authorizer_host(ctx.connection().peer);
}

audit_source audit_source_of(const request_context& ctx) {
    const std::string& p = ctx.principal();
    return audit_source{p.empty() ? std::string("User:ANONYMOUS") : p,
                        audit_client_of(ctx.connection().peer),
                        "kafka"};
}

std::string_view api_name_of(const request_context& ctx) {
    return protocol::kafka::api_name(static_cast<protocol::kafka::api_key>(ctx.header().api_key));
}

access_list& reusable_access_list() {
    thread_local access_list list;
    list.clear();
    return list;
}

bool policy_enabled(const request_context& ctx) { return ctx.svc().chain.authorizing(); }

access_verdicts decide(const request_context& ctx, const access_list& accesses) {
    access_verdicts out;
    const policy_chain& chain = kafka_chain(ctx);
    if (!chain.authorizing() || accesses.empty()) {
        return out;
    }
    out.reserve(accesses.size());
    const std::string host = client_host(ctx);
    request_facts facts;
    facts.who = kafka_requester(ctx, host);
    facts.action = api_name_of(ctx);
    // The accesses go to the chain in as few calls as their links allow: one for a request
    // without links, another each time an access depends on one not decided yet. The batch's
    // storage is kept from request to request.
    thread_local std::vector<access> batch;
    thread_local std::vector<std::uint16_t> where;  // the declared index of each batch entry
    batch.clear();
    where.clear();
    auto flush = [&] {
        if (batch.empty()) {
            return;
        }
        facts.accesses = batch;
        chain.decide(facts);
        for (std::size_t k = 0; k < batch.size(); ++k) {
            out.set(where[k], batch[k].result);
        }
        batch.clear();
        where.clear();
    };
    auto pending = [&](std::uint16_t k) {
        return k != no_access && !where.empty() && k >= where.front();
    };
    for (std::size_t i = 0; i < accesses.size(); ++i) {
        const kafka_access& a = accesses[i];
        SLUICE_CHECK(a.only_if == no_access || a.only_if < i);
        SLUICE_CHECK(a.unless == no_access || a.unless < i);
        if (pending(a.only_if) || pending(a.unless)) {
            flush();
        }
        if (a.later || (a.only_if != no_access && !out.allowed(a.only_if))) {
            out.push_back(verdict::unchecked);
        } else if (a.none || (a.unless != no_access && out.allowed(a.unless))) {
            out.push_back(verdict::allowed);
        } else {
            out.push_back(verdict::unchecked);  // until the batch is decided
            batch.push_back(chain_access(a));
            where.push_back(static_cast<std::uint16_t>(i));
        }
    }
    flush();
    return out;
}

bool decide_late(const request_context& ctx, auth::acl_operation op, auth::resource_type type,
                 std::string_view name) {
    const policy_chain& chain = kafka_chain(ctx);
    if (!chain.authorizing()) {
        return true;
    }
    access one{op, type, name};
    request_facts facts;
    facts.who = kafka_requester(ctx, {});
    facts.action = api_name_of(ctx);
    facts.accesses = std::span<access>(&one, 1);
    chain.decide(facts);
    return one.allowed();
}

bool visible(const request_context& ctx, auth::acl_operation op, auth::resource_type type,
             std::string_view name) {
    return kafka_chain(ctx).visible(kafka_requester(ctx, {}), op, type, name);
}

std::int32_t authorized_operations(const request_context& ctx, auth::resource_type type,
                                   std::string_view name,
                                   std::span<const auth::acl_operation> ops) {
    return kafka_chain(ctx).authorized_operations(kafka_requester(ctx, {}), type, name, ops);
}

std::optional<acl_change_refusal> refuse_acl_change(const request_context& ctx,
                                                    std::string_view api) {
    using protocol::kafka::error_code;
    if (!policy_enabled(ctx)) {
        return acl_change_refusal{error_code::security_disabled,
                                  "no authorizer is configured on the broker"};
    }
    if (ctx.verdicts().denied(0)) {
        return acl_change_refusal{error_code::cluster_authorization_failed,
                                  std::string(api) + " needs ALTER on the cluster"};
    }
    return std::nullopt;
}

}  // namespace sluice::gateway
