# sluice: two commands do everything on a fresh Debian 12 machine.
#   make run    install dependencies, build Release, start sluice with data in ./data
#   make test   install dependencies, build, run every test (unit, integration, sanitizers, fuzz)

BUILD     ?= build/release
ASAN      ?= build/asan
FUZZ      ?= build/fuzz
JOBS      ?= $(shell nproc)
RUN_ARGS  ?=
FUZZ_SECONDS ?= 20
# Unity batches halve a clean build; UNITY=OFF compiles file by file (quicker edit-rebuild).
UNITY     ?= ON

export CCACHE_DIR ?= $(CURDIR)/build/.ccache

.PHONY: all deps build run test unit integration asan fuzz bench clean

all: build

deps:
	@scripts/install-deps

$(BUILD)/build.ninja:
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release -DSLUICE_UNITY=$(UNITY)

build: deps $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

run: build
	mkdir -p data
	$(BUILD)/sluice --data-dir ./data $(RUN_ARGS)

test: build
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
