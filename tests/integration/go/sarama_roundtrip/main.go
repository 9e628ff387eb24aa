// sarama (1.22, Debian's golang-github-shopify-sarama-dev) against sluice: a synchronous
// producer and a partition consumer at a given Config.Version. sarama never sends ApiVersions;
// its versions follow Config.Version, so 0.8.2 means Produce v0 / Fetch v0 (message format v0)
// and 2.2.0 means Metadata v5, Produce v3 / Fetch v4 (v2 batches).
//
// Usage: sarama_roundtrip BOOTSTRAP TOPIC VERSION COUNT. Prints "ok" or exits non-zero.
package main

import (
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/Shopify/sarama"
)

func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(1)
}

func main() {
	if len(os.Args) != 5 {
		fail("usage: sarama_roundtrip BOOTSTRAP TOPIC VERSION COUNT")
	}
	bootstrap, topic := os.Args[1], os.Args[2]
	version, err := sarama.ParseKafkaVersion(os.Args[3])
	if err != nil {
		fail("bad version: %v", err)
	}
	count, _ := strconv.Atoi(os.Args[4])

	cfg := sarama.NewConfig()
	cfg.Version = version
	cfg.ClientID = "sarama-test"
	cfg.Producer.Return.Successes = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Metadata.Retry.Max = 10
	cfg.Metadata.Retry.Backoff = 200 * time.Millisecond

	producer, err := sarama.NewSyncProducer([]string{bootstrap}, cfg)
	if err != nil {
		fail("producer: %v", err)
	}
	for i := 0; i < count; i++ {
		msg := &sarama.ProducerMessage{Topic: topic, Partition: 0,
			Key: sarama.StringEncoder(fmt.Sprintf("k%d", i)), Value: sarama.StringEncoder(fmt.Sprintf("v%d", i))}
		_, offset, err := producer.SendMessage(msg)
		if err != nil {
			fail("send %d: %v", i, err)
		}
		if offset != int64(i) {
			fail("send %d: offset %d", i, offset)
		}
	}
	producer.Close()

	consumer, err := sarama.NewConsumer([]string{bootstrap}, cfg)
	if err != nil {
		fail("consumer: %v", err)
	}
	pc, err := consumer.ConsumePartition(topic, 0, sarama.OffsetOldest)
	if err != nil {
		fail("consume: %v", err)
	}
	timeout := time.After(30 * time.Second)
	for i := 0; i < count; i++ {
		select {
		case m := <-pc.Messages():
			if m.Offset != int64(i) || string(m.Key) != fmt.Sprintf("k%d", i) || string(m.Value) != fmt.Sprintf("v%d", i) {
				fail("record %d: offset %d key %s value %s", i, m.Offset, m.Key, m.Value)
			}
		case err := <-pc.Errors():
			fail("consume error: %v", err)
		case <-timeout:
			fail("timed out after %d records", i)
		}
	}
	pc.Close()
	consumer.Close()
	fmt.Println("ok")
}
