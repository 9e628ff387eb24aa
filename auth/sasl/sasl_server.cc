#include "auth/sasl/sasl_server.h"

#include "auth/sasl/oauthbearer.h"
#include "auth/sasl/plain.h"
#include "auth/sasl/scram.h"

namespace sluice::auth {

const std::vector<std::string>& supported_sasl_mechanisms() {
    static const std::vector<std::string> names = {"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512",
                                                   "OAUTHBEARER"};
    return names;
}

std::unique_ptr<sasl_server> make_sasl_server(std::string_view mechanism,
                                              const credential_store& users,
                                              const jwt_verifier* tokens) {
    if (mechanism == "PLAIN") {
        return std::make_unique<plain_server>(users);
    }
    if (mechanism == "SCRAM-SHA-256") {
        return std::make_unique<scram_server>(hash_algorithm::sha256, users);
    }
    if (mechanism == "SCRAM-SHA-512") {
        return std::make_unique<scram_server>(hash_algorithm::sha512, users);
    }
    if (mechanism == "OAUTHBEARER") {
        return std::make_unique<oauthbearer_server>(tokens);
    }
    return nullptr;
}

}  // namespace sluice::auth
