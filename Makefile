# DLCP developer entry points. `make demo` and `make test` install what they need (idempotently).
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.dlcp-installed
APT_PACKAGES := mininet python3-venv iproute2 iputils-ping tcpdump ethtool psmisc g++ python3-dev libjemalloc2
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
# The reference p4c/BMv2 build sits beside the project on developers' machines and in CI (never copied
# into it). Where it exists, `make test` installs its libraries and puts it on PATH so the BMv2-marked
# tests run; elsewhere p4c/BMv2 come from the user's PATH, and those tests skip with the reason.
# Its lib/ holds the versioned sonames (libbmall.so.0 …) as small text files naming their targets
# instead of symlinks (they were lost in the copy), so the loader fails with "file too short";
# `make p4ref` links them, pointing into ../shared (nothing is copied), under $(VENV)/p4ref-lib.
P4REF := $(wildcard $(CURDIR)/../shared/p4ref/env.sh)
P4REF_LINKS := $(CURDIR)/$(VENV)/p4ref-lib
WITH_P4REF := $(if $(P4REF),. $(P4REF) && export LD_LIBRARY_PATH=$(P4REF_LINKS):$$LD_LIBRARY_PATH &&,)

.PHONY: setup p4ref test test-fast lint demo bmv2 tofino bench fuzz clean

setup: $(STAMP)

$(STAMP): pyproject.toml Makefile
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then echo "apt: installing$$missing"; \
	  $(SUDO) apt-get update -qq -o DPkg::Lock::Timeout=600 && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq -o DPkg::Lock::Timeout=600 $$missing; fi
	@[ -x $(PY) ] || /usr/bin/python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	@# Debian's mininet lives in the system Python: expose that one package (not all of dist-packages).
	@mkdir -p $(VENV)/system-mininet && ln -sfn /usr/lib/python3/dist-packages/mininet $(VENV)/system-mininet/mininet
	@echo "$(CURDIR)/$(VENV)/system-mininet" > $$($(PY) -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/dlcp-system-mininet.pth
	$(PY) -c "import mininet.net, p4.v1.p4runtime_pb2, p4runtime_sh, lark, scapy, numpy, torch"
	@touch $(STAMP)

p4ref:
	@if [ -n "$(P4REF)" ]; then bash $(dir $(P4REF))install-deps.sh; \
	  lib=$(dir $(P4REF))lib; mkdir -p $(P4REF_LINKS); \
	  for f in $$lib/*.so.*; do \
	    if [ ! -L "$$f" ] && [ "$$(head -c 4 "$$f" | od -An -c | tr -d ' ')" != '177ELF' ]; then \
	      target=$$(head -c 255 "$$f"); [ -f "$$lib/$$target" ] && ln -sfn "$$lib/$$target" $(P4REF_LINKS)/$$(basename "$$f"); \
	    fi; done; \
	  $(WITH_P4REF) simple_switch --version >/dev/null && echo "p4ref: simple_switch runs"; \
	else echo "p4ref: ../shared/p4ref not found; BMv2 tests use p4c/simple_switch_grpc from PATH or skip"; fi

# The suite runs on every core (at most 4) with pytest-xdist; tests that need something machine-wide
# (network namespaces, the Mininet lock, fixed ports) share one xdist group and run one at a time
# (tests/conftest.py). TEST_WORKERS=0 runs it in one process. The 25 slowest tests end every log.
TEST_WORKERS ?= $(shell n=$$(nproc 2>/dev/null || echo 2); [ $$n -gt 4 ] && n=4; echo $$n)
PYTEST_PARALLEL := -n $(TEST_WORKERS) --dist loadgroup --durations=25

test: setup p4ref
	$(PY) -m ruff check .
	$(WITH_P4REF) $(PY) -m pytest -q $(PYTEST_PARALLEL) tests

test-fast: setup p4ref
	$(WITH_P4REF) $(PY) -m pytest -q $(PYTEST_PARALLEL) -m "not slow" tests

lint: setup
	$(PY) -m ruff check .

demo: setup
	$(PY) -m mininet_topos.demo

bmv2: p4ref
	@$(WITH_P4REF) command -v p4c >/dev/null || { echo "make bmv2: p4c is not on PATH (no registry here ships it)"; exit 2; }
	mkdir -p build/bmv2 && $(WITH_P4REF) p4c --target bmv2 --arch v1model --p4runtime-files build/bmv2/dlcp.p4info.txtpb \
	  -I p4src/include -o build/bmv2 p4src/bmv2/dlcp.p4

tofino:
	@[ -n "$$SDE" ] || { echo "make tofino: \$$SDE is not set (the Tofino SDE is not installable here)"; exit 2; }
	mkdir -p build/tofino && $$SDE/install/bin/bf-p4c --target tofino --arch tna --p4runtime-files build/tofino/dlcp.p4info.txtpb \
	  -I p4src/include -o build/tofino p4src/tofino/dlcp.p4

# Every benchmark runs in full; a failing one is reported and the rest still run.
bench: setup p4ref
	@failed=""; for b in benchmarks/bench_*.py; do echo "== $$b"; \
	  $(WITH_P4REF) $(PY) $$b || failed="$$failed $$b"; done; \
	if [ -n "$$failed" ]; then echo "bench: FAILED:$$failed"; exit 1; else echo "bench: all passed"; fi

# Long fuzzing runs (hours); `make test` runs the same fuzzers in a bounded quick form.
FUZZ_SECONDS ?= 3600
fuzz: setup
	DLCP_FUZZ_SECONDS=$(FUZZ_SECONDS) $(PY) -m pytest -q -m fuzz tests

clean:
	rm -rf build results .pytest_cache
