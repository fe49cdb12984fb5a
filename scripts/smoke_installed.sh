#!/usr/bin/env bash
# The installed package as a user gets it: build the wheel, install it with [all] (not
# editable) into a fresh venv, and from a directory outside the checkout check the import
# names, run a short demo, `status`, and the dashboard's first frame in tmux. Then the job
# side: the same wheel without extras in a venv of its own, the packages it brings (and the
# ones it must not), a real SDK job and a `zombietop run` writing into a SQLite store that
# the full install reads back. Last, the wheel through `uv tool install` and `pipx install`.
# Used by .ci/run; runs by hand the same way:
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

say "the operator's install: $(basename "$wheel")[all] into a fresh venv"
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install -q "$wheel[all]"
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
# prometheus-client came along with [all]: the metrics print, store up.
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

say "the job side: $(basename "$wheel") without extras into a fresh venv"
python3 -m venv "$work/empty"  # what every venv has (pip, setuptools), to weigh the others by
python3 -m venv "$work/job"
"$work/job/bin/pip" install -q "$wheel"
job="$work/job/bin"
packages() { "$1/bin/python" -m pip list --format=freeze | cut -d= -f1 | tr 'A-Z_' 'a-z-' | sort; }
brought() { comm -13 <(packages "$work/empty") <(packages "$1"); }
kib() { du -sk "$1"/lib/python3*/site-packages | cut -f1; }
weight() { awk -v k="$(($(kib "$1") - $(kib "$work/empty")))" 'BEGIN { printf "%.1f MB", k / 1024 }'; }
job_packages="$(brought "$work/job" | tr '\n' ' ')"
for heavy in textual rich apprise requests prometheus-client asyncpg tomli-w; do
    [[ " $job_packages" != *" $heavy "* ]] || fail "the job side brought $heavy: $job_packages"
done
# The whole list, so that a new dependency of the job side is a decision, not an accident.
[[ "$job_packages" == "aiosqlite cronsim psutil zombietop " ]] ||
    fail "the job side brings $job_packages; expected aiosqlite cronsim psutil zombietop"
full_count=$(($(brought "$work/venv" | wc -l) - 1))
say "job side: 3 dependencies (${job_packages% zombietop }), $(weight "$work/job");" \
    "with [all]: $full_count dependencies, $(weight "$work/venv")" \
    "(each on top of a fresh venv's pip and setuptools, $(awk -v k="$(kib "$work/empty")" \
    'BEGIN { printf "%.1f MB", k / 1024 }'))"

"$job/python" - <<'PY'
import subprocess, sys
from zombietop import Job  # the SDK, as a job author writes it
extras = {"textual", "rich", "apprise", "prometheus_client", "asyncpg", "tomli_w", "cronsim"}
check = f"import sys; from zombietop import Job; print(sorted({{n.split('.')[0] for n in sys.modules}} & {extras!r}))"
out = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, check=True).stdout
assert out.strip() == "[]", f"from zombietop import Job loaded {out.strip()}"
print("smoke: job side: from zombietop import Job loads none of the extras")
PY

# A real job: the SDK leases, beats, checkpoints and finishes; `zombietop run` wraps a shell
# command that beats with `zombietop beat`. The config has a schedule, which a job's config
# check reads with cronsim: the job side must start with the watchdog's config.
jobdb="$work/jobs/zombietop.db"
mkdir -p "$work/jobs"   # zombietop makes a store, never the folders of a --db path
export ZOMBIETOP_CONFIG="$work/jobs.toml"
printf '[schedules.nightly-smoke]\nstep = "smoke"\ncron = "30 2 * * *"\n' >"$ZOMBIETOP_CONFIG"
"$job/python" - "$jobdb" <<'PY'
import sys
from zombietop import Job

with Job("smoke-sdk", db=sys.argv[1], step_type="smoke") as job:
    job.beat("load", 40, rows=400)
    job.checkpoint({"offset": 400})
    job.beat("load", 100, rows=1000)
PY
"$job/zombietop" run --task smoke-run --db "$jobdb" -- \
    sh -c '"$0" beat --stage copy --progress 60 --counter files=3' "$job/zombietop"
set +e
"$bin/zombietop" status --json --all --db "$jobdb" >"$work/jobs.json"
code=$?
set -e
[[ $code -le 2 ]] || fail "status of the job store exited $code"
"$bin/python" - "$work/jobs.json" <<'PY'
import json, sys
tasks = {t["task_id"]: t for t in json.load(open(sys.argv[1]))["tasks"]}
seen = {i: (t["health"], t["stage"], t["progress"]) for i, t in tasks.items()}
assert seen == {"smoke-sdk": ("succeeded", "load", 100.0), "smoke-run": ("succeeded", "copy", 60.0)}, seen
assert tasks["smoke-sdk"]["counters"] == {"rows": 1000.0}, tasks["smoke-sdk"]
assert tasks["smoke-run"]["counters"] == {"files": 3.0}, tasks["smoke-run"]
print(f"smoke: the full install's status reads the job side's tasks: {seen}")
PY
unset ZOMBIETOP_CONFIG

# What the job side cannot do, it says in one line: what to install, never a traceback.
expect_hint() {  # expected exit status, what the line must name, the command
    local want="$1" names="$2"
    shift 2
    set +e
    out="$("$@" 2>&1)"
    got=$?
    set -e
    [[ $got -eq $want && "$out" == *"$names"* && "$out" != *Traceback* ]] ||
        fail "$* exited $got (not $want) or did not name $names: $out"
    say "$(basename "$1")${2:+ ${*:2}} -> $out"
}
expect_hint 2 "pip install '$wheel[all]'" "$job/zombietop" --db "$jobdb"
expect_hint 3 "needs prometheus-client" "$job/zombietop" status --prometheus --db "$jobdb"
expect_hint 3 "[postgres]" "$job/zombietop" status --db postgresql://nobody@127.0.0.1:9/none

say "uv tool install and pipx install, without extras and then with [all]"
"$work/build/bin/pip" install -q uv pipx
export UV_TOOL_DIR="$work/uv-tools" UV_TOOL_BIN_DIR="$work/uv-bin" UV_CACHE_DIR="$work/uv-cache"
"$work/build/bin/uv" tool install -q "$wheel"
# The dashboard's hint is the command for uv, and it works.
expect_hint 2 "uv tool install '$wheel[all]'" "$work/uv-bin/zombietop"
"$work/build/bin/uv" tool install -q "$wheel[all]"
"$work/uv-tools/zombietop/bin/python" -c "import textual, apprise, asyncpg"
"$work/uv-bin/zombietop" --version
export PIPX_HOME="$work/pipx" PIPX_BIN_DIR="$work/pipx-bin"
"$work/build/bin/pipx" install -q "$wheel" >/dev/null
expect_hint 2 "pipx install --force '$wheel[all]'" "$work/pipx-bin/zombietop"
"$work/build/bin/pipx" install --force -q "$wheel[all]" >/dev/null
"$work/pipx/venvs/zombietop/bin/python" -c "import textual, apprise, asyncpg"
"$work/pipx-bin/zombietop" --version
say "ok"
