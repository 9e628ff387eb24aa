// Contract: queues (backend/api/queues.h), for backends that provide them: send, receive,
// visibility, delete, receive counts, queue administration.
#include <algorithm>

#include "tests/backend/contract/contract_backends.h"

namespace sluice::backend::contract {
namespace {

using api::queue_name;

template <typename F>
class QueuesContract : public BackendContract<F> {
protected:
    void SetUp() override {
        BackendContract<F>::SetUp();
        if (this->queues() == nullptr) {
            GTEST_SKIP() << "the backend provides no queues interface";
        }
    }

    api::queues& q() { return *this->queues(); }

    void create(const std::string& name, api::attribute_map attrs = {}) {
        auto r = this->run(q().create_queue(queue_name(name), std::move(attrs), {}));
        ASSERT_TRUE(r) << r.error().code.message() << " " << r.error().message;
        EXPECT_EQ(*r, queue_name(name));
    }

    std::vector<api::sent_message> send(const std::string& name, std::vector<std::string> bodies) {
        std::vector<api::outgoing_message> msgs;
        for (auto& b : bodies) {
            api::outgoing_message m;
            m.body = std::move(b);
            msgs.push_back(std::move(m));
        }
        auto r = this->run(q().send_messages(queue_name(name), std::move(msgs)));
        EXPECT_TRUE(r) << (r ? "" : r.error().message);
        return r ? *r : std::vector<api::sent_message>{};
    }

    /// Receives without waiting, the messages in flight for `visibility_s`.
    std::vector<api::received_message> receive(const std::string& name, int max,
                                               int visibility_s = 30) {
        api::receive_request req;
        req.queue = queue_name(name);
        req.max_messages = max;
        req.visibility_timeout = std::chrono::seconds(visibility_s);
        req.wait = std::chrono::seconds(0);
        auto r = this->run(q().receive_messages(std::move(req)));
        EXPECT_TRUE(r) << (r ? "" : r.error().message);
        return r ? *r : std::vector<api::received_message>{};
    }

    /// Receives, waiting up to 5 s for `n` messages (a backend may make sent messages
    /// receivable a little later).
    std::vector<api::received_message> receive_n(const std::string& name, std::size_t n,
                                                 int visibility_s = 30) {
        std::vector<api::received_message> out;
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
        while (out.size() < n && std::chrono::steady_clock::now() < deadline) {
            api::receive_request req;
            req.queue = queue_name(name);
            req.max_messages = static_cast<std::int32_t>(std::min<std::size_t>(10, n - out.size()));
            req.visibility_timeout = std::chrono::seconds(visibility_s);
            req.wait = std::chrono::seconds(1);
            auto r = this->run(q().receive_messages(std::move(req)));
            EXPECT_TRUE(r) << (r ? "" : r.error().message);
            if (!r) {
                break;
            }
            for (auto& m : *r) {
                out.push_back(std::move(m));
            }
        }
        return out;
    }

    std::string attribute(const std::string& name, const std::string& attr) {
        auto r = this->run(q().get_attributes(queue_name(name), {attr}));
        if (!r) {
            ADD_FAILURE() << "get_attributes: " << r.error().message;
            return {};
        }
        auto it = r->find(attr);
        return it == r->end() ? std::string() : it->second;
    }
};
TYPED_TEST_SUITE(QueuesContract, backend_factories, factory_names);

TYPED_TEST(QueuesContract, SentMessagesAreReceived) {
    this->create("jobs");
    auto sent = this->send("jobs", {"one", "two"});
    ASSERT_EQ(sent.size(), 2u);
    for (const auto& s : sent) {
        EXPECT_FALSE(s.error.code) << s.error.message;
        EXPECT_FALSE(s.message_id.empty());
    }
    EXPECT_NE(sent[0].message_id, sent[1].message_id);

    auto got = this->receive_n("jobs", 2);
    ASSERT_EQ(got.size(), 2u);
    std::vector<std::string> bodies;
    for (const auto& m : got) {
        bodies.push_back(m.body);
        EXPECT_EQ(m.receive_count, 1);
        EXPECT_FALSE(m.receipt_handle.empty());
        EXPECT_GT(m.sent_timestamp_ms, 0);
    }
    std::sort(bodies.begin(), bodies.end());
    EXPECT_EQ(bodies, (std::vector<std::string>{"one", "two"}));
}

TYPED_TEST(QueuesContract, ReceivedMessageIsInvisibleUntilItsTimeoutChanges) {
    this->create("jobs");
    this->send("jobs", {"m"});
    auto first = this->receive_n("jobs", 1);
    ASSERT_EQ(first.size(), 1u);
    // In flight: nobody else receives it.
    EXPECT_TRUE(this->receive("jobs", 10).empty());

    std::vector<api::visibility_change> changes{{first[0].receipt_handle, std::chrono::seconds(0)}};
    auto r = this->run(this->q().change_visibility(queue_name("jobs"), changes));
    ASSERT_TRUE(r) << r.error().message;
    ASSERT_EQ(r->size(), 1u);
    EXPECT_FALSE((*r)[0].code) << (*r)[0].message;

    auto again = this->receive_n("jobs", 1);
    ASSERT_EQ(again.size(), 1u);
    EXPECT_EQ(again[0].message_id, first[0].message_id);
    EXPECT_EQ(again[0].receive_count, 2);
    EXPECT_NE(again[0].receipt_handle, first[0].receipt_handle);
}

TYPED_TEST(QueuesContract, DeletedMessageIsNotReceivedAgain) {
    this->create("jobs");
    this->send("jobs", {"m"});
    auto got = this->receive_n("jobs", 1, 1);
    ASSERT_EQ(got.size(), 1u);
    auto r = this->run(this->q().delete_messages(queue_name("jobs"), {got[0].receipt_handle}));
    ASSERT_TRUE(r) << r.error().message;
    ASSERT_EQ(r->size(), 1u);
    EXPECT_FALSE((*r)[0].code);
    // Making it visible again is no longer possible, and it is not received.
    std::vector<api::visibility_change> changes{{got[0].receipt_handle, std::chrono::seconds(0)}};
    auto vis = this->run(this->q().change_visibility(queue_name("jobs"), changes));
    ASSERT_TRUE(vis);
    EXPECT_TRUE((*vis)[0].code);
    EXPECT_TRUE(this->receive("jobs", 10).empty());
    EXPECT_EQ(this->attribute("jobs", "ApproximateNumberOfMessages"), "0");
}

TYPED_TEST(QueuesContract, ApproximateCountsFollowTheMessages) {
    this->create("jobs");
    this->send("jobs", {"a", "b", "c"});
    EXPECT_EQ(this->attribute("jobs", "ApproximateNumberOfMessages"), "3");
    auto got = this->receive_n("jobs", 1);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(this->attribute("jobs", "ApproximateNumberOfMessages"), "2");
    EXPECT_EQ(this->attribute("jobs", "ApproximateNumberOfMessagesNotVisible"), "1");
}

TYPED_TEST(QueuesContract, MessagesSurviveReopening) {
    this->create("jobs");
    this->send("jobs", {"kept"});
    this->reopen();
    auto got = this->receive_n("jobs", 1);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].body, "kept");
}

