#include "gateway/cli/acls_command.h"

#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <stdexcept>

#include "auth/authorizer.h"
#include "gateway/cli/command_flags.h"
#include "gateway/core/config.h"
#include "gateway/policy/audit.h"

namespace sluice::gateway {
namespace {

struct resource {
    auth::resource_type type;
    std::string name;
};

struct acls_args {
    std::string action;
    security_location where;
    std::vector<std::string> allow_principals;
    std::vector<std::string> deny_principals;
    std::vector<std::string> allow_hosts;
    std::vector<std::string> deny_hosts;
    std::vector<auth::acl_operation> operations;
    std::vector<resource> resources;
    std::optional<auth::pattern_type> pattern;
    std::optional<std::string> principal;  // list: only this principal's ACLs
};

acls_args parse_acls_args(const std::vector<std::string>& args) {
    acls_args a;
    command_flags flags("acls", args);
    while (flags.next()) {
        const std::string arg = flags.arg();
        auto value = [&] { return flags.value(); };
        auto nonempty = [&](std::string v) {
            if (v.empty()) {
                throw config_error("acls: " + arg + ": empty value");
            }
            return v;
        };
        if (a.where.take(flags, "acls")) {
            continue;
        }
        if (arg == "--allow-principal") {
            a.allow_principals.push_back(nonempty(value()));
        } else if (arg == "--deny-principal") {
            a.deny_principals.push_back(nonempty(value()));
        } else if (arg == "--allow-host") {
            a.allow_hosts.push_back(nonempty(value()));
        } else if (arg == "--deny-host") {
            a.deny_hosts.push_back(nonempty(value()));
        } else if (arg == "--principal") {
            a.principal = nonempty(value());
        } else if (arg == "--operation") {
            const std::string v = value();
            const auto op = auth::parse_acl_operation(v);
            if (!op || *op == auth::acl_operation::unknown || *op == auth::acl_operation::any) {
                throw config_error("acls: --operation: unknown operation '" + v +
                                   "' (Read, Write, Create, Delete, Alter, Describe, "
                                   "ClusterAction, DescribeConfigs, AlterConfigs, "
                                   "IdempotentWrite, All)");
            }
            a.operations.push_back(*op);
        } else if (arg == "--topic") {
            a.resources.push_back({auth::resource_type::topic, nonempty(value())});
        } else if (arg == "--group") {
            a.resources.push_back({auth::resource_type::group, nonempty(value())});
        } else if (arg == "--transactional-id") {
            a.resources.push_back({auth::resource_type::transactional_id, nonempty(value())});
        } else if (arg == "--cluster") {
            if (flags.has_inline_value()) {
                throw config_error("acls: --cluster takes no value");
            }
            a.resources.push_back(
                {auth::resource_type::cluster, std::string(auth::cluster_resource_name)});
        } else if (arg == "--resource-pattern-type") {
            const std::string v = value();
            const auto p = auth::parse_pattern_type(v);
            if (!p || *p == auth::pattern_type::unknown) {
                throw config_error("acls: --resource-pattern-type: expected literal, prefixed, "
                                   "any or match, got '" + v + "'");
            }
            a.pattern = *p;
        } else if (arg.starts_with("-")) {
            throw config_error("acls: unknown option '" + arg + "' (see sluice acls --help)");
        } else if (a.action.empty()) {
            a.action = arg;
        } else {
            throw config_error("acls: unexpected argument '" + arg + "'");
        }
    }
    return a;
}

void print(std::ostream& out, const std::vector<auth::acl_binding>& bindings) {
    for (const auto& b : bindings) {
        out << auth::describe(b) << "\n";
    }
}

}  // namespace

std::string acls_usage_text() {
    return R"(Usage: sluice acls add WHERE (--allow-principal P | --deny-principal P)...
           [--allow-host H]... [--deny-host H]... [--operation OP]...
           RESOURCE... [--resource-pattern-type literal|prefixed]
       sluice acls remove WHERE RESOURCE... [principals, hosts, operations as add]
           [--resource-pattern-type literal|prefixed|any|match]
       sluice acls list WHERE [RESOURCE...] [--principal P]
           [--resource-pattern-type literal|prefixed|any|match]
RESOURCE: --topic NAME, --group NAME, --transactional-id ID, --cluster (each repeatable).
WHERE: --data-dir DIR | --upstream BOOTSTRAP.

Manages the ACLs of a stopped sluice (DIR/acls), with kafka-acls' flags. Principals are
Kafka's (User:alice, User:* for everyone); hosts default to * (every host); operations are
Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs, AlterConfigs,
IdempotentWrite, All (default All). A NAME of * with the literal pattern is every resource
of the type; prefixed matches names starting with NAME. `remove` without principals or
operations removes every ACL of the resources. A running sluice changes its ACLs through
CreateAcls and DeleteAcls (kafka-acls --bootstrap-server) instead.
)" + security_location_usage();
}

