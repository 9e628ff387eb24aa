// The security state a fleet of gateways shares in upstream mode, as records of the compacted
// topic `_sluice_security` on the cluster: users (salted SCRAM and PLAIN credentials, never a
// password), ACLs, client quotas and the SQS users' AWS access keys. Owned by auth/ (the byte
// layout only: no I/O); gateway/server tails the topic into the stores, `sluice users|acls|
// quotas --upstream` writes it.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "auth/authorizer.h"
#include "auth/aws_key_store.h"
#include "auth/client_quotas.h"
#include "auth/credential_store.h"

namespace sluice::auth {

/// The topic's name: compacted, one partition.
inline constexpr std::string_view security_topic = "_sluice_security";

/// One record: key = KIND ":" NAME, one per entity; a null value deletes it (a tombstone).
///   user:NAME        value: the credentials as DATA_DIR/credentials writes them after the name
///   acl:TYPE PATTERN PERMISSION OPERATION PRINCIPAL HOST NAME
///                    (as DATA_DIR/acls writes a line, fields percent-encoded); value "present"
///   quota:USER CLIENT  (each "-", "<default>" or "=" and the percent-encoded name, as in
///                    DATA_DIR/quotas); value "KEY=VALUE" for each key set, space-separated
///   aws-key:USER     value: "ACCESS_KEY_ID SECRET_BASE64" (SigV4 needs the secret itself)
struct security_record {
    std::string key;
    std::optional<std::string> value;

    bool operator==(const security_record&) const = default;
};

enum class security_kind { user, acl, quota, aws_key };

std::string_view to_string(security_kind k);

/// Everything the topic holds, decoded: what `sluice ... --upstream` edits and what a gateway
/// installs into its stores.
struct security_snapshot {
    std::map<std::string, user_credentials, std::less<>> users;
    std::set<acl_binding> acls;
    std::map<quota_entity, quota_values> quotas;
    std::map<std::string, aws_access_key, std::less<>> aws_keys;  // by user

    bool operator==(const security_snapshot&) const = default;
};

security_record user_record(const std::string& name, const user_credentials* creds);
security_record acl_record(const acl_binding& b, bool present);
security_record quota_record(const quota_entity& e, const quota_values* values);
security_record aws_key_record(const std::string& user, const aws_access_key* key);

/// The records that turn `before` into `after`: a value for each entity added or changed, a
/// tombstone for each one removed. Users before ACLs before quotas before keys, each sorted.
std::vector<security_record> security_diff(const security_snapshot& before,
                                           const security_snapshot& after);

/// What applying one record did.
struct applied_record {
    enum class outcome {
        applied,       // the snapshot holds the record's entity now (or no longer)
        unknown_kind,  // a kind this version does not know (a newer sluice wrote it): skipped
        invalid,       // a known kind whose key or value does not parse: skipped
    };
    outcome what = outcome::applied;
    std::optional<security_kind> kind;
    std::string detail;  // invalid: why (never a secret); unknown_kind: the kind
};

/// Applies one record of the topic to `s`. Untrusted bytes: never throws.
applied_record apply_security_record(security_snapshot& s, std::string_view key,
                                     std::optional<std::string_view> value);

}  // namespace sluice::auth
