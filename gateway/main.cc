// The sluice executable: parses the configuration, starts the broker and the listeners, and
// runs until SIGINT or SIGTERM.
#include <cstdio>
#include <exception>

#include "gateway/server/config.h"
#include "gateway/server/server.h"

int main(int argc, char** argv) {
    try {
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
