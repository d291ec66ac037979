# gemmtune: the two commands a newcomer needs.
#   make run    build, then tune the bundled example (on the GPU when there is one, else on the
#               CPU providers) and show what was written
#   make test   install what the tests need (cmocka), build, run every test
BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=

.PHONY: all build run test deps install clean

all: build

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)

build: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j$(JOBS)

run: build
	bash examples/run.sh $(BUILD)

deps:
	bash scripts/install-deps.sh

test: deps
	@# cmocka may have been installed after a first configure: configure again so it is found.
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j$(JOBS)
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS)

install: build
	cmake --install $(BUILD)

clean:
	rm -rf $(BUILD)
