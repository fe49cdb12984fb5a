#!/usr/bin/env bash
# The installed package as a user gets it: build the wheel, install it (not editable) into a
# fresh venv, and from a directory outside the checkout check the import names, run a short
# demo, `status`, and the dashboard's first frame in tmux. Then the same wheel through
# `uv tool install` and `pipx install`. Used by .ci/run; runs by hand the same way:
#
#     bash scripts/smoke_installed.sh
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
tmux_socket="zombietop-smoke-$$"
cleanup() {
    tmux -L "$tmux_socket" kill-server 2>/dev/null || true
    [[ -x "$work/venv/bin/zombietop" ]] && "$work/venv/bin/zombietop" demo --stop --db "$work/demo.db" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT
say() { printf 'smoke: %s\n' "$*"; }
fail() { printf 'smoke: FAILED: %s\n' "$*" >&2; exit 1; }

say "building the wheel"
python3 -m venv "$work/build"
"$work/build/bin/pip" install -q build
"$work/build/bin/python" -m build -q --wheel --outdir "$work/dist" "$repo" >/dev/null
wheel="$(ls "$work"/dist/zombietop-*.whl)"

say "installing $(basename "$wheel") into a fresh venv"
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install -q "$wheel"
bin="$work/venv/bin"
cd "$work"  # outside the checkout: nothing here can import from the repository's folders

"$bin/zombietop" --version
"$bin/python" - <<'PY'
import importlib.util, sys
from zombietop import Job  # the SDK, as a job author writes it
import zombietop.tui.cli.main, zombietop.tui.app  # every sub-package made it into the wheel
loaded = sorted({n.split(".")[0] for n in sys.modules} & {"textual", "rich"})
import subprocess
check = "import sys, zombietop; print(sorted({n.split('.')[0] for n in sys.modules} & {'textual', 'rich'}))"
out = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, check=True).stdout
assert out.strip() == "[]", f"import zombietop loaded {out.strip()}"
for name in ("core", "tui"):
    assert importlib.util.find_spec(name) is None, f"`import {name}` works: {importlib.util.find_spec(name)}"
assert zombietop.tui.app.__file__.startswith(sys.prefix), zombietop.tui.app.__file__
print("smoke: imports: from zombietop import Job; import zombietop loads no textual/rich; no core, no tui")
PY

db="$work/demo.db"
config="$db.d/config.toml"
say "zombietop demo --no-tui"
"$bin/zombietop" demo --no-tui --speed 10 --db "$db" >/dev/null
sleep 5
set +e
"$bin/zombietop" status --db "$db" --config "$config"
code=$?
set -e
# The demo's stalled, dead and reclaimable tasks make it CRITICAL within seconds at speed 10.
[[ $code -le 2 ]] || fail "status exited $code"
"$bin/zombietop" status --nagios --db "$db" --config "$config" | head -1 || true
# prometheus-client came along as a dependency: the metrics print, store up.
metrics="$("$bin/zombietop" status --prometheus --db "$db" --config "$config" || true)"
grep -qx 'zombietop_store_up 1.0' <<<"$metrics" || fail "status --prometheus: $metrics"
say "status --prometheus: $(grep -c '^zombietop_task_info{' <<<"$metrics") live tasks exported"

say "the dashboard's first frame in tmux"
tmux -L "$tmux_socket" -f /dev/null new-session -d -s smoke -x 80 -y 24 \
    "$bin/zombietop --db $db --config $config --read-only"
for _ in $(seq 1 100); do
    screen="$(tmux -L "$tmux_socket" capture-pane -p -t smoke 2>/dev/null || true)"
    grep -q "ingest-2041" <<<"$screen" && break
    sleep 0.3
done
grep -q "ingest-2041" <<<"$screen" || fail "the dashboard drew no task in 30 s:
$screen"
printf '%s\n' "$screen" | head -8
tmux -L "$tmux_socket" send-keys -t smoke q
"$bin/zombietop" demo --stop --db "$db"

say "uv tool install and pipx install"
"$work/build/bin/pip" install -q uv pipx
export UV_TOOL_DIR="$work/uv-tools" UV_TOOL_BIN_DIR="$work/uv-bin" UV_CACHE_DIR="$work/uv-cache"
"$work/build/bin/uv" tool install -q "$wheel"
"$work/uv-bin/zombietop" --version
export PIPX_HOME="$work/pipx" PIPX_BIN_DIR="$work/pipx-bin"
"$work/build/bin/pipx" install -q "$wheel" >/dev/null
"$work/pipx-bin/zombietop" --version
say "ok"
