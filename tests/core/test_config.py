"""Every config rule, its error text, and where each effective value comes from."""

from __future__ import annotations

import contextlib
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from zombietop.bounds import BOUNDS
from zombietop.config import (
    CONFIG_LIMIT,
    DEFAULT_SOURCE,
    DURATION_KEYS,
    ListenAddress,
    default_limits,
    load_config,
    parse_listen,
    render_defaults,
    write_defaults,
)
from zombietop.errors import ConfigError
from zombietop.thresholds import COUNT_KEYS

REPO = Path(__file__).resolve().parents[2]


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text)
    return path


def test_repository_config_toml_is_exactly_the_defaults() -> None:
    assert (REPO / "config.toml").read_text() == render_defaults()
    loaded = load_config(REPO / "config.toml")
    assert loaded.defaults.request == 90
    assert loaded.defaults.stage == 15 * 60
    assert loaded.defaults.task == 6 * 3600
    assert loaded.defaults.kill_grace == 30


def test_no_file_gives_the_defaults_from_nowhere() -> None:
    config = load_config(None)
    assert config.defaults == default_limits()
    assert config.defaults.source("stage") == DEFAULT_SOURCE


# (toml, message fragments): each rule, broken once in the global set and once in a step type.
RULE_CASES = [
    pytest.param(
        '[timeouts]\nrequest = "20m"\n',
        [
            '[timeouts]: request = "20m" must be shorter than stage = "15m" (default)',
            "a request must time out before its stage does",
        ],
        id="request<stage",
    ),
    pytest.param(
        '[timeouts]\nstage = "7h"\n',
        ['[timeouts]: stage = "7h" must be shorter than task = "6h" (default)'],
        id="stage<task",
    ),
    pytest.param(
        '[timeouts]\nstage = "6h"\ntask = "6h"\n',
        ['[timeouts]: stage = "6h" must be shorter than task = "6h"'],
        id="stage<task-equal-is-not-enough",
    ),
    pytest.param(
        '[thresholds]\nheartbeat_interval = "61s"\n',
        [
            '[thresholds]: heartbeat_interval = "61s" x 2 must be at most heartbeat_timeout = "2m" (default)'
        ],
        id="interval*2<=heartbeat_timeout",
    ),
    pytest.param(
        '[thresholds]\nheartbeat_timeout = "5m"\n',
        ['[thresholds]: heartbeat_timeout = "5m" must be shorter than lease_ttl = "5m" (default)'],
        id="heartbeat_timeout<lease_ttl",
    ),
    pytest.param(
        '[thresholds]\nprogress_timeout = "2m"\n',
        [
            '[thresholds]: heartbeat_timeout = "2m" (default) must be shorter than progress_timeout = "2m"'
        ],
        id="heartbeat_timeout<progress_timeout",
    ),
    pytest.param(
        '[timeouts]\nkill_grace = "15m"\n',
        ['[timeouts]: kill_grace = "15m" must be shorter than stage = "15m" (default)'],
        id="kill_grace<stage",
    ),
    pytest.param(
        '[timeouts]\ntask = "10m"\n[step_types.export]\nrequest = "1m"\n',
        ['[timeouts]: stage = "15m" (default) must be shorter than task = "10m"'],
        id="global-set-checked-before-step-types",
    ),
    pytest.param(
        '[step_types.export]\nstage = "7h"\n',
        ['[step_types.export]: stage = "7h" must be shorter than task = "6h" (default)'],
        id="step-type-merged-with-defaults",
    ),
    pytest.param(
        '[timeouts]\ntask = "2h"\n[step_types.export]\nstage = "3h"\n',
        ['[step_types.export]: stage = "3h" must be shorter than task = "2h" (from [timeouts])'],
        id="step-type-merged-with-file-globals",
    ),
    pytest.param(
        '[step_types.fast]\nheartbeat_interval = "1m"\nheartbeat_timeout = "90s"\n',
        [
            '[step_types.fast]: heartbeat_interval = "1m" x 2 must be at most heartbeat_timeout = "90s"'
        ],
        id="step-type-interval",
    ),
    pytest.param(
        '[step_types.etl]\nfrom_source = true\nstage = "7h"\n',
        [
            '[step_types.etl]: stage = "7h" must be at most task = "6h" (default) (a source\'s '
            "task instance is one stage, at most its task)"
        ],
        id="from-source-stage<=task",
    ),
    pytest.param(
        '[step_types.etl]\nfrom_source = false\ntask = "10m"\n',
        ['[step_types.etl]: stage = "15m" (default) must be shorter than task = "10m"'],
        id="from-source-false-keeps-stage<task",
    ),
    pytest.param(
        '[step_types.etl]\nfrom_source = true\ntask = "100s"\nkill_grace = "2m"\n',
        [
            '[step_types.etl]: kill_grace = "2m" must be shorter than stage = "100s" '
            "(from_source = true: the task budget)"
        ],
        id="from-source-kill_grace<stage-still-holds",
    ),
    pytest.param(
        '[step_types.etl]\nfrom_source = true\nrequest = "2h"\ntask = "1h"\n',
        ['[step_types.etl]: request = "2h" must be shorter than stage = "1h"'],
        id="from-source-request<stage-still-holds",
    ),
]


