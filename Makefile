# Thin wrapper over CMake: `make demo` and `make test` work on a fresh Debian 12.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all deps configure build demo test bench clean worker-aarch64

all: build

deps:
	@bash scripts/install-deps.sh

configure: deps
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS) >/dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

demo: build
	@bash scripts/demo.sh $(BUILD)

test: build
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS) $(CTEST_FLAGS)

bench: build
	@bash scripts/bench.sh $(BUILD)

clean:
	@rm -rf $(BUILD)

# The aarch64 worker and package runner (runtime + rpc, no LLVM) for boards
# and for the qemu tests.
AARCH64_BUILD ?= build-aarch64
worker-aarch64: deps
	@cmake -S . -B $(AARCH64_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release \
	  -DCMAKE_TOOLCHAIN_FILE=$(CURDIR)/scripts/aarch64-toolchain.cmake \
	  -DTESSERA_RUNTIME_ONLY=ON -DTESSERA_BUILD_WORKER=ON >/dev/null
	@cmake --build $(AARCH64_BUILD) -j $(JOBS) --target tessera-worker tessera-run
