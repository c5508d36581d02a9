# Thin front end over Meson/ninja. `make` and `make install` never change the
# system: a missing tool or library is named with its Debian package
# (scripts/deps.sh --check). The set-up commands `make demo` and `make check`
# (and `make bench`) install the Debian packages they need themselves.
BUILD  ?= build
# `make install` builds in a directory of its own, only what it installs.
INSTALL_BUILD ?= build-install
PREFIX ?= /usr/local

.PHONY: all deps check demo bench soak install clean fuzz

all:
	@bash scripts/deps.sh --check build
	test -f $(BUILD)/build.ninja || meson setup $(BUILD)
	ninja -C $(BUILD)

# Installs the Debian packages `make` needs.
deps:
	@bash scripts/deps.sh build

check:
	@bash scripts/check.sh

demo: deps
	@$(MAKE) --no-print-directory all
	@bash scripts/demo.sh $(BUILD)

bench: deps
	@bash scripts/bench.sh

# The soak of bench/soak at full length (SOAK_SECONDS, default 180); `make bench` runs 20 s of it.
soak: deps
	@bash scripts/bench.sh soak

# The command, headers, libraries, pkg-config files and CMake package under
# PREFIX (libraries in PREFIX/lib); DESTDIR stages it. README "Installing".
# CROSS=TRIPLET builds them for another machine with cross/TRIPLET.ini, in
# $(INSTALL_BUILD)-TRIPLET (README "Cross builds").
CROSS ?=
install:
ifeq ($(CROSS),)
	@bash scripts/deps.sh --check install
	@bash scripts/install.sh $(INSTALL_BUILD) $(abspath $(PREFIX))
else
	@bash scripts/deps.sh --check cross $(CROSS)
	@CROSS=$(CROSS) bash scripts/install.sh $(INSTALL_BUILD)-$(CROSS) $(abspath $(PREFIX))
endif

fuzz:
	@bash scripts/fuzz.sh $${FUZZ_SECONDS:-60}

clean:
	rm -rf $(BUILD) $(INSTALL_BUILD) $(INSTALL_BUILD)-*-linux-gnu build-plain build-asan build-tsan build-fuzz build-bench build-cross-*
