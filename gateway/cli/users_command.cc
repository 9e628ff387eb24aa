#include "gateway/cli/users_command.h"

#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <filesystem>
#include <iostream>
#include <optional>
#include <set>
#include <system_error>

#include "auth/aws_key_store.h"
#include "auth/credential_store.h"
#include "gateway/cli/command_flags.h"
#include "gateway/cli/security_state.h"
#include "gateway/core/config.h"
#include "gateway/policy/audit.h"

namespace sluice::gateway {
namespace {

/// Turns terminal echo off while a password is typed (when stdin is a terminal).
class echo_off {
public:
    explicit echo_off(bool active) {
        if (active && ::isatty(STDIN_FILENO) && ::tcgetattr(STDIN_FILENO, &saved_) == 0) {
            termios quiet = saved_;
            quiet.c_lflag &= ~static_cast<tcflag_t>(ECHO);
            active_ = ::tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet) == 0;
        }
    }
    ~echo_off() {
        if (active_) {
            ::tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved_);
            std::cerr << "\n";
        }
    }
    echo_off(const echo_off&) = delete;
    echo_off& operator=(const echo_off&) = delete;

private:
    termios saved_{};
    bool active_ = false;
};

/// The password: the first line of `in`, without its line end.
std::string read_password(std::istream& in, bool from_terminal) {
    if (from_terminal) {
        std::cerr << "Password: " << std::flush;
    }
    echo_off quiet(from_terminal);
    std::string line;
    if (!std::getline(in, line) && line.empty()) {
        throw config_error("users set: no password on standard input");
    }
    if (!line.empty() && line.back() == '\r') {
        line.pop_back();
    }
    if (line.empty()) {
        throw config_error("users set: the password is empty");
    }
    return line;
}

struct users_args {
    std::string action;
    std::optional<std::string> name;
    security_location where;
    int iterations = auth::min_scram_iterations;
    std::optional<std::string> aws_access_key_id;
};

users_args parse_users_args(const std::vector<std::string>& args) {
    users_args a;
    command_flags flags("users", args);
    while (flags.next()) {
        const std::string arg = flags.arg();
        auto value = [&] { return flags.value(); };
        if (a.where.take(flags, "users")) {
            continue;
        }
        if (arg == "--iterations") {
            const std::string v = value();
            int n = 0;
            auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
            if (ec != std::errc() || ptr != v.data() + v.size() ||
                n < auth::min_scram_iterations || n > auth::max_scram_iterations) {
                throw config_error("users: --iterations: expected " +
                                   std::to_string(auth::min_scram_iterations) + " to " +
                                   std::to_string(auth::max_scram_iterations) + ", got '" + v +
                                   "'");
            }
            a.iterations = n;
        } else if (arg == "--aws-access-key-id") {
            a.aws_access_key_id = value();
        } else if (arg.starts_with("--")) {
            throw config_error("users: unknown option '" + arg + "' (see sluice users --help)");
        } else if (a.action.empty()) {
            a.action = arg;
        } else if (!a.name) {
            a.name = arg;
        } else {
            throw config_error("users: unexpected argument '" + arg + "'");
        }
    }
    return a;
}

}  // namespace

std::string users_usage_text() {
    return R"(Usage: sluice users set NAME (--data-dir DIR | --upstream BOOTSTRAP) [--iterations N]
       sluice users set NAME (--data-dir DIR | --upstream BOOTSTRAP) --aws-access-key-id ID
       sluice users delete NAME (--data-dir DIR | --upstream BOOTSTRAP)
       sluice users list (--data-dir DIR | --upstream BOOTSTRAP)

Manages the SASL users of a stopped sluice (DIR/credentials, readable by its owner only).
`set` reads the password from standard input (its first line) and stores salted SCRAM-SHA-256
and SCRAM-SHA-512 credentials and a salted PLAIN verifier, never the password itself;
--iterations sets the SCRAM/PBKDF2 iteration count (default 4096, Kafka's minimum).
With --aws-access-key-id, `set` instead reads the user's AWS secret access key from standard
input and keeps it, as SigV4 needs it, in DIR/aws-keys (mode 0600) for the SQS front
(sqs.authentication=sigv4); a user has one key, a new one replaces it. `list` shows each
user's access key id, `delete` removes the user's SASL credentials and access key.
)" + security_location_usage();
}

