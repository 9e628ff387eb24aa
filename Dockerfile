# sluice's container image: built from this source tree in a Debian bookworm build stage, run
# from a slim bookworm with only the shared libraries sluice links, as an unprivileged user.
#
#   docker build -t sluice:0.1.0 .
#   docker run -p 9092:9092 -p 8082:8082 -p 9324:9324 -v sluice-data:/data sluice:0.1.0
#
# Kafka clients outside the container need the address they reach it by:
#   docker run ... sluice:0.1.0 --data-dir=/data --advertise-kafka=HOST:9092

# A dated bookworm tag: the same base on every build until this line changes.
ARG DEBIAN_IMAGE=debian:bookworm-20241111-slim

FROM ${DEBIAN_IMAGE} AS build
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        build-essential cmake ninja-build pkg-config python3 \
        librdkafka-dev libboost-dev libssl-dev libspdlog-dev libfmt-dev zlib1g-dev \
        libsnappy-dev liblz4-dev libzstd-dev libre2-dev rapidjson-dev libmimalloc-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cmake -S . -B /build -G Ninja -DCMAKE_BUILD_TYPE=Release -DSLUICE_UNITY=ON \
        -DSLUICE_TESTS=OFF -DSLUICE_BENCH=OFF \
    && cmake --build /build --target sluice \
    && strip /build/sluice

FROM ${DEBIAN_IMAGE}
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        libfmt9 libspdlog1.10 libssl3 libre2-9 zlib1g libsnappy1v5 liblz4-1 libzstd1 libmimalloc2.0 \
        librdkafka1 libsasl2-2 \
        ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --system --gid 10001 sluice \
    && useradd --system --uid 10001 --gid 10001 --home-dir /data --no-create-home \
        --shell /usr/sbin/nologin sluice \
    && mkdir -p /data \
    && chown 10001:10001 /data
COPY --from=build /build/sluice /usr/local/bin/sluice
USER 10001:10001
VOLUME ["/data"]
# Kafka protocol, HTTP (REST Proxy, WebSocket, SSE, /metrics, console), SQS: on every
# interface of the container, said here rather than left to sluice's defaults (a flag given to
# `docker run` still wins over these).
ENV SLUICE_LISTENERS=0.0.0.0:9092 SLUICE_HTTP_LISTENER=0.0.0.0:8082 SLUICE_SQS_LISTENER=0.0.0.0:9324
EXPOSE 9092 8082 9324
# /healthz over bash's /dev/tcp: no HTTP client in the image.
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
    CMD ["/bin/bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/8082 && printf 'GET /healthz HTTP/1.0\\r\\n\\r\\n' >&3 && head -n 1 <&3 | grep -q ' 200 '"]
ENTRYPOINT ["/usr/local/bin/sluice"]
CMD ["--data-dir=/data"]
