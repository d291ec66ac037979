# gemmtune: the two commands a newcomer needs.
#   make run    build, then tune the bundled example (on the GPU when there is one, else on the
#               CPU providers) and show what was written, then what to try next
#   make test   install what the tests need (cmocka), build everything (every CUDA file too,
#               when the toolkit is there), run every test
# Without a GPU, `make run` builds a CPU-only tree in $(BUILD)-cpu (-DGT_CUDA=OFF: seconds, not
# the minutes the CUDA kernels take), since nothing it runs could use them.
BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=
# GPU=1 / GPU=0 overrides the detection (nvidia-smi naming a GPU).
GPU ?= $(shell nvidia-smi -L 2>/dev/null | grep -q '^GPU ' && echo 1 || echo 0)
ifeq ($(GPU),1)
RUN_BUILD := $(BUILD)
RUN_FLAGS := $(CMAKE_FLAGS)
else
RUN_BUILD := $(BUILD)-cpu
RUN_FLAGS := -DGT_CUDA=OFF $(CMAKE_FLAGS)
endif

.PHONY: all build run test deps install clean

all: build

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)

build: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j$(JOBS)

run:
	@bash examples/run.sh "$(RUN_BUILD)" "$(JOBS)" $(RUN_FLAGS)

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
	rm -rf $(BUILD) $(BUILD)-cpu
