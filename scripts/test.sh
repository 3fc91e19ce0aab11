#!/usr/bin/env bash
# The whole test suite, from a fresh clone: installs what the tests need, then runs formatting,
# lints and every test. Used by CI (.ci/run) and by developers alike.
set -euo pipefail
cd "$(dirname "$0")/.."

# A one-off build gains nothing from incremental compilation, and its caches would be ~40% of
# target/ (1.7 GiB of 4.5 GiB on a clean clone): CI machines have run out of disk on them.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
echo "==> disk free where the build goes: $(df -h --output=avail "${CARGO_TARGET_DIR:-.}" | tail -1 | tr -d ' ')"

VENV="${SIGHTLINE_VENV:-$PWD/.venv}"
PY_REQS=(tests/python/requirements.txt)
for extra in detect/tests/python/requirements.txt cli/tests/python/requirements.txt; do
  [[ -f "$extra" ]] && PY_REQS+=("$extra")
done

echo "==> Python environment for real-client, interop and parity tests ($VENV)"
if [[ ! -x "$VENV/bin/python" ]]; then
  python3 -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check $(printf -- '-r %s ' "${PY_REQS[@]}")
export SIGHTLINE_PYTHON="$VENV/bin/python"
# OpenLIT pins openai < 3 (the main venv has openai 3): its client test gets a venv of its own.
OPENLIT_VENV="${SIGHTLINE_OPENLIT_VENV:-$PWD/.venv-openlit}"
if [[ ! -x "$OPENLIT_VENV/bin/python" ]]; then
  python3 -m venv "$OPENLIT_VENV"
fi
"$OPENLIT_VENV/bin/python" -m pip install --quiet --disable-pip-version-check -r cli/tests/python/requirements-openlit.txt
export SIGHTLINE_OPENLIT_PYTHON="$OPENLIT_VENV/bin/python"
export SIGHTLINE_REQUIRE_PYTHON=1

echo "==> Debian packages: Prometheus 2.42 and promtool (reference engine for the PromQL golden suite, remote-write peer), curl and jq (the README's examples), chromium and its driver (the web UI's browser tests), make (builds jemalloc, the server's allocator)"
APT_PKGS=()
if ! command -v prometheus >/dev/null || ! command -v promtool >/dev/null; then APT_PKGS+=(prometheus); fi
command -v curl >/dev/null || APT_PKGS+=(curl)
command -v jq >/dev/null || APT_PKGS+=(jq)
command -v make >/dev/null || APT_PKGS+=(make)
command -v chromium >/dev/null || APT_PKGS+=(chromium)
command -v chromedriver >/dev/null || APT_PKGS+=(chromium-driver)
if (( ${#APT_PKGS[@]} )); then
  SUDO=""
  [[ "$(id -u)" != 0 ]] && SUDO="sudo"
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${APT_PKGS[@]}" >/dev/null
fi
# The tests start their own Prometheus instances on free loopback ports.
export SIGHTLINE_REQUIRE_PROMETHEUS=1
export SIGHTLINE_REQUIRE_SHELL_TOOLS=1
export SIGHTLINE_REQUIRE_BROWSER=1

echo "==> cargo fmt --check"
cargo fmt --all -- --check

echo "==> module layout: no import cycles between a crate's top-level modules"
python3 scripts/module-cycles.py

echo "==> cargo clippy (all targets, warnings are errors)"
cargo clippy --workspace --all-targets --locked -- -D warnings

echo "==> cargo test"
cargo test --workspace --locked

echo "==> Grafana plugin: npm ci, build, tests (contract test against the debug sightline built above)"
if ! command -v npm >/dev/null; then
  echo "error: the Grafana plugin tests need Node.js 20+ with npm (https://nodejs.org)" >&2
  exit 1
fi
SIGHTLINE_DEBUG_BIN="$(cd "${CARGO_TARGET_DIR:-target}" && pwd)/debug/sightline"
(
  cd grafana-plugin
  npm ci --no-audit --no-fund
  npm run build
  SIGHTLINE_BIN="$SIGHTLINE_DEBUG_BIN" SIGHTLINE_REQUIRE_BINARY=1 SIGHTLINE_REQUIRE_PLUGIN_ENDPOINTS=1 npm test
)

echo "==> fuzz targets: build each and run it 5 s (docs/fuzzing.md)"
scripts/fuzz-smoke.sh 5
