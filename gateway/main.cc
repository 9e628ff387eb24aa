// The sluice executable: parses the configuration, starts the broker and the listeners, and
// runs until SIGINT or SIGTERM. `sluice users ...` manages SASL users instead, `sluice acls ...`
// the ACLs, `sluice quotas ...` the client quotas, and `sluice settings` prints the declared
// settings (--markdown: docs/configuration.md's tables; --update-doc/--check-doc FILE).
//
// Exit codes (docs/operations.md#start-up-and-exit-codes): 0 after a shutdown on a signal (or
// --help, --version); 2 when sluice does not start, whatever the reason (a bad flag or setting,
// a port in use, a data dir it cannot use), with one line on stderr.
#include <sys/stat.h>

#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "gateway/cli/acls_command.h"
#include "gateway/core/config.h"
#include "gateway/core/settings.h"
#include "gateway/cli/quotas_command.h"
#include "gateway/server/server.h"
#include "gateway/cli/users_command.h"

int main(int argc, char** argv) {
    // Everything sluice creates (the data dir, segments, indexes, state files, the audit log,
    // temporary files) is for its own user only: folders 0700, files 0600, whatever the umask
    // it was started with. The storage code asks for these modes too; the mask also covers
    // files made through the standard library and spdlog.
    ::umask(077);
    std::optional<sluice::gateway::config> cfg;
    bool serving = false;
    try {
        if (argc >= 2 && std::strcmp(argv[1], "users") == 0) {
            std::vector<std::string> args(argv + 2, argv + argc);
            return sluice::gateway::run_users_command(args, std::cin, std::cout,
                                                     sluice::gateway::open_upstream_client);
        }
        if (argc >= 2 && std::strcmp(argv[1], "acls") == 0) {
            std::vector<std::string> args(argv + 2, argv + argc);
            return sluice::gateway::run_acls_command(args, std::cout,
                                                    sluice::gateway::open_upstream_client);
        }
        if (argc >= 2 && std::strcmp(argv[1], "quotas") == 0) {
            std::vector<std::string> args(argv + 2, argv + argc);
            return sluice::gateway::run_quotas_command(args, std::cout,
                                                      sluice::gateway::open_upstream_client);
        }
        const sluice::gateway::setting_catalog catalog = sluice::gateway::settings_catalog();
        if (argc >= 2 && std::strcmp(argv[1], "settings") == 0) {
            std::vector<std::string> args(argv + 2, argv + argc);
            return sluice::gateway::run_settings_command(args, catalog, std::cout, std::cerr);
        }
        cfg = sluice::gateway::parse_command_line(argc, argv, &catalog);
        if (!cfg) {
            return 0;
        }
        serving = true;
        return sluice::gateway::run_server(*cfg);
    } catch (const sluice::gateway::config_error& e) {
        // A setting from the environment or the file is named with where it came from.
        const std::string line = cfg ? cfg->explain(e.what()) : std::string(e.what());
        std::fprintf(stderr, "sluice: %s\n", line.c_str());
        return 2;
    } catch (const std::exception& e) {
        // run_server returns once it has served; what escapes it is a failed start, which
        // exits 2 like a bad setting. A command's own failure keeps exit code 1.
        std::fprintf(stderr, "sluice: %s\n", e.what());
        return serving ? 2 : 1;
    }
}
