"""Every config rule, its error text, and where each effective value comes from."""

from __future__ import annotations

from pathlib import Path

import pytest

from zombietop.config import (
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
    pytest.param("thresholds = 3\n", "[thresholds] must be a table", id="section-not-table"),
    pytest.param('[timeouts\nstage = "1m"\n', "not valid TOML", id="syntax"),
    pytest.param(
        '[store]\npath = ""\n', "[store]: path must be a non-empty string", id="store-path"
    ),
    pytest.param(
        '[monitor]\nrefresh = "0s"\n', "[monitor]: refresh must be longer than zero", id="refresh"
    ),
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