TYPED_TEST(QueuesContract, QueueAttributesAreKeptAndChecked) {
    this->create("slow", {{"VisibilityTimeout", "120"}});
    EXPECT_EQ(this->attribute("slow", "VisibilityTimeout"), "120");
    auto set = this->run(this->q().set_attributes(queue_name("slow"), {{"VisibilityTimeout", "60"}}));
    ASSERT_TRUE(set) << set.error().message;
    EXPECT_EQ(this->attribute("slow", "VisibilityTimeout"), "60");

    auto bad_value = this->run(
        this->q().set_attributes(queue_name("slow"), {{"VisibilityTimeout", "-1"}}));
    ASSERT_FALSE(bad_value);
    EXPECT_EQ(api::reason(bad_value.error().code), api::errc::invalid_attribute_value);
    auto bad_name = this->run(this->q().set_attributes(queue_name("slow"), {{"NoSuchThing", "1"}}));
    ASSERT_FALSE(bad_name);
    EXPECT_EQ(api::reason(bad_name.error().code), api::errc::invalid_attribute_name);
    // Creating it again with other values is refused; with the same ones it is answered.
    auto other = this->run(
        this->q().create_queue(queue_name("slow"), {{"VisibilityTimeout", "5"}}, {}));
    ASSERT_FALSE(other);
    EXPECT_EQ(api::reason(other.error().code), api::errc::queue_already_exists);
    auto same = this->run(
        this->q().create_queue(queue_name("slow"), {{"VisibilityTimeout", "60"}}, {}));
    EXPECT_TRUE(same);
}

TYPED_TEST(QueuesContract, ListAndDeleteQueues) {
    this->create("app-a");
    this->create("app-b");
    this->create("other");
    auto listed = this->run(this->q().list_queues("app-"));
    EXPECT_EQ(listed, (std::vector<queue_name>{queue_name("app-a"), queue_name("app-b")}));

    auto del = this->run(this->q().delete_queue(queue_name("app-a")));
    ASSERT_TRUE(del) << del.error().message;
    EXPECT_EQ(this->run(this->q().list_queues("app-")),
              (std::vector<queue_name>{queue_name("app-b")}));
    auto gone = this->run(this->q().get_queue(queue_name("app-a")));
    ASSERT_FALSE(gone);
    EXPECT_EQ(api::reason(gone.error().code), api::errc::queue_does_not_exist);
}

TYPED_TEST(QueuesContract, UnknownQueueErrors) {
    auto get = this->run(this->q().get_queue(queue_name("nope")));
    ASSERT_FALSE(get);
    EXPECT_EQ(api::reason(get.error().code), api::errc::queue_does_not_exist);
    std::vector<api::outgoing_message> msgs(1);
    msgs[0].body = "x";
    auto send = this->run(this->q().send_messages(queue_name("nope"), std::move(msgs)));
    ASSERT_FALSE(send);
    EXPECT_EQ(api::reason(send.error().code), api::errc::queue_does_not_exist);
    auto del = this->run(this->q().delete_queue(queue_name("nope")));
    ASSERT_FALSE(del);
    EXPECT_EQ(api::reason(del.error().code), api::errc::queue_does_not_exist);
}

TYPED_TEST(QueuesContract, ATopicIsAQueue) {
    // Records a Kafka producer writes are messages of the queue of the same name (stamped
    // now: older records would be past the queue's retention period).
    this->create_topic("events", 1);
    this->produce_values("events", 0, {"from-kafka"}, now_ms());
    auto adopted = this->run(this->q().get_queue(queue_name("events")));
    ASSERT_TRUE(adopted) << adopted.error().message;
    auto got = this->receive_n("events", 1);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].body, "from-kafka");
}

TYPED_TEST(QueuesContract, InvalidQueueNameIsRefused) {
    auto r = this->run(this->q().create_queue(queue_name("bad name!"), {}, {}));
    ASSERT_FALSE(r);
    EXPECT_EQ(api::reason(r.error().code), api::errc::invalid_parameter_value);
    EXPECT_FALSE(r.error().message.empty());
}

}  // namespace
}  // namespace sluice::backend::contract
