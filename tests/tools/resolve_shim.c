/* An LD_PRELOAD shim for the SNI routing tests of the Kafka proxy: getaddrinfo answers every
 * host name under one DNS suffix with 127.0.0.1, so that a real client (kcat, librdkafka) can
 * connect to names like broker-1.kafka.test without /etc/hosts or a DNS server, and still
 * send those names in its TLS handshakes (SNI).
 *
 * $SLUICE_RESOLVE_SUFFIX is the suffix (".kafka.test" when unset); a name equal to it without
 * the leading dot, or ending with it, compared without regard to case, resolves to 127.0.0.1
 * (with the caller's service and hints); every other name goes to the real getaddrinfo. Each
 * name mapped is appended to "$SLUICE_RESOLVE_LOG" when that is set (one line: the name), so a
 * test can check which names the client looked up.
 *
 * Built by CMake as sluice_resolve_shim (only with SLUICE_TESTS); C, dlsym(RTLD_NEXT).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef int (*getaddrinfo_fn)(const char*, const char*, const struct addrinfo*,
                              struct addrinfo**);

static int mapped(const char* node) {
    const char* suffix = getenv("SLUICE_RESOLVE_SUFFIX");
    if (suffix == NULL || suffix[0] == '\0') {
        suffix = ".kafka.test";
    }
    const size_t n = strlen(node);
    const size_t s = strlen(suffix);
    if (suffix[0] == '.' && strcasecmp(node, suffix + 1) == 0) {
        return 1;
    }
    return n > s && strcasecmp(node + n - s, suffix) == 0;
}

static void log_name(const char* node) {
    const char* path = getenv("SLUICE_RESOLVE_LOG");
    if (path == NULL || path[0] == '\0') {
        return;
    }
    /* O_APPEND and one short line a write: lines of concurrent lookups do not interleave. */
    FILE* f = fopen(path, "a");
    if (f != NULL) {
        fprintf(f, "%s\n", node);
        fclose(f);
    }
}

int getaddrinfo(const char* node, const char* service, const struct addrinfo* hints,
                struct addrinfo** res) {
    static getaddrinfo_fn real = NULL;
    if (real == NULL) {
        real = (getaddrinfo_fn)dlsym(RTLD_NEXT, "getaddrinfo");
        if (real == NULL) {
            return EAI_SYSTEM;
        }
    }
    if (node == NULL || !mapped(node)) {
        return real(node, service, hints, res);
    }
    log_name(node);
    struct addrinfo h;
    memset(&h, 0, sizeof h);
    if (hints != NULL) {
        h = *hints;
    }
    /* 127.0.0.1 is an IPv4 address: an IPv6-only question would find nothing. */
    h.ai_family = AF_INET;
    h.ai_flags = (h.ai_flags | AI_NUMERICHOST) & ~AI_CANONNAME;
    return real("127.0.0.1", service, &h, res);
}
