# The two commands of the README. Both set everything up first (scripts/bootstrap).
BUILD ?= build
JOBS ?= $(shell nproc)

.PHONY: all bootstrap build run test bench clean

all: build

bootstrap:
	scripts/bootstrap

build: bootstrap
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build $(BUILD) -j $(JOBS)

run: build
	examples/run

test: build
	cd $(BUILD) && ctest --output-on-failure -j 2

bench: build
	cmake --build $(BUILD) --target latency rpc session
	bench/cold.sh
	$(BUILD)/latency --lang ruby
	$(BUILD)/latency --lang python
	$(BUILD)/rpc
	$(BUILD)/session

clean:
	rm -rf $(BUILD)
