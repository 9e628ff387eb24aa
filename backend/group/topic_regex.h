// Client-supplied topic patterns of KIP-848 subscriptions (owned by backend/group): compiled
// with RE2 once per distinct pattern, and matched against whole topic names. compat: Kafka
// evaluates ConsumerGroupHeartbeat.SubscribedTopicRegex with RE2/J and Matcher.matches(): the
// whole name must match, and what RE2 does not support (backreferences, lookaround) does not
// compile. RE2 matches in time linear in the name whatever the pattern, and bounds the memory
// a pattern may compile to, so no pattern can stall the coordinator.
//
// Lifecycle: consumer_groups owns the cache; a compiled pattern is shared by the cache and
// the members that subscribe with it (a member keeps its own even once the cache drops it).
// Concurrency: topic_regex is immutable and thread-safe. The cache is thread-safe; its mutex
// is a leaf held only to find or insert a slot, never while compiling: the coordinator
// compiles a request's pattern before it locks the request's group, and callers of the same
// new pattern wait for its one compilation, not for the cache.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace re2 {
class RE2;
}  // namespace re2

namespace sluice::backend::group {

/// One compiled pattern.
class topic_regex {
  public:
    /// Use topic_regex_cache::compile.
    explicit topic_regex(std::unique_ptr<re2::RE2> re);
    ~topic_regex();
    topic_regex(const topic_regex&) = delete;
    topic_regex& operator=(const topic_regex&) = delete;

    /// Whether the whole of `topic` matches.
    bool matches(std::string_view topic) const;

  private:
    std::unique_ptr<re2::RE2> re_;
};

class topic_regex_cache {
  public:
    /// At most this many distinct patterns are kept; then the cache starts over.
    static constexpr std::size_t capacity = 1024;

    struct compiled {
        std::shared_ptr<const topic_regex> regex;  // null when the pattern does not compile
        std::string error;                         // why not (RE2's words)
    };

    /// The pattern, compiled at its first use (failures are remembered too).
    compiled compile(const std::string& pattern);

  private:
    struct slot {
        std::once_flag once;
        compiled result;
    };

    std::mutex mu_;
    std::unordered_map<std::string, std::shared_ptr<slot>> slots_;  // guarded by mu_
};

}  // namespace sluice::backend::group
