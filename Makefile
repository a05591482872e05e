# Thin wrapper over CMake: `make demo` and `make test` work on a fresh Debian 12.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all deps configure build install demo test test-sanitize fuzz bench clean worker-aarch64

all: build

deps:
	@bash scripts/install-deps.sh

configure: deps
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS) >/dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

# `make install PREFIX=DIR`: bin/ (tessera, tessera-run, tessera-worker),
# lib/ (their shared libraries, libtessera_runtime.so), include/
# (tessera_runtime.h), lib/pkgconfig/tessera-runtime.pc and the Python module
# (lib/python3/dist-packages/tessera, docs/python.md). Paths inside are
# relative ($ORIGIN), so the folder may be moved or copied to a board.
PREFIX ?= /usr/local
install: build
	@cmake --install $(BUILD) --prefix $(PREFIX)

demo: build
	@bash scripts/demo.sh $(BUILD)

test: build
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS) $(CTEST_FLAGS)

# The unit tests again in a Debug build with AddressSanitizer and
# UndefinedBehaviorSanitizer (TESSERA_SANITIZE): memory errors, undefined
# behaviour and broken IR invariants fail the run. The heavy suites stay in the
# Release run of `make test` only: the property suites (thousands of random
# schedules), the tuning strategies and XGBoost training over many trials,
# whole-model compiles, the kill -9 and concurrency stress tests, qemu, and a
# timing test. Instrumented they take over 10 s each, 60% of the time in all.
# The tests that run oneDNN's module stay there too: its OpenMP threads
# outlive the test (the module is never unloaded) and LeakSanitizer's tracer
# crashes on them at exit (signal 11), after the test itself passed.
SANITIZE_BUILD ?= build-sanitize
SANITIZE_TARGETS ?= test_runtime test_records test_costmodel test_tools test_tuner test_compiler tessera-worker
SANITIZE_PROPERTY_SUITES = SketchSamples|RandomSchedules|RandomBuilds|KnobTemplates
SANITIZE_TUNING_SUITES = KnobPolicy|SketchPolicy|XGBModel|Tune\.
SANITIZE_END_TO_END = CompileModel|GenericSchedule|OpSpec\.EveryListedOperator|PythonGeneratedModel|Aarch64Package
SANITIZE_STRESS_AND_TIMING = StoreConcurrency|Interpreter\.LoweredMatmul64RunsWellUnderASecond
SANITIZE_VENDOR_RUNTIMES = DnnlModel|DnnlAuto|DnnlRegions|DnnlPayload\.TheRealShape|DnnlPayload\.ATranspose|DnnlBackend\.DownsamplingBlockIsOneRegion|DnnlBackend\.AClipWithOneBound|ModelCommands\.TuneTimesTheBackendsRegions|ProfileTrace\.AnExternalRegion
SANITIZE_EXCLUDE ?= $(SANITIZE_PROPERTY_SUITES)|$(SANITIZE_TUNING_SUITES)|$(SANITIZE_END_TO_END)|$(SANITIZE_STRESS_AND_TIMING)|$(SANITIZE_VENDOR_RUNTIMES)
# use_sigaltstack=0: LLVM (lld's output file registers its signal handlers)
# gives a thread whose alternate signal stack it finds too small one of its
# own, from malloc; ASan, when that thread ends, unmaps whatever stack is set
# as if it were its own, and aborts on the unaligned address (the builder
# pool's threads on the Zen 4 guest, Linux 6.18). Without ASan's stacks the
# two never meet; a stack overflow is still reported, less precisely.
# -g1: line tables and function names, enough for the sanitizers' stack
# traces, without the variables' debug information (a sixth of the build).
test-sanitize: deps
	@cmake -S . -B $(SANITIZE_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Debug \
	  -DCMAKE_CXX_FLAGS_DEBUG=-g1 -DCMAKE_C_FLAGS_DEBUG=-g1 \
	  -DTESSERA_SANITIZE=address,undefined >/dev/null
	@cmake --build $(SANITIZE_BUILD) -j $(JOBS) --target $(SANITIZE_TARGETS)
	@cd $(SANITIZE_BUILD) && ASAN_OPTIONS=detect_leaks=1:use_sigaltstack=0 \
	  UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	  ctest -L unit -E '$(SANITIZE_EXCLUDE)' --output-on-failure -j $(JOBS) $(CTEST_FLAGS)

# The loaders' fuzz test at length (CI runs 200 mutations of each package;
# this 5,000, about a minute): mutated packages, payloads and libraries,
# each loaded and run in a process of its own, none may die by a signal.
FUZZ_ITERATIONS ?= 5000
fuzz: build
	@TESSERA_FUZZ_ITERATIONS=$(FUZZ_ITERATIONS) $(BUILD)/bin/test_compiler --gtest_filter='LoaderFuzz.*'

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
