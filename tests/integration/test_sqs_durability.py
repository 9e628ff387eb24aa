"""Queue state through SIGKILL and restart: nothing acknowledged as sent is lost, nothing
acknowledged as deleted comes back, a received message that was not deleted reappears after its
visibility timeout (also across the restart), and receipt handles stay valid."""
import threading

from botocore.exceptions import BotoCoreError, ClientError

from harness import Sluice
from sqs_support import client, receive_all


def restarted(s):
    s.kill()
    return s.start()


def test_sigkill_in_the_middle_of_a_consume_loop():
    s = Sluice(sqs=True).start()
    try:
        c = client(s)
        url = c.create_queue(QueueName="work", Attributes={"VisibilityTimeout": "3"})["QueueUrl"]
        for b in range(20):
            r = c.send_message_batch(QueueUrl=url, Entries=[
                {"Id": str(i), "MessageBody": f"m{b * 10 + i}"} for i in range(10)])
            assert len(r["Successful"]) == 10
        sent = {f"m{i}" for i in range(200)}

        deleted = set()      # deletions the server acknowledged
        in_flight = set()    # received, not (acknowledged as) deleted when the kill came
        acked_late = set()   # sent by a producer while the consumer runs, acknowledged
        stop = threading.Event()

        def produce():
            pc = client(s)
            n = 0
            while not stop.is_set():
                body = f"late{n}"
                try:
                    pc.send_message(QueueUrl=url, MessageBody=body)
                except (BotoCoreError, ClientError):
                    return
                acked_late.add(body)
                n += 1

        producer = threading.Thread(target=produce)
        producer.start()
        try:
            while len(deleted) < 100:
                got = c.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=2)
                msgs = got.get("Messages", [])
                in_flight |= {m["Body"] for m in msgs}
                r = c.delete_message_batch(QueueUrl=url, Entries=[
                    {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(msgs)]) if msgs else {"Successful": []}
                ok = {msgs[int(e["Id"])]["Body"] for e in r["Successful"]}
                deleted |= ok
                in_flight -= ok
            # Received, and killed before the delete is sent.
            last = c.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=2)
            in_flight |= {m["Body"] for m in last.get("Messages", [])}
            s.kill()
        finally:
            stop.set()
            producer.join(30)
        assert in_flight, "the kill must come with messages in flight"

        s.start()
        c = client(s)
        expected = (sent | acked_late) - deleted
        seen = {}
        deadline_rounds = 200
        while not expected.issubset(seen) and deadline_rounds > 0:
            deadline_rounds -= 1
            got = c.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=2,
                                    AttributeNames=["ApproximateReceiveCount"])
            for m in got.get("Messages", []):
                assert m["Body"] not in deleted, f"{m['Body']} was deleted before the kill"
                seen[m["Body"]] = int(m["Attributes"]["ApproximateReceiveCount"])
                c.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
        missing = expected - set(seen)
        assert not missing, f"lost after the restart: {sorted(missing)[:10]}"
        # Those in flight at the kill came back with their receive counted.
        assert all(seen[b] >= 2 for b in in_flight if b in seen)
        assert c.receive_message(QueueUrl=url, WaitTimeSeconds=1).get("Messages", []) == []
    finally:
        s.close()


def test_in_flight_messages_keep_their_visibility_across_a_restart():
    s = Sluice(sqs=True).start()
    try:
        c = client(s)
        url = c.create_queue(QueueName="vis")["QueueUrl"]
        c.send_message(QueueUrl=url, MessageBody="long")
        c.send_message(QueueUrl=url, MessageBody="short")
        c.send_message(QueueUrl=url, MessageBody="deleted")
        long = c.receive_message(QueueUrl=url, WaitTimeSeconds=5, VisibilityTimeout=120)["Messages"][0]
        short = c.receive_message(QueueUrl=url, WaitTimeSeconds=5, VisibilityTimeout=2)["Messages"][0]
        gone = c.receive_message(QueueUrl=url, WaitTimeSeconds=5, VisibilityTimeout=1)["Messages"][0]
        assert [long["Body"], short["Body"], gone["Body"]] == ["long", "short", "deleted"]
        c.delete_message(QueueUrl=url, ReceiptHandle=gone["ReceiptHandle"])

        s = restarted(s)
        c = client(s)
        # "short" reappears once its timeout ends; "long" stays in flight; "deleted" never comes.
        back = receive_all(c, url, 1, AttributeNames=["ApproximateReceiveCount"])
        assert [m["Body"] for m in back] == ["short"]
        assert back[0]["Attributes"]["ApproximateReceiveCount"] == "2"
        assert c.receive_message(QueueUrl=url, WaitTimeSeconds=2).get("Messages", []) == []
        # The handle from before the kill still works: make "long" visible now.
        c.change_message_visibility(QueueUrl=url, ReceiptHandle=long["ReceiptHandle"], VisibilityTimeout=0)
        again = receive_all(c, url, 1, AttributeNames=["ApproximateReceiveCount"])
        assert [m["Body"] for m in again] == ["long"]
        assert again[0]["Attributes"]["ApproximateReceiveCount"] == "2"
        attrs = c.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
        assert attrs["ApproximateNumberOfMessagesNotVisible"] == "2"
    finally:
        s.close()


def test_fifo_deduplication_and_attributes_survive_a_kill():
    s = Sluice(sqs=True).start()
    try:
        c = client(s)
        url = c.create_queue(QueueName="keep.fifo", Attributes={
            "FifoQueue": "true", "VisibilityTimeout": "77"}, tags={"k": "v"})["QueueUrl"]
        first = c.send_message(QueueUrl=url, MessageBody="x", MessageGroupId="g", MessageDeduplicationId="d1")
        s = restarted(s)
        c = client(s)
        dup = c.send_message(QueueUrl=url, MessageBody="x", MessageGroupId="g", MessageDeduplicationId="d1")
        assert dup["MessageId"] == first["MessageId"]
        attrs = c.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
        assert attrs["VisibilityTimeout"] == "77" and attrs["FifoQueue"] == "true"
        assert c.list_queue_tags(QueueUrl=url)["Tags"] == {"k": "v"}
        assert [m["Body"] for m in receive_all(c, url, 1)] == ["x"]
    finally:
        s.close()
