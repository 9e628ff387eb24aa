// The sluice executable: parses the configuration, starts the broker and the listeners, and
// runs until SIGINT or SIGTERM. `sluice users ...` manages SASL users instead.
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "gateway/server/config.h"
#include "gateway/server/server.h"
#include "gateway/server/users_command.h"

int main(int argc, char** argv) {
    try {
        if (argc >= 2 && std::strcmp(argv[1], "users") == 0) {
            std::vector<std::string> args(argv + 2, argv + argc);
            return sluice::gateway::run_users_command(args, std::cin, std::cout);
        }
        auto cfg = sluice::gateway::parse_command_line(argc, argv);
        if (!cfg) {
            return 0;
        }
        return sluice::gateway::run_server(*cfg);
    } catch (const sluice::gateway::config_error& e) {
        std::fprintf(stderr, "sluice: %s\n", e.what());
        return 2;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "sluice: %s\n", e.what());
        return 1;
    }
}
