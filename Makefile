# Thin front end over Meson/ninja. Every target installs the Debian packages
# it needs first (scripts/deps.sh), so a fresh machine needs only `make X`.
BUILD  ?= build
PREFIX ?= /usr/local
MESON_SETUP = meson setup --reconfigure

.PHONY: all deps check demo bench soak install clean fuzz

all: deps $(BUILD)/build.ninja
	ninja -C $(BUILD)

deps:
	@bash scripts/deps.sh build

$(BUILD)/build.ninja:
	meson setup $(BUILD)

check:
	@bash scripts/check.sh

demo: all
	@bash scripts/demo.sh $(BUILD)

bench: deps
	@bash scripts/bench.sh

# The soak of bench/soak at full length (SOAK_SECONDS, default 180); `make bench` runs 20 s of it.
soak: deps
	@bash scripts/bench.sh soak

install: all
	meson configure $(BUILD) -Dprefix=$(abspath $(PREFIX))
	meson install -C $(BUILD)

fuzz:
	@bash scripts/fuzz.sh $${FUZZ_SECONDS:-60}

clean:
	rm -rf $(BUILD) build-plain build-asan build-tsan build-fuzz build-bench