int run_users_command(const std::vector<std::string>& args, std::istream& in, std::ostream& out,
                      const upstream_opener& open) {
    if (args.empty() || args[0] == "--help" || args[0] == "-h") {
        out << users_usage_text();
        return args.empty() ? 2 : 0;
    }
    const users_args a = parse_users_args(args);
    if (a.action != "set" && a.action != "delete" && a.action != "list") {
        throw config_error("users: unknown action '" + a.action + "' (set, delete or list)");
    }
    a.where.check("users " + a.action);
    if (a.action == "list" && a.name) {
        throw config_error("users list: takes no user name");
    }
    if (a.action != "list" && !a.name) {
        throw config_error("users " + a.action + ": name the user");
    }
    if (a.name && !auth::valid_user_name(*a.name)) {
        throw config_error("users " + a.action + ": '" + *a.name +
                           "' is not a valid user name (1 to 255 bytes, no spaces or control "
                           "characters)");
    }
    if (a.aws_access_key_id && a.action != "set") {
        throw config_error("users " + a.action + ": --aws-access-key-id goes with set only");
    }
    security_state state("users", a.where, open,
                         "is in use by a running sluice; stop it to change its users");
    // The server's audit log file, written directly (the server is stopped). `list` changes
    // nothing and opens nothing; upstream mode has no data dir.
    std::optional<audit_log> audit;
    std::optional<scoped_audit_log> audit_installed;
    if (a.action != "list" && a.where.data_dir) {
        audit.emplace(audit_settings_for(*a.where.data_dir), false);
        audit_installed.emplace(*audit);
    }
    auth::credential_store& store = state.users();
    auth::aws_key_store& keys = state.aws_keys();
    if (a.action == "list") {
        std::set<std::string> names;
        for (const auto& name : store.users()) {
            names.insert(name);
        }
        for (const auto& k : keys.keys()) {
            names.insert(k.user);
        }
        for (const auto& name : names) {
            out << name;
            if (auto k = keys.find_user(name)) {
                out << " aws-access-key-id=" << k->access_key_id;
            }
            out << "\n";
        }
        return 0;
    }
    if (a.action == "delete") {
        const bool had_sasl = store.erase(*a.name);
        const bool had_key = keys.erase_user(*a.name);
        if (!had_sasl && !had_key) {
            throw config_error("users delete: no user '" + *a.name + "'");
        }
        if (had_sasl) {
            store.save();
        }
        if (had_key) {
            keys.save();
        }
        state.publish();
        audit_user_changed(command_audit_source(), *a.name, true, {}, "cli");
        out << "deleted user " << *a.name << "\n";
        return 0;
    }
    if (a.aws_access_key_id) {
        if (!auth::valid_access_key_id(*a.aws_access_key_id)) {
            throw config_error("users set: --aws-access-key-id: 16 to 128 letters and digits");
        }
        const bool from_terminal = &in == &std::cin && ::isatty(STDIN_FILENO);
        if (from_terminal) {
            std::cerr << "AWS secret access key: " << std::flush;
        }
        std::string secret;
        {
            echo_off quiet(from_terminal);
            if (!std::getline(in, secret) && secret.empty()) {
                throw config_error("users set: no secret access key on standard input");
            }
        }
        if (!secret.empty() && secret.back() == '\r') {
            secret.pop_back();
        }
        if (secret.empty()) {
            throw config_error("users set: the secret access key is empty");
        }
        try {
            keys.set(*a.name, *a.aws_access_key_id, secret);
        } catch (const std::invalid_argument& e) {
            throw config_error(std::string("users set: ") + e.what());
        }
        keys.save();
        state.publish();
        audit_user_changed(command_audit_source(), *a.name, false, {"SigV4"}, "cli");
        out << "set AWS access key " << *a.aws_access_key_id << " for user " << *a.name << "\n";
        return 0;
    }
    const bool terminal = &in == &std::cin && ::isatty(STDIN_FILENO);
    const std::string password = read_password(in, terminal);
    const bool existed = store.find(*a.name).has_value();
    store.set(*a.name, auth::make_user_credentials(password, a.iterations));
    store.save();
    state.publish();
    audit_user_changed(command_audit_source(), *a.name, false,
                       {"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}, "cli");
    out << (existed ? "updated user " : "created user ") << *a.name
        << " (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)\n";
    return 0;
}

}  // namespace sluice::gateway