int run_acls_command(const std::vector<std::string>& args, std::ostream& out,
                     const upstream_opener& open) {
    if (args.empty() || args[0] == "--help" || args[0] == "-h") {
        out << acls_usage_text();
        return args.empty() ? 2 : 0;
    }
    const acls_args a = parse_acls_args(args);
    if (a.action != "add" && a.action != "remove" && a.action != "list") {
        throw config_error("acls: unknown action '" + a.action + "' (add, remove or list)");
    }
    a.where.check("acls " + a.action);
    const bool has_principals = !a.allow_principals.empty() || !a.deny_principals.empty();
    if (a.action == "add") {
        if (!has_principals) {
            throw config_error("acls add: give --allow-principal or --deny-principal");
        }
        if (a.resources.empty()) {
            throw config_error("acls add: name a resource (--topic, --group, "
                               "--transactional-id or --cluster)");
        }
        if (a.pattern && *a.pattern != auth::pattern_type::literal &&
            *a.pattern != auth::pattern_type::prefixed) {
            throw config_error("acls add: --resource-pattern-type must be literal or prefixed");
        }
    }
    if (a.action == "remove" && a.resources.empty()) {
        throw config_error("acls remove: name a resource (--topic, --group, "
                           "--transactional-id or --cluster)");
    }
    if (a.action == "list" && (has_principals || !a.operations.empty() ||
                               !a.allow_hosts.empty() || !a.deny_hosts.empty())) {
        throw config_error("acls list: takes resources and --principal only");
    }
    if (a.action != "list" && a.principal) {
        throw config_error("acls " + a.action + ": --principal goes with list only");
    }
    if (!a.allow_hosts.empty() && a.allow_principals.empty()) {
        throw config_error("acls " + a.action + ": --allow-host needs --allow-principal");
    }
    if (!a.deny_hosts.empty() && a.deny_principals.empty()) {
        throw config_error("acls " + a.action + ": --deny-host needs --deny-principal");
    }

    security_state state("acls", a.where, open,
                         "is in use by a running sluice; stop it to change its ACLs (or use "
                         "CreateAcls/DeleteAcls)");
    auth::authorizer* authz = &state.acls();
    // The running server's audit log file, written directly (the server is stopped);
    // upstream mode has no data dir.
    std::optional<audit_log> audit;
    std::optional<scoped_audit_log> audit_installed;
    if (a.where.data_dir) {
        audit.emplace(audit_settings_for(*a.where.data_dir), false);
        audit_installed.emplace(*audit);
    }

    const std::vector<std::string> any_host = {"*"};
    const std::vector<auth::acl_operation> all_ops = {auth::acl_operation::all};
    // Every (resource, principal, host, operation) the flags name.
    auto bindings_of = [&](auth::pattern_type pattern) {
        std::vector<auth::acl_binding> out_bindings;
        for (const auto& r : a.resources) {
            for (auto perm : {auth::acl_permission::allow, auth::acl_permission::deny}) {
                const bool allow = perm == auth::acl_permission::allow;
                const auto& principals = allow ? a.allow_principals : a.deny_principals;
                const auto& given_hosts = allow ? a.allow_hosts : a.deny_hosts;
                const auto& hosts = given_hosts.empty() ? any_host : given_hosts;
                const auto& ops = a.operations.empty() ? all_ops : a.operations;
                for (const auto& p : principals) {
                    for (const auto& h : hosts) {
                        for (auto op : ops) {
                            out_bindings.push_back({r.type, r.name, pattern, p, h, op, perm});
                        }
                    }
                }
            }
        }
        return out_bindings;
    };

    try {
        if (a.action == "add") {
            const auto bindings = bindings_of(a.pattern.value_or(auth::pattern_type::literal));
            // All or nothing: check every binding before storing any.
            for (const auto& b : bindings) {
                if (auto why = auth::validate(b)) {
                    throw config_error("acls add: " + auth::describe(b) + ": " + *why);
                }
            }
            authz->create_acls(bindings);
            state.publish();
            audit_acl_changed(command_audit_source(), false, bindings);
            out << "Added:\n";
            print(out, bindings);
            return 0;
        }
        const auto pattern =
            a.pattern.value_or(a.action == "list" && a.resources.empty()
                                   ? auth::pattern_type::any
                                   : auth::pattern_type::literal);
        std::vector<auth::acl_binding_filter> filters;
        if (a.action == "list" && a.resources.empty()) {
            auth::acl_binding_filter f;
            f.pattern = a.pattern.value_or(auth::pattern_type::any);
            if (f.pattern == auth::pattern_type::any || f.pattern == auth::pattern_type::match) {
                f.pattern = auth::pattern_type::any;  // no name: every binding
            }
            filters.push_back(f);
        } else if (a.action == "remove" && has_principals) {
            for (const auto& b : bindings_of(pattern)) {
                filters.push_back({b.type, b.name, b.pattern, b.principal, b.host,
                                   a.operations.empty() ? auth::acl_operation::any : b.operation,
                                   b.permission});
            }
        } else {
            for (const auto& r : a.resources) {
                auth::acl_binding_filter f;
                f.type = r.type;
                f.name = r.name;
                f.pattern = pattern;
                for (auto op : a.operations) {
                    f.operation = op;
                    filters.push_back(f);
                }
                if (a.operations.empty()) {
                    filters.push_back(f);
                }
            }
        }
        for (auto& f : filters) {
            f.principal = a.principal ? a.principal : f.principal;
        }
        if (a.action == "list") {
            for (const auto& f : filters) {
                print(out, authz->describe_acls(f));
            }
            return 0;
        }
        std::size_t removed = 0;
        const auto deleted = authz->delete_acls(filters);
        state.publish();
        out << "Removed:\n";
        for (const auto& r : deleted) {
            removed += r.deleted.size();
            print(out, r.deleted);
            audit_acl_changed(command_audit_source(), true, r.deleted);
        }
        if (removed == 0) {
            out << "(no ACL matched)\n";
        }
        return 0;
    } catch (const std::runtime_error& e) {
        if (dynamic_cast<const config_error*>(&e) != nullptr) {
            throw;
        }
        std::cerr << "sluice: acls: " << e.what() << "\n";
        return 1;
    }
}

}  // namespace sluice::gateway
