# sluice: two commands do everything on a fresh Debian 12 machine.
#   make run    install what serving needs, build the sluice binary (Release), start it with
#               data in ./data
#   make test   install dependencies, build, run every test (unit, integration, sanitizers, fuzz)

BUILD     ?= build/release
ASAN      ?= build/asan
FUZZ      ?= build/fuzz
JOBS      ?= $(shell nproc)
RUN_ARGS  ?=
# The address `make run` listens on: loopback only, since it starts without authentication
# (any web page could otherwise reach it from the network). BIND=0.0.0.0 opens it to every
# interface; flags in RUN_ARGS (--kafka, --http, --sqs) still win.
BIND      ?= 127.0.0.1
FUZZ_SECONDS ?= 10
# Unity batches halve a clean build; UNITY=OFF compiles file by file (quicker edit-rebuild).
UNITY     ?= ON

export CCACHE_DIR ?= $(CURDIR)/build/.ccache

.PHONY: all deps build run test unit integration asan fuzz bench clean

all: build

deps:
	@scripts/install-deps

$(BUILD)/build.ninja:
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release -DSLUICE_UNITY=$(UNITY)

# Everything: sluice, the tests and the benchmarks (a tree configured by `make run` gets its
# tests back here).
build: deps $(BUILD)/build.ninja
	@cmake -S . -B $(BUILD) -DSLUICE_TESTS=ON -DSLUICE_BENCH=ON >/dev/null
	cmake --build $(BUILD) -j $(JOBS)

# Only what serving needs: the build and runtime packages, and the sluice target (a fresh tree
# is configured without tests and benchmarks, whose packages are not installed yet).
run:
	@scripts/install-deps --run
	@[ -f $(BUILD)/build.ninja ] || cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release \
		-DSLUICE_UNITY=$(UNITY) -DSLUICE_TESTS=OFF -DSLUICE_BENCH=OFF
	cmake --build $(BUILD) -j $(JOBS) --target sluice
	mkdir -p data
	SLUICE_LISTENERS="$${SLUICE_LISTENERS:-$(BIND):9092}" \
	SLUICE_HTTP_LISTENER="$${SLUICE_HTTP_LISTENER:-$(BIND):8082}" \
	SLUICE_SQS_LISTENER="$${SLUICE_SQS_LISTENER:-$(BIND):9324}" \
		$(BUILD)/sluice --data-dir ./data $(RUN_ARGS)

# The Release tree builds what the integration tests run and the benchmark tools; the unit tests
# are built and run once, in the sanitizer tree (scripts/run-tests): compiling them twice was the
# largest part of a clean run.
test: deps $(BUILD)/build.ninja
	@cmake -S . -B $(BUILD) -DSLUICE_TESTS=ON -DSLUICE_BENCH=ON >/dev/null
	cmake --build $(BUILD) -j $(JOBS) --target integration_deps
	scripts/run-tests --build $(BUILD) --asan $(ASAN) --fuzz $(FUZZ) --fuzz-seconds $(FUZZ_SECONDS)

unit: build
	cd $(BUILD) && ctest -L unit --output-on-failure -j $(JOBS)

integration: build
	cd $(BUILD) && ctest -L integration --output-on-failure

asan: deps
	cmake -S . -B $(ASAN) -G Ninja -DCMAKE_BUILD_TYPE=Debug -DSLUICE_SANITIZE=ON -DSLUICE_BENCH=OFF \
		-DSLUICE_UNITY=ON -DCMAKE_CXX_FLAGS_DEBUG=-g1
	cmake --build $(ASAN) -j $(JOBS)
	cd $(ASAN) && ctest -L unit --output-on-failure -j $(JOBS)

fuzz: deps
	scripts/run-fuzz --build $(FUZZ) --seconds $(FUZZ_SECONDS)

bench: build
	scripts/run-bench --build $(BUILD)

clean:
	rm -rf build
