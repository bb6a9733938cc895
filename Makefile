# The two commands of the README. Both do all set-up themselves on a fresh machine:
# uv (pinned) in .tools/, then the locked environment in .venv/ with assay installed editable.
UV_VERSION := 0.13.8
UV := .tools/bin/uv
export UV_PYTHON_DOWNLOADS := never

.PHONY: setup test demo bench lint clean

setup: .venv/.synced

$(UV):
	python3 -m venv .tools
	.tools/bin/pip install --quiet uv==$(UV_VERSION)

.venv/.synced: pyproject.toml uv.lock $(UV)
	$(UV) sync --frozen
	touch $@

lint: setup
	.venv/bin/ruff check src tests bench
	.venv/bin/ruff format --check src tests bench
	.venv/bin/mypy

test: lint postgres browser
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
	.venv/bin/python examples/expressions.py
	.venv/bin/assay verify 'inbox.sent_count >= 15 && drone.mode == "GUIDED"' --state examples/state.json
	.venv/bin/assay example already-true --ledger sqlite:///assay.db
	.venv/bin/assay ledger verify --ledger sqlite:///assay.db

bench: setup
	.venv/bin/python bench/expressions.py
	.venv/bin/python bench/adversarial.py
	.venv/bin/python bench/verify.py
	.venv/bin/python bench/ledger.py

clean:
	rm -rf .venv .tools
