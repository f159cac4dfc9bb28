# The two commands of the README. Both set everything up first (scripts/bootstrap).
BUILD ?= build
JOBS ?= $(shell nproc)
# make install PREFIX=/usr DESTDIR=/tmp/stage (docs/operations.md)
PREFIX ?= /usr/local

.PHONY: all bootstrap build install run demo test test-v2 bench-v2 soak sanitize tsan fuzz bench format \
	format-check clean cross-arm64 test-arm64 test-containers

all: build

# Everything the tests and benchmarks need; build, run and demo need only the runtime part.
bootstrap:
	scripts/bootstrap

# Make's own output only when the build fails; the result when it works.
build:
	@scripts/bootstrap --run
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@echo "building in $(BUILD)/ …"
	@out=$$(cmake --build $(BUILD) -j $(JOBS) -- --no-print-directory 2>&1) || \
		{ printf '%s\n' "$$out"; exit 1; }
	@echo "built $(BUILD)/codecell ($$($(BUILD)/codecell --version)), $(BUILD)/libcodecell.so.0 and $(BUILD)/libcodecell.a"

# The command, the library (shared and static), codecell.h, codecell.pc, the man pages, bash
# completion and the systemd units, under PREFIX, staged under DESTDIR when given.
install: build
	DESTDIR="$(DESTDIR)" cmake --install $(BUILD) --prefix "$(PREFIX)"

# The MCP server on examples/cells.json (Ctrl-C to stop).
run: build
	examples/run

# The examples through `codecell run`, each shown with its command.
demo: build
	examples/demo

test: bootstrap build
	cd $(BUILD) && ctest --output-on-failure -j 2

# The live cgroup v2 lane: the cgroup-dependent tests in a VM booting Debian 12's own kernel on
# a unified cgroup v2 tree, under qemu's emulation (scripts/vm/lane.sh; docs/operations.md);
# then the systemd lane, the same VM booting the host's systemd as PID 1 with the shipped units.
test-v2: bootstrap build
	cmake --build $(BUILD) --target probe >/dev/null
	scripts/vm/lane.sh $(BUILD)
	CODECELL_VM_MODE=systemd scripts/vm/lane.sh $(BUILD)

# codecell in Docker and Podman (rootful, and rootless as a user of the test's own), on an image
# imported from a Debian root made with debootstrap (tests/containers; docs/operations.md).
test-containers: build
	scripts/bootstrap --containers
	CODECELL_BUILD=$(CURDIR)/$(BUILD) python3 tests/containers/test_containers.py

# bench/cold.sh in the same VM: codecell run against bubblewrap placed in a v2 cgroup.
bench-v2: bootstrap build
	CODECELL_VM_BENCH_RUNS=$${RUNS:-10} scripts/vm/lane.sh $(BUILD)

# The load test at full size: 10,000 runs from 8 callers at once, in each language.
soak: build
	$(BUILD)/tests/test_load ruby 10000 8
	$(BUILD)/tests/test_load python 10000 8

# The whole suite again under AddressSanitizer and UndefinedBehaviorSanitizer.
sanitize: bootstrap
	cmake -S . -B $(BUILD)-asan -DCMAKE_BUILD_TYPE=Debug \
		-DCMAKE_C_FLAGS="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" >/dev/null
	cmake --build $(BUILD)-asan -j $(JOBS)
	cd $(BUILD)-asan && ctest --output-on-failure -j 2

# The session, pool and load tests under ThreadSanitizer: data races and lock-order inversions
# between the callers, the reaper and the pool's refill threads end the test with a report.
tsan: bootstrap
	cmake -S . -B $(BUILD)-tsan -DCMAKE_BUILD_TYPE=Debug \
		-DCMAKE_C_FLAGS="-fsanitize=thread -fno-omit-frame-pointer -O1" >/dev/null
	cmake --build $(BUILD)-tsan -j $(JOBS) --target test_sessions test_session_restore test_pool test_pool_threads test_load \
		test_egress_proxy
	cd $(BUILD)-tsan && TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 \
		suppressions=$(CURDIR)/tests/tsan.supp $(TSAN_OPTIONS)" \
		ctest --output-on-failure -j 2 -R '^((sessions|session_restore|pool|load)_|unit_egress_proxy$$)'

# libFuzzer targets for the parsers, FUZZ_SECONDS each (default 60), from tests/fuzz/corpus.
fuzz:
	scripts/bootstrap --fuzz
	tests/fuzz/run.sh

bench: bootstrap build
	cmake --build $(BUILD) --target latency rpc session mcp
	bench/cold.sh
	$(BUILD)/latency --lang ruby
	$(BUILD)/latency --lang python
	$(BUILD)/rpc
	$(BUILD)/session
	CODECELL_BIN=$(BUILD)/codecell bench/codemode
	$(BUILD)/mcp
	CODECELL_BIN=$(BUILD)/codecell bench/proxy
	CODECELL_BIN=$(BUILD)/codecell bench/network.py
	bench/jail.sh

# The whole tree cross-built for arm64 in $(BUILD)-arm64 (Debian's gcc-aarch64-linux-gnu and
# the :arm64 -dev packages, scripts/bootstrap --arm64; make test never needs them).
cross-arm64:
	scripts/bootstrap --arm64
	@cmake -S . -B $(BUILD)-arm64 -DCMAKE_TOOLCHAIN_FILE=$(CURDIR)/cmake/aarch64-linux-gnu.cmake \
		-DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@out=$$(cmake --build $(BUILD)-arm64 -j $(JOBS) -- --no-print-directory 2>&1) || \
		{ printf '%s\n' "$$out"; exit 1; }
	@echo "built $(BUILD)-arm64/codecell for arm64"

# The unit tests of the arm64 build, each run by qemu-aarch64 (user-mode emulation: CTest puts
# it before each test). Left out, because qemu-user emulates no part of them: namespaces (it
# refuses clone and unshare with their flags) and seccomp (it answers none of the kernel's
# seccomp questions, so libseccomp finds no kill-process action and a cell cannot be made).
ARM64_LEFT_OUT = unit_sandbox_entry unit_mcp_methods unit_abi
test-arm64: cross-arm64
	@for t in $(ARM64_LEFT_OUT); do echo "test-arm64: skipped $$t (needs namespaces or a seccomp-capable kernel; qemu-user has neither)"; done
	cd $(BUILD)-arm64 && ctest --output-on-failure -j 2 -R '^unit_' \
		-E '^($(subst $() ,|,$(strip $(ARM64_LEFT_OUT))))$$'

# clang-format over every C file (.clang-format); format-check changes nothing and fails on
# a file that is not formatted (.ci/run).
format:
	scripts/format

format-check: bootstrap
	scripts/format --check

clean:
	rm -rf $(BUILD) $(BUILD)-asan $(BUILD)-tsan $(BUILD)-fuzz $(BUILD)-arm64
