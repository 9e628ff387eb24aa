#include "gateway/kafka/throttle.h"

#include <algorithm>
#include <limits>

#include "gateway/kafka/kafka_policy.h"

namespace sluice::gateway {
namespace {

std::int32_t apply(request_context& ctx, std::chrono::milliseconds ms,
                   std::int16_t kip219_version) {
    if (ms.count() <= 0) {
        return 0;
    }
    ctx.throttle(ms, ctx.version() < kip219_version);
    return static_cast<std::int32_t>(std::min<std::int64_t>(ms.count(), INT32_MAX));
}

}  // namespace

std::int32_t record_quota(request_context& ctx, auth::quota_kind kind, double amount,
                          std::int16_t kip219_version) {
    const policy_chain& chain = kafka_chain(ctx);
    if (!chain.metering()) {
        return 0;
    }
    return apply(ctx, chain.record(kafka_requester(ctx), kind, amount), kip219_version);
}

std::int32_t throttled_already(request_context& ctx, auth::quota_kind kind,
                               std::int16_t kip219_version) {
    const policy_chain& chain = kafka_chain(ctx);
    if (!chain.metering()) {
        return 0;
    }
    return apply(ctx, chain.throttled_now(kafka_requester(ctx), kind), kip219_version);
}

std::int32_t record_request_time(request_context& ctx) {
    if (ctx.busy() == nullptr) {
        return 0;
    }
    // Since KIP-219 every API answers its throttle time at once and the broker then mutes the
    // connection: no response is delayed for the request quota.
    const auto ms = kafka_chain(ctx).record_request_time(kafka_requester(ctx), ctx.busy()->total());
    return apply(ctx, ms, std::numeric_limits<std::int16_t>::min());
}

bool meters_request_time(const request_context& ctx) {
    return kafka_chain(ctx).quota_applies(kafka_requester(ctx),
                                          auth::quota_kind::request_percentage);
}

std::optional<double> quota_headroom(request_context& ctx, auth::quota_kind kind) {
    return kafka_chain(ctx).headroom(kafka_requester(ctx), kind);
}

}  // namespace sluice::gateway