@pytest.mark.parametrize(("text", "fragments"), RULE_CASES)
def test_each_rule_names_file_section_both_keys_and_values(
    tmp_path: Path, text: str, fragments: list[str]
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    message = str(caught.value)
    assert message.startswith(str(path) + " [")
    for fragment in fragments:
        assert fragment in message
    assert "\n" not in message


SHAPE_CASES = [
    pytest.param(
        '[thresholds]\nheartbeat_timout = "3m"\n',
        "[thresholds]: unknown key 'heartbeat_timout'; did you mean 'heartbeat_timeout'?",
        id="typo",
    ),
    pytest.param(
        "[timeouts]\nretries = 3\n", "[timeouts]: unknown key 'retries'", id="unknown-timeout"
    ),
    pytest.param(
        "[dashboard]\nx = 1\n", "top level: unknown key 'dashboard'", id="unknown-section"
    ),
    pytest.param(
        '[step_types.export]\nresume = ["x"]\n',
        "[step_types.export]: unknown key 'resume'; did you mean 'resume_command'?",
        id="step-typo",
    ),
    pytest.param(
        '[thresholds]\nresume_command = ["x"]\n',
        "[thresholds]: unknown key 'resume_command'",
        id="step-only-key-outside-step-types",
    ),
    pytest.param(
        '[timeouts]\nstage = "15 minutes"\n',
        "[timeouts]: stage: '15 minutes' is not a duration",
        id="bad-duration",
    ),
    pytest.param(
        "[timeouts]\nstage = true\n",
        '[timeouts]: stage must be a duration such as "90s"',
        id="bool-duration",
    ),
    pytest.param(
        '[timeouts]\nstage = "0s"\n', "[timeouts]: stage must be longer than zero", id="zero"
    ),
    pytest.param(
        '[step_types.x]\nresume_command = "engine resume"\n',
        "[step_types.x]: resume_command must be a non-empty list of strings",
        id="shell-string",
    ),
    pytest.param(
        '[step_types.x]\nauto_retry = "yes"\n',
        "[step_types.x]: auto_retry must be true or false",
        id="auto-retry",
    ),
    pytest.param(
        '[step_types.x]\nfrom_source = "airflow"\n',
        "[step_types.x]: from_source must be true or false, not 'airflow'",
        id="from-source-not-a-bool",
    ),
    pytest.param(
        "[step_types.x]\nfrom_source = true\nauto_retry = true\n",
        "[step_types.x]: auto_retry = true with from_source = true: zombietop never retries",
        id="from-source-no-auto-retry",
    ),
    pytest.param(
        "[timeouts]\nfrom_source = true\n",
        "[timeouts]: unknown key 'from_source'",
        id="from-source-only-in-step-types",
    ),
    pytest.param("thresholds = 3\n", "[thresholds] must be a table", id="section-not-table"),
    pytest.param('[timeouts\nstage = "1m"\n', "not valid TOML", id="syntax"),
    pytest.param(
        '[store]\npath = ""\n', "[store]: path must be a non-empty string", id="store-path"
    ),
    pytest.param(
        '[monitor]\nrefresh = "0s"\n', "[monitor]: refresh must be longer than zero", id="refresh"
    ),
    pytest.param(
        '[monitor]\nmouse = "no"\n', "[monitor]: mouse = 'no' must be true or false", id="mouse"
    ),
    pytest.param("[monitor]\nmice = false\n", "[monitor]: unknown key 'mice'", id="monitor-key"),
    pytest.param(
        '[agent]\nallow = "alice"\n', "[agent]: allow must be a list of OS user names", id="allow"
    ),
    pytest.param(
        '[agent]\nallow = ["alice", ""]\n', "[agent]: allow must be a list", id="allow-empty"
    ),
    pytest.param('[agent]\ndeny = ["x"]\n', "[agent]: unknown key 'deny'", id="agent-key"),
    pytest.param(
        "[watch]\nmetrics = 9464\n",
        '[watch]: metrics must be a string such as "127.0.0.1:9464", not 9464',
        id="metrics-number",
    ),
    pytest.param(
        '[watch]\nmetrics = ":9464"\n',
        "[watch]: metrics: ':9464' is not HOST:PORT; give the host too, e.g. 127.0.0.1:9464",
        id="metrics-no-host",
    ),
    pytest.param(
        '[watch]\nmetrics = "127.0.0.1:http"\n',
        "[watch]: metrics: '127.0.0.1:http': the port must be a number from 0 to 65535",
        id="metrics-port-name",
    ),
    pytest.param(
        '[watch]\nmetrics = "::1:9464"\n',
        "[watch]: metrics: '::1:9464': put an IPv6 address in brackets, e.g. [::1]:9464",
        id="metrics-bare-ipv6",
    ),
    pytest.param(
        '[watch]\nmetric = "127.0.0.1:9464"\n',
        "[watch]: unknown key 'metric'; did you mean 'metrics'?",
        id="metrics-typo",
    ),
]


def test_monitor_read_at_most_is_read(tmp_path: Path) -> None:
    assert load_config(write(tmp_path, "[monitor]\nread_at_most = 500\n")).read_at_most == 500
    assert load_config(write(tmp_path, "[monitor]\n")).read_at_most == 20_000


def test_monitor_copy_lines_is_read(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, "[monitor]\ncopy_lines = 200\n"))
    assert config.copy_lines == 200
    assert load_config(write(tmp_path, "[monitor]\n")).copy_lines == 50
    with pytest.raises(ConfigError, match=r"copy_lines must be a whole number >= 1, not '50'"):
        load_config(write(tmp_path, '[monitor]\ncopy_lines = "50"\n'))


