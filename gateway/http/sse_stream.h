// Server-Sent Events of a topic (owned by gateway/http): GET /topics/{topic}/events and
// GET /v3/clusters/{cluster_id}/topics/{topic_name}/events. One event per record:
//
//   id: 0:42,1:17          for every partition read so far, the offset the stream continues at
//   data: {"topic","partition","offset","timestamp","key","value","headers"}
//
// so a browser's automatic reconnect (EventSource sends the last id as Last-Event-ID) resumes
// exactly after the last event it saw. Query: from=earliest|latest|<offset>|timestamp:<ms>
// (default latest), group=<id> (the stream is a member of that consumer group: it resumes at
// the group's commits and commits what it has sent), format=string|base64|json, limit=<n>
// (end the stream after n events; EventSource reconnects), last_event_id=<id> (for clients
// that cannot send the header). The first chunk sets the client's reconnect delay
// (sse.retry.ms); comment lines keep an idle stream alive (sse.keepalive.interval.ms); a client
// that does not drain a chunk in sse.write.timeout.ms is dropped; at most sse.queue.max.bytes
// of events are read ahead of the socket. The router's guard has run before the stream starts:
// a page on an origin http.allowed.origins does not admit gets 403 (cors.h), and a listed
// one's stream carries Access-Control-Allow-Origin.
#pragma once

#include <functional>

#include <boost/asio/any_io_executor.hpp>

#include "gateway/http/rest/rest_support.h"
#include "gateway/httpcore/router.h"

namespace sluice::gateway {

class quota_meter;

/// Registers both event routes. `quotas` (null: none) paces each stream by its principal's
/// consumer_byte_rate.
void add_sse_routes(router& routes, rest::rest_context& rc,
                    std::function<boost::asio::any_io_executor()> next_executor,
                    quota_meter* quotas = nullptr);

}  // namespace sluice::gateway
