/* sluice_mock_cluster: librdkafka's mock Kafka cluster as a process of its own, the stand-in
 * upstream of the integration tests (tests/integration/upstream_support.py).
 *
 *   sluice_mock_cluster [--brokers N] [--topic NAME:PARTITIONS]...
 *
 * Starts rd_kafka_mock_cluster_new with N brokers (default 3; node ids 1..N, partition leaders
 * spread over them) on a librdkafka handle of its own, creates the topics given (the 2.0.2 mock
 * has no CreateTopics: a test names its topics here; replication factor min(3, N)), prints one
 * line `bootstrap=HOST:PORT,...` on stdout and flushes it, then runs until stdin reaches EOF or
 * SIGTERM/SIGINT arrives: a test that dies takes its cluster with it (its end of the pipe
 * closes). Run it with stdin on a pipe; with stdin on /dev/null it stops at once.
 *
 * Commands, one a line on stdin, each answered with one line on stdout:
 *   delete-topic NAME   the mock has no DeleteTopics: a topic given with --topic is made to
 *                       look deleted (Metadata answers UNKNOWN_TOPIC_OR_PART for it and its
 *                       partitions lose their leaders, so a Fetch gets NOT_LEADER_OR_FOLLOWER
 *                       and a client looks the topic up again); answers `deleted NAME`, or
 *                       `error: ...`.
 *
 * The same binary runs on a newer librdkafka without a rebuild (librdkafka.so.1 keeps its ABI):
 * LD_LIBRARY_PATH=<node-rdkafka's build/deps> gives the 2.12 mock (see TOOLCHAIN.md); the
 * version in use is printed on stderr.
 *
 * Exit codes: 0 after a normal stop, 2 for bad arguments, 1 when the cluster cannot start. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

static volatile sig_atomic_t stop_requested = 0;

static void on_signal(int sig) {
    (void)sig;
    stop_requested = 1;
}

static void usage(FILE* out) {
    fputs("usage: sluice_mock_cluster [--brokers N] [--topic NAME:PARTITIONS]...\n"
          "  prints bootstrap=HOST:PORT,... and runs until stdin reaches EOF or SIGTERM/SIGINT;\n"
          "  stdin commands: delete-topic NAME\n",
          out);
}

/* A whole positive decimal number no larger than `max`; -1 otherwise. */
static long parse_count(const char* text, long max) {
    char* end = NULL;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || v < 1 || v > max) {
        return -1;
    }
    return v;
}

/* One stdin command line (no newline); answers on stdout. */
static void run_command(rd_kafka_mock_cluster_t* mcluster, char* line, const char** topics,
                        const long* partitions, int topic_count) {
    const char* verb = "delete-topic ";
    if (strncmp(line, verb, strlen(verb)) != 0) {
        printf("error: unknown command '%s' (delete-topic NAME)\n", line);
        fflush(stdout);
        return;
    }
    const char* name = line + strlen(verb);
    for (int t = 0; t < topic_count; ++t) {
        if (topics[t] != NULL && strcmp(topics[t], name) == 0) {
            rd_kafka_mock_topic_set_error(mcluster, name, RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART);
            for (long p = 0; p < partitions[t]; ++p) {
                rd_kafka_mock_partition_set_leader(mcluster, name, (int32_t)p, -1);
            }
            printf("deleted %s\n", name);
            fflush(stdout);
            return;
        }
    }
    printf("error: no topic '%s' was given with --topic\n", name);
    fflush(stdout);
}