def test_agent_allow_is_read(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, '[agent]\nallow = ["alice", "deploy"]\n'))
    assert config.agent.allow == ("alice", "deploy")


@pytest.mark.parametrize(
    ("text", "host", "port"),
    [
        ("9464", "127.0.0.1", 9464),  # a bare port: this host only
        ("127.0.0.1:9464", "127.0.0.1", 9464),
        ("0.0.0.0:9464", "0.0.0.0", 9464),
        ("[::1]:0", "::1", 0),
        ("metrics.internal:9100", "metrics.internal", 9100),
    ],
)
def test_watch_metrics_address(tmp_path: Path, text: str, host: str, port: int) -> None:
    config = load_config(write(tmp_path, f'[watch]\nmetrics = "{text}"\n'))
    assert config.watch.metrics == ListenAddress(host=host, port=port)
    assert parse_listen(str(config.watch.metrics)) == config.watch.metrics


def test_watch_metrics_is_off_by_default() -> None:
    assert load_config(REPO / "config.toml").watch.metrics is None
    assert '# metrics = "127.0.0.1:9464"' in render_defaults()


@pytest.mark.parametrize(("text", "fragment"), SHAPE_CASES)
def test_shape_errors_are_one_clear_line(tmp_path: Path, text: str, fragment: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert fragment in str(caught.value)
    assert str(path) in str(caught.value)


def test_missing_file_says_how_to_create_one(tmp_path: Path) -> None:
    with pytest.raises(
        ConfigError, match=r"no such config file; create one with `zombietop config init"
    ):
        load_config(tmp_path / "absent.toml")


def test_step_type_overrides_record_where_each_value_came_from(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        '[timeouts]\ntask = "8h"\n'
        '[step_types.export]\nstage = "45m"\nresume_command = ["engine", "resume", "{task_id}"]\n',
    )
    config = load_config(path)
    export = config.limits_for("export")
    assert export.stage == 45 * 60
    assert export.task == 8 * 3600
    assert export.request == 90
    assert export.resume_command == ("engine", "resume", "{task_id}")
    assert export.source("stage") == f"{path} [step_types.export]"
    assert export.source("task") == f"{path} [timeouts]"
    assert export.source("request") == DEFAULT_SOURCE
    # Unknown step types fall back to the global set.
    assert config.limits_for("other") is config.defaults
    assert config.limits_for(None).stage == 15 * 60


@pytest.mark.parametrize(
    ("text", "stage", "task", "stage_from"),
    [
        pytest.param(
            'task = "10m"\n', 600.0, 600.0, "from_source = true: the task budget", id="stage=task"
        ),
        pytest.param('task = "2h"\nstage = "2h"\n', 7200.0, 7200.0, "", id="stage=task-set"),
        pytest.param('stage = "2m"\n', 120.0, 6 * 3600.0, "", id="own-stage"),
        pytest.param(
            "", 6 * 3600.0, 6 * 3600.0, "from_source = true: the task budget", id="nothing-set"
        ),
    ],
)
def test_a_from_source_step_type_is_one_stage(
    tmp_path: Path, text: str, stage: float, task: float, stage_from: str
) -> None:
    """An Airflow DAG's step type: its task instance is one stage, so the stage may be the
    whole task, and is the task budget unless the section sets one."""
    path = write(tmp_path, f"[step_types.etl]\nfrom_source = true\n{text}")
    etl = load_config(path).limits_for("etl")
    assert (etl.from_source, etl.stage, etl.task) == (True, stage, task)
    assert etl.source("stage") == f"{path} [step_types.etl] {stage_from}".rstrip()


def test_sub_second_durations_are_legal_for_fast_tests(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        '[thresholds]\nheartbeat_interval = "100ms"\nheartbeat_timeout = "1s"\nlease_ttl = "2s"\n'
        'progress_timeout = "3s"\nstart_grace = "1s"\n[timeouts]\nkill_grace = "500ms"\n',
    )
    assert load_config(path).defaults.heartbeat_interval == 0.1


def test_init_writes_defaults_and_refuses_to_overwrite(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "config.toml"
    write_defaults(path)
    written = load_config(path).defaults
    for key in DURATION_KEYS:
        assert getattr(written, key) == getattr(default_limits(), key)
        assert written.source(key) == f"{path} [{DURATION_KEYS[key]}]"
    with pytest.raises(ConfigError, match="already exists; pass --force"):
        write_defaults(path)
    path.write_text("garbage = [")
    write_defaults(path, force=True)
    load_config(path)


@pytest.mark.parametrize("value", ["99999999999d", "1" * 400 + "d", "36501d"])
def test_a_duration_beyond_what_a_date_can_hold_is_refused(tmp_path: Path, value: str) -> None:
    """The reported fault: such a task budget passed ``config check`` and crashed the
    dashboard's detail view (a date past the year 9999)."""
    path = tmp_path / "c.toml"
    path.write_text(f'[timeouts]\ntask = "{value}"\n')
    with pytest.raises(ConfigError, match="longer than zombietop can add to a date; use at most"):
        load_config(path)


def test_deeply_nested_toml_is_one_line_not_a_recursion_error(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text("a = " + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert "\n" not in str(err.value) and "nested too deeply" in str(err.value)


# Every number has a floor and a ceiling (issue N2 #16): (family, key, toml, message fragment).
SCHEDULE = '[schedules.n]\nstep = "e"\ncron = "0 2 * * *"\n'
SOURCE = '[[sources]]\nurl = "airflow+sqlite:////a.db"\n'
BOUND_CASES = [
    # [thresholds] and [timeouts]: 100ms at least (a step type too), and no more than a date holds.
    ("limits", "heartbeat_interval", "low", '[thresholds]\nheartbeat_interval = "1ms"\n',
     '[thresholds]: heartbeat_interval = "1ms" is below its floor of "100ms"'),
    ("limits", "heartbeat_timeout", "low", '[thresholds]\nheartbeat_timeout = 0.05\n',
     '[thresholds]: heartbeat_timeout = 0.05 is below its floor of "100ms"'),
    ("limits", "lease_ttl", "low", '[thresholds]\nlease_ttl = "50ms"\n',
     '[thresholds]: lease_ttl = "50ms" is below its floor of "100ms"'),
    ("limits", "progress_timeout", "low", '[thresholds]\nprogress_timeout = "50ms"\n',
     '[thresholds]: progress_timeout = "50ms" is below its floor of "100ms"'),
    ("limits", "start_grace", "low", '[thresholds]\nstart_grace = "1ms"\n',
     '[thresholds]: start_grace = "1ms" is below its floor of "100ms"'),
    ("limits", "queue_timeout", "low", '[step_types.x]\nqueue_timeout = "10ms"\n',
     '[step_types.x]: queue_timeout = "10ms" is below its floor of "100ms"'),
    ("limits", "idle_timeout", "low", '[thresholds]\nidle_timeout = "1ms"\n',
     '[thresholds]: idle_timeout = "1ms" is below its floor of "100ms"'),
    ("limits", "request", "low", '[timeouts]\nrequest = "1ms"\n',
     '[timeouts]: request = "1ms" is below its floor of "100ms"'),
    ("limits", "stage", "low", '[step_types.x]\nstage = "99ms"\n',
     '[step_types.x]: stage = "99ms" is below its floor of "100ms"'),
    ("limits", "task", "high", "[timeouts]\ntask = 1e10\n",
     '[timeouts]: task = 10000000000.0 is above its ceiling of "36500d"'),
    ("limits", "kill_grace", "low", '[step_types.x]\nkill_grace = "1ms"\n',
     '[step_types.x]: kill_grace = "1ms" is below its floor of "100ms"'),
    ("limits", "stage", "high", "[timeouts]\nstage = inf\n",
     '[timeouts]: stage = inf is above its ceiling of "36500d"'),
    ("limits", "request", "nan", "[timeouts]\nrequest = nan\n",
     "[timeouts]: request = nan is above its ceiling"),
    ("limits", "flap_window", "low", '[thresholds]\nflap_window = "1ms"\n',
     '[thresholds]: flap_window = "1ms" is below its floor of "100ms"'),
    ("limits", "flap_threshold", "low", "[thresholds]\nflap_threshold = 0\n",
     "[thresholds]: flap_threshold must be a whole number >= 1, not 0"),
    ("limits", "flap_threshold", "high", "[step_types.x]\nflap_threshold = 1001\n",
     "[step_types.x]: flap_threshold = 1001 is above its ceiling of 1000"),
    # A step type's own keys.
    ("step_types", "retry_backoff", "low", '[step_types.x]\nretry_backoff = "1ms"\n',
     '[step_types.x]: retry_backoff = "1ms" is below its floor of "1s"'),
    ("step_types", "retry_backoff", "high", '[step_types.x]\nretry_backoff = "2d"\n',
     '[step_types.x]: retry_backoff = "2d" is above its ceiling of "1d"'),
    ("step_types", "max_retries", "low", "[step_types.x]\nmax_retries = 0\n",
     "[step_types.x]: max_retries must be a whole number >= 1, not 0"),
    ("step_types", "max_retries", "high", "[step_types.x]\nmax_retries = 1000000000000\n",
     "[step_types.x]: max_retries = 1000000000000 is above its ceiling of 20"),
    # [history], and the same keys in a [step_types.NAME].
    ("history", "history_min_runs", "low", "[history]\nhistory_min_runs = 0\n",
     "[history]: history_min_runs must be a whole number >= 1, not 0"),
    ("history", "history_min_runs", "high", "[step_types.x]\nhistory_min_runs = 101\n",
     "[step_types.x]: history_min_runs = 101 is above its ceiling of 100"),
    ("history", "slow_after", "low", "[history]\nslow_after = 1.0\n",
     "[history]: slow_after = 1.0 is below its floor of 1.1"),
    ("history", "slow_after", "high", "[step_types.x]\nslow_after = 1000\n",
     "[step_types.x]: slow_after = 1000 is above its ceiling of 100"),
    ("history", "too_fast_below", "low", "[history]\ntoo_fast_below = -0.1\n",
     "[history]: too_fast_below = -0.1 is below its floor of 0"),
    ("history", "too_fast_below", "high", "[history]\ntoo_fast_below = 1.5\n",
     "[history]: too_fast_below = 1.5 is above its ceiling of 0.9"),
    ("history", "slow_min", "low", '[history]\nslow_min = "1ms"\n',
     '[history]: slow_min = "1ms" is below its floor of "100ms"'),
    ("history", "slow_min", "high", "[history]\nslow_min = 1e10\n",
     '[history]: slow_min = 10000000000.0 is above its ceiling of "36500d"'),
    ("history", "drift_after", "low", "[history]\ndrift_after = 1.0\n",
     "[history]: drift_after = 1.0 is below its floor of 1.1"),
    ("history", "drift_after", "high", "[step_types.x]\ndrift_after = 101\n",
     "[step_types.x]: drift_after = 101 is above its ceiling of 100"),
    ("history", "drift_min", "low", '[history]\ndrift_min = "1ms"\n',
     '[history]: drift_min = "1ms" is below its floor of "1s"'),
    ("history", "drift_min", "high", '[history]\ndrift_min = "2d"\n',
     '[history]: drift_min = "2d" is above its ceiling of "1d"'),
    ("history", "failing_after", "low", "[history]\nfailing_after = 1\n",
     "[history]: failing_after = 1 is below its floor of 1.1"),
    ("history", "failing_after", "high", "[history]\nfailing_after = 1000\n",
     "[history]: failing_after = 1000 is above its ceiling of 100"),
    ("history", "failing_min_runs", "low", "[history]\nfailing_min_runs = 1\n",
     "[history]: failing_min_runs must be a whole number >= 2, not 1"),
    ("history", "failing_min_runs", "high", "[step_types.x]\nfailing_min_runs = 2001\n",
     "[step_types.x]: failing_min_runs = 2001 is above its ceiling of 2000"),
    # [otel]
    ("otel", "queue_size", "low", "[otel]\nqueue_size = 1\n",
     "[otel]: queue_size must be a whole number >= 16, not 1"),
    ("otel", "queue_size", "high", "[otel]\nqueue_size = 2000000\n",
     "[otel]: queue_size = 2000000 is above its ceiling of 1000000"),
    ("otel", "timeout", "low", '[otel]\ntimeout = "10ms"\n',
     '[otel]: timeout = "10ms" is below its floor of "500ms"'),
    ("otel", "timeout", "high", '[otel]\ntimeout = "1h"\n',
     '[otel]: timeout = "1h" is above its ceiling of "10m"'),
    ("otel", "metrics_interval", "low", '[otel]\nmetrics_interval = "10ms"\n',
     '[otel]: metrics_interval = "10ms" is below its floor of "1s"'),
    ("otel", "metrics_interval", "high", '[otel]\nmetrics_interval = "2d"\n',
     '[otel]: metrics_interval = "2d" is above its ceiling of "1d"'),
    # [monitor]
    ("monitor", "refresh", "low", '[monitor]\nrefresh = "1ms"\n',
     '[monitor]: refresh = "1ms" is below its floor of "250ms"'),
    ("monitor", "refresh", "high", '[monitor]\nrefresh = "1h"\n',
     '[monitor]: refresh = "1h" is above its ceiling of "10m"'),
    ("monitor", "finished_window", "low", '[monitor]\nfinished_window = "1ms"\n',
     '[monitor]: finished_window = "1ms" is below its floor of "1s"'),
    ("monitor", "finished_window", "high", '[monitor]\nfinished_window = "36500d"\n',
     '[monitor]: finished_window = "36500d" is above its ceiling of "7d"'),
    ("monitor", "copy_lines", "low", "[monitor]\ncopy_lines = 0\n",
     "[monitor]: copy_lines must be a whole number >= 1, not 0"),
    ("monitor", "copy_lines", "high", "[monitor]\ncopy_lines = 201\n",
     "[monitor]: copy_lines = 201 is above its ceiling of 200"),
    ("monitor", "read_at_most", "low", "[monitor]\nread_at_most = 99\n",
     "[monitor]: read_at_most must be a whole number >= 100, not 99"),
    ("monitor", "read_at_most", "high", "[monitor]\nread_at_most = 1000001\n",
     "[monitor]: read_at_most = 1000001 is above its ceiling of 1000000"),
    # [watch]
    ("watch", "interval", "low", '[watch]\ninterval = "1ms"\n',
     '[watch]: interval = "1ms" is below its floor of "1s"'),
    ("watch", "interval", "high", '[watch]\ninterval = "2h"\n',
     '[watch]: interval = "2h" is above its ceiling of "1h"'),
    ("watch", "digest_every", "low", '[watch]\ndigest_every = "1ms"\n',
     '[watch]: digest_every = "1ms" is below its floor of "1m"'),
    ("watch", "digest_every", "high", '[watch]\ndigest_every = "31d"\n',
     '[watch]: digest_every = "31d" is above its ceiling of "30d"'),
    ("watch", "renotify", "low", '[watch]\nrenotify = "1ms"\n',
     '[watch]: renotify = "1ms" is below its floor of "1m"'),
    ("watch", "renotify", "high", '[watch]\nrenotify = "31d"\n',
     '[watch]: renotify = "31d" is above its ceiling of "30d"'),
    ("watch", "stage_kill_factor", "low", "[watch]\nstage_kill_factor = 0.5\n",
     "[watch]: stage_kill_factor must be 0 (never kill) or a number above 1"),
    ("watch", "stage_kill_factor", "high", "[watch]\nstage_kill_factor = 1e300\n",
     "[watch]: stage_kill_factor = 1e+300 is above its ceiling of 100"),
    # [store]
    ("store", "keep_finished", "low", '[store]\nkeep_finished = "500ms"\n',
     '[store]: keep_finished = "500ms" is below its floor of "1s"'),
    ("store", "keep_finished", "high", '[store]\nkeep_finished = 1e10\n',
     '[store]: keep_finished = 10000000000.0 is above its ceiling of "36500d"'),
    # [oncall]
    ("oncall", "ack_for", "low", '[oncall]\nack_for = "1ms"\n',
     '[oncall]: ack_for = "1ms" is below its floor of "1m"'),
    ("oncall", "ack_for", "high", '[oncall]\nack_for = "366d"\nmax_silence = "366d"\n',
     '[oncall]: ack_for = "366d" is above its ceiling of "365d"'),
    ("oncall", "max_silence", "low", '[oncall]\nmax_silence = "30s"\n',
     '[oncall]: max_silence = "30s" is below its floor of "1m"'),
    ("oncall", "max_silence", "high", '[oncall]\nmax_silence = "36500d"\n',
     '[oncall]: max_silence = "36500d" is above its ceiling of "365d"'),
    # [notify]
    ("notify", "retry_backoff", "low", '[notify]\nretry_backoff = "1ms"\n',
     '[notify]: retry_backoff = "1ms" is below its floor of "1s"'),
    ("notify", "retry_backoff", "high", '[notify]\nretry_backoff = "2h"\n',
     '[notify]: retry_backoff = "2h" is above its ceiling of "1h"'),
    ("notify", "timeout", "low", '[notify]\ntimeout = "1ms"\n',
     '[notify]: timeout = "1ms" is below its floor of "1s"'),
    ("notify", "timeout", "high", '[notify]\ntimeout = "1d"\n',
     '[notify]: timeout = "1d" is above its ceiling of "5m"'),
    ("notify", "max_attempts", "low", "[notify]\nmax_attempts = 0\n",
     "[notify]: max_attempts must be a whole number >= 1, not 0"),
    ("notify", "max_attempts", "high", "[notify]\nmax_attempts = 1000000000000\n",
     "[notify]: max_attempts = 1000000000000 is above its ceiling of 20"),
    ("notify", "digest_after", "low", "[notify]\ndigest_after = 0\n",
     "[notify]: digest_after must be a whole number >= 1, not 0"),
    ("notify", "digest_after", "high", "[notify]\ndigest_after = 1000000\n",
     "[notify]: digest_after = 1000000 is above its ceiling of 10000"),
    # [schedules.NAME]
    ("schedules", "grace", "low", SCHEDULE + 'grace = "1ms"\n',
     '[schedules.n]: grace = "1ms" is below its floor of "1s"'),
    ("schedules", "grace", "high", SCHEDULE + 'grace = "365d"\n',
     '[schedules.n]: grace = "365d" is above its ceiling of "31d"'),
    ("schedules", "max_runtime", "low", SCHEDULE + 'max_runtime = "1ms"\n',
     '[schedules.n]: max_runtime = "1ms" is below its floor of "1s"'),
    ("schedules", "max_runtime", "high", SCHEDULE + "max_runtime = 1e10\n",
     '[schedules.n]: max_runtime = 10000000000.0 is above its ceiling of "36500d"'),
    # [[sources]]
    ("sources", "heartbeat_timeout", "low", SOURCE + 'heartbeat_timeout = "1ms"\n',
     '[sources #1]: heartbeat_timeout = "1ms" is below its floor of "1s"'),
    ("sources", "heartbeat_timeout", "high", SOURCE + "heartbeat_timeout = 1e10\n",
     '[sources #1]: heartbeat_timeout = 10000000000.0 is above its ceiling of "36500d"'),
    # [serve]
    ("serve", "read_timeout", "low", '[serve]\nread_timeout = "100ms"\n',
     '[serve]: read_timeout = "100ms" is below its floor of "1s"'),
    ("serve", "read_timeout", "high", '[serve]\nread_timeout = "1h"\n',
     '[serve]: read_timeout = "1h" is above its ceiling of "5m"'),
]  # fmt: skip


@pytest.mark.parametrize(
    ("family", "key", "side", "text", "fragment"),
    BOUND_CASES,
    ids=[f"{family}.{key}-{side}" for family, key, side, _, _ in BOUND_CASES],
)
def test_every_number_has_a_floor_and_a_ceiling_named_in_the_error(
    tmp_path: Path, family: str, key: str, side: str, text: str, fragment: str
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    message = str(caught.value)
    assert message.startswith(f"{path} [")
    assert fragment in message
    assert "\n" not in message
    if side in ("low", "high") and "whole number" not in fragment and "must be 0" not in fragment:
        # The bound comes with why, and with what to give instead.
        assert message.count(": ") >= 2 and ("or more" in message or "or less" in message)


def test_the_bound_cases_cover_both_ends_of_every_bound() -> None:
    covered = {(family, key, side) for family, key, side, _, _ in BOUND_CASES}
    for family, bounds in BOUNDS.items():
        for key, bound in bounds.items():
            if family != "limits":
                assert (family, key, "low") in covered, f"{family}.{key}: no case below its floor"
                assert (family, key, "high") in covered, f"{family}.{key}: no case above it"
            assert bound.low < bound.high
    limits = {key for family, key, side, _, _ in BOUND_CASES if family == "limits"}
    assert limits == set(DURATION_KEYS) | COUNT_KEYS


@pytest.mark.parametrize(
    "text",
    [
        '[watch]\ninterval = "1s"\ndigest_every = "1m"\nrenotify = "1m"\nstage_kill_factor = 100\n',
        '[watch]\ninterval = "1h"\ndigest_every = "30d"\nrenotify = "30d"\n',
        '[watch]\nrenotify = "0s"\nstage_kill_factor = 0\n',
        '[thresholds]\nqueue_timeout = "0s"\n[step_types.dag]\nqueue_timeout = "45m"\n',
        '[notify]\nretry_backoff = "1s"\ntimeout = "5m"\nmax_attempts = 20\n',
        '[oncall]\nack_for = "1m"\nmax_silence = "365d"\n',
        '[monitor]\nrefresh = "250ms"\nfinished_window = "7d"\n',
        '[step_types.x]\nauto_retry = true\nmax_retries = 20\nretry_backoff = "1d"\n',
        '[history]\nhistory_min_runs = 1\nslow_after = 1.1\nslow_min = "0s"\ntoo_fast_below = 0\n',
        "[step_types.x]\nhistory_min_runs = 100\nslow_after = 100\npage_on_failure = false\n",
        SCHEDULE + 'grace = "31d"\nmax_runtime = "1s"\n',
    ],
)
def test_values_on_a_bound_are_allowed(tmp_path: Path, text: str) -> None:
    load_config(write(tmp_path, text))


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        pytest.param(
            '[notify]\ncommand = [""]\n',
            '[notify]: command = "", ...: its first string is the program to run and must name one',
            id="empty-program",
        ),
        pytest.param(
            '[notify]\ncommand = ["  ", "x"]\n',
            '[notify]: command = "  ", ...: its first string is the program to run',
            id="blank-program",
        ),
        pytest.param(
            '[step_types.x]\nresume_command = [""]\n',
            '[step_types.x]: resume_command = "", ...: its first string is the program',
            id="empty-resume-program",
        ),
        pytest.param(
            '[notify]\ncommand = ["page", "a\\u0000b"]\n',
            "[notify]: command holds a NUL character",
            id="nul",
        ),
    ],
)
def test_a_command_must_name_a_program(tmp_path: Path, text: str, fragment: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert fragment in str(caught.value)
    assert str(caught.value).startswith(str(path))


def test_an_empty_argument_after_the_program_is_allowed(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, '[notify]\ncommand = ["page", ""]\n'))
    assert config.notify.command == ("page", "")


# Only a regular file of a sane size is read as a config (issue N2 #12). Each runs the real
# command in a child: a FIFO blocked open() forever, /dev/zero read 9 GB in 20 s (the child's
# address space is capped, so a regression fails fast instead of filling the machine).
COMMAND = [sys.executable, "-m", "zombietop.tui"]
MEMORY_CAP = 2 * 1024**3


def _capped() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


def _check(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*COMMAND, *argv],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=_capped,
    )


@pytest.mark.parametrize(
    ("argv", "what"),
    [
        pytest.param(["config", "check", "/dev/zero"], "/dev/zero", id="config-check"),
        pytest.param(["--config", "/dev/zero", "status"], "/dev/zero", id="status"),
    ],
)
def test_a_device_is_refused_as_a_config(argv: list[str], what: str) -> None:
    done = _check(*argv)
    assert done.returncode in (2, 3), done.stderr
    assert done.stderr.strip().endswith("`zombietop config init PATH`"), done.stderr
    assert (
        f"{what}: cannot read it as a config: it is a character device, not a regular file. "
        "A config is a TOML file of at most 1 MiB"
    ) in done.stderr


def test_a_fifo_is_refused_as_a_config_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "config.toml"
    os.mkfifo(fifo)
    try:
        done = _check("config", "check", str(fifo))
    except subprocess.TimeoutExpired:
        pytest.fail("zombietop blocked opening the FIFO")
    finally:
        # A reader still blocked in open() (the bug) gets EOF once a writer comes and goes.
        with contextlib.suppress(OSError):
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    assert done.returncode == 2, done.stderr
    assert f"{fifo}: cannot read it as a config: it is a FIFO (a named pipe)" in done.stderr


def test_a_directory_is_refused_as_a_config(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="it is a directory, not a regular file"):
        load_config(tmp_path)


def test_a_config_larger_than_the_limit_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "big.toml"
    path.write_bytes(b"# padding\n" * (CONFIG_LIMIT // 10 + 1))
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(caught.value).startswith(
        f"{path}: cannot read it as a config: it is larger than {CONFIG_LIMIT} bytes. "
        "A config is a TOML file of at most 1 MiB"
    )
    path.write_bytes(b"# padding\n" * (CONFIG_LIMIT // 10))
    assert load_config(path).defaults == default_limits()


def test_a_link_to_a_config_is_followed(tmp_path: Path) -> None:
    real = write(tmp_path, '[timeouts]\nstage = "45m"\n')
    link = tmp_path / "link.toml"
    link.symlink_to(real)
    assert load_config(link).defaults.stage == 45 * 60


def test_the_config_remembers_when_it_was_written(tmp_path: Path) -> None:
    path = write(tmp_path, "")
    os.utime(path, (1_700_000_000, 1_700_000_000))
    assert load_config(path).written_at == 1_700_000_000
    assert load_config(None).written_at is None


def test_init_refuses_to_write_into_a_fifo(tmp_path: Path) -> None:
    fifo = tmp_path / "config.toml"
    os.mkfifo(fifo)
    with pytest.raises(ConfigError, match="is not a regular file; give the path of a file"):
        write_defaults(fifo, force=True)


@pytest.mark.parametrize(
    ("text", "grouped"),
    [("", True), ("[watch]\ngroup_by_upstream = false\n", False)],
)
def test_group_by_upstream_is_on_unless_turned_off(
    tmp_path: Path, text: str, grouped: bool
) -> None:
    assert load_config(write(tmp_path, text)).watch.group_by_upstream is grouped


def test_group_by_upstream_must_be_true_or_false(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(write(tmp_path, '[watch]\ngroup_by_upstream = "yes"\n'))
    assert "[watch]: group_by_upstream must be true or false, not 'yes'" in str(caught.value)


def test_idle_timeout_is_per_step_type_and_at_most_the_task(tmp_path: Path) -> None:
    """The idle timeout of a hung task under a beating supervisor: 20m by default, set per
    step type, never longer than the task; a default one is cut to a shorter task budget."""
    path = write(tmp_path, '[step_types.etl]\nidle_timeout = "5m"\n')
    config = load_config(path)
    assert (config.defaults.idle_timeout, config.limits_for("etl").idle_timeout) == (1200.0, 300.0)
    short = load_config(write(tmp_path, '[timeouts]\ntask = "10m"\nstage = "5m"\n')).defaults
    assert short.idle_timeout == 600.0
    assert short.source("idle_timeout") == "default, cut to the task budget"
    path = write(tmp_path, '[step_types.etl]\nidle_timeout = "7h"\n')
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(caught.value) == (
        f'{path} [step_types.etl]: idle_timeout = "7h" must be at most task = "6h" (default) '
        "(an idle task must be noticed before its task ends)"
    )
