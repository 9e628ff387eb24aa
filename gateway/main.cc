// The sluice executable: parses the configuration, starts the broker and the listeners, and
// runs until SIGINT or SIGTERM. `sluice users ...` manages SASL users instead, `sluice acls ...`
// the ACLs, `sluice quotas ...` the client quotas.
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "gateway/server/acls_command.h"
#include "gateway/server/config.h"
#include "gateway/server/quotas_command.h"
#include "gateway/server/server.h"
#include "gateway/server/users_command.h"

int main(int argc, char** argv) {
    std::optional<sluice::gateway::config> cfg;
    try {
        if (argc >= 2 && std::strcmp(argv[1], "users") == 0) {
            std::vector<std::string> args(argv + 2, argv + argc);
            return sluice::gateway::run_users_command(args, std::cin, std::cout);
        }
        if (argc >= 2 && std::strcmp(argv[1], "acls") == 0) {
            std::vector<std::string> args(argv + 2, argv + argc);
            return sluice::gateway::run_acls_command(args, std::cout);
        }
        if (argc >= 2 && std::strcmp(argv[1], "quotas") == 0) {
            std::vector<std::string> args(argv + 2, argv + argc);
            return sluice::gateway::run_quotas_command(args, std::cout);
        }
        cfg = sluice::gateway::parse_command_line(argc, argv);
        if (!cfg) {
            return 0;
        }
        return sluice::gateway::run_server(*cfg);
    } catch (const sluice::gateway::config_error& e) {
        // A setting from the environment or the file is named with where it came from.
        const std::string line = cfg ? cfg->explain(e.what()) : std::string(e.what());
        std::fprintf(stderr, "sluice: %s\n", line.c_str());
        return 2;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "sluice: %s\n", e.what());
        return 1;
    }
}