int main(int argc, char** argv) {
    long brokers = 3;
    /* Topics as given, checked before anything starts. */
    const char** topics = calloc((size_t)argc, sizeof(*topics));
    long* partitions = calloc((size_t)argc, sizeof(*partitions));
    int topic_count = 0;
    if (topics == NULL || partitions == NULL) {
        fputs("sluice_mock_cluster: out of memory\n", stderr);
        return 1;
    }
    for (int i = 1; i < argc; ++i) {
        const char* arg = argv[i];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            usage(stdout);
            return 0;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "sluice_mock_cluster: %s: missing value\n", arg);
            usage(stderr);
            return 2;
        }
        const char* value = argv[++i];
        if (strcmp(arg, "--brokers") == 0) {
            brokers = parse_count(value, 64);
            if (brokers < 0) {
                fprintf(stderr, "sluice_mock_cluster: --brokers: expected 1 to 64, got '%s'\n",
                        value);
                return 2;
            }
        } else if (strcmp(arg, "--topic") == 0) {
            char* colon = strrchr(value, ':');
            long n = colon == NULL ? -1 : parse_count(colon + 1, 100000);
            if (colon == NULL || colon == value || n < 0) {
                fprintf(stderr,
                        "sluice_mock_cluster: --topic: expected NAME:PARTITIONS (at least 1), "
                        "got '%s'\n",
                        value);
                return 2;
            }
            *colon = '\0';
            topics[topic_count] = value;
            partitions[topic_count] = n;
            ++topic_count;
        } else {
            fprintf(stderr, "sluice_mock_cluster: unknown option '%s'\n", arg);
            usage(stderr);
            return 2;
        }
    }

    char errstr[512];
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    /* The handle only hosts the cluster: it never connects anywhere. */
    if (rd_kafka_conf_set(conf, "log_level", "3", errstr, sizeof(errstr)) != RD_KAFKA_CONF_OK) {
        fprintf(stderr, "sluice_mock_cluster: %s\n", errstr);
        return 1;
    }
    rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
    if (rk == NULL) {
        fprintf(stderr, "sluice_mock_cluster: cannot create a handle: %s\n", errstr);
        return 1;
    }
    rd_kafka_mock_cluster_t* mcluster = rd_kafka_mock_cluster_new(rk, (int)brokers);
    if (mcluster == NULL) {
        fputs("sluice_mock_cluster: rd_kafka_mock_cluster_new failed\n", stderr);
        rd_kafka_destroy(rk);
        return 1;
    }
    const int replication = brokers < 3 ? (int)brokers : 3;
    for (int t = 0; t < topic_count; ++t) {
        rd_kafka_resp_err_t err =
            rd_kafka_mock_topic_create(mcluster, topics[t], (int)partitions[t], replication);
        if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
            fprintf(stderr, "sluice_mock_cluster: topic %s: %s\n", topics[t],
                    rd_kafka_err2str(err));
            rd_kafka_mock_cluster_destroy(mcluster);
            rd_kafka_destroy(rk);
            return 1;
        }
    }

    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    fprintf(stderr, "sluice_mock_cluster: librdkafka %s, %ld brokers, %d topics\n",
            rd_kafka_version_str(), brokers, topic_count);
    printf("bootstrap=%s\n", rd_kafka_mock_cluster_bootstraps(mcluster));
    fflush(stdout);

    /* Until stdin closes (or fails) or a signal asks to stop; the signal interrupts poll.
     * Complete lines are commands. */
    char line[1024];
    size_t used = 0;
    while (!stop_requested) {
        struct pollfd pfd = {.fd = STDIN_FILENO, .events = POLLIN};
        int ready = poll(&pfd, 1, 1000);
        if (ready < 0) {
            if (errno == EINTR) {
                continue;
            }
            break;
        }
        if (ready == 0) {
            continue;
        }
        char buf[256];
        ssize_t n = read(STDIN_FILENO, buf, sizeof(buf));
        if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) {
            break;
        }
        for (ssize_t i = 0; i < n; ++i) {
            if (buf[i] == '\n') {
                line[used] = '\0';
                if (used > 0) {
                    run_command(mcluster, line, topics, partitions, topic_count);
                }
                used = 0;
            } else if (used + 1 < sizeof(line)) {
                line[used++] = buf[i];
            }
        }
    }

    rd_kafka_mock_cluster_destroy(mcluster);
    rd_kafka_destroy(rk);
    free(topics);
    free(partitions);
    return 0;
}
