"""The commands a resume runs: the step type's ``compensate_command`` first, then the task
again (through ``zombietop run``) or its ``resume_command``, detached, logging beside the store."""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from zombietop.config import Config, Limits
from zombietop.durations import format_age
from zombietop.errors import ActionRefused
from zombietop.locations import clean_env, task_file_name
from zombietop.model import Task
from zombietop.private import state_subdir
from zombietop.procs import spawn_detached


def fill_placeholders(command: Sequence[str], task: Task) -> list[str]:
    """Put the task id and checkpoint into an argument list (never through a shell)."""
    checkpoint = task.checkpoint or ""
    return [
        arg.replace("{task_id}", task.task_id).replace("{checkpoint}", checkpoint)
        for arg in command
    ]


@dataclass(frozen=True, slots=True, kw_only=True)
class Launch:
    """A detached process the executor started, and where its output goes."""

    pid: int
    log: Path
    argv: tuple[str, ...]


class ResumeCommands:
    """Start the relaunch of a resumed task, and run its compensation before it."""

    def __init__(
        self, config: Config, *, store_path: Path | str | None, zombietop: Sequence[str]
    ) -> None:
        self.config = config
        self.store_path = store_path
        self.zombietop = tuple(zombietop)
        """How to start `zombietop run` for a relaunch."""
        self._launched: list[subprocess.Popen[bytes]] = []

    def launch(self, task: Task, limits: Limits) -> Launch:
        """Start the relaunch detached (own session), logging beside the store."""
        if self.store_path is None:
            raise ActionRefused("the store has no file path to hand to a relaunched task")
        if task.command:
            argv = [*self.zombietop, "--db", str(self.store_path)]
            if self.config.path is not None:
                argv += ["--config", str(self.config.path)]
            argv += [
                "run",
                "--task",
                task.task_id,
                "--run",
                task.run_id,
                "--type",
                task.step_type,
                # A task with upstream waits for it again, as `run --wait` did, rather than
                # refuse while the upstream has not succeeded.
                *(("--wait",) if task.upstream else ()),
                "--",
                *task.command,
            ]
        else:
            assert limits.resume_command is not None
            argv = fill_placeholders(limits.resume_command, task)
        logs = state_subdir(self.store_path, "logs")
        log = logs / f"{task_file_name(task.task_id)}.{task.attempt}.log"
        env = clean_env()
        env["ZOMBIETOP_DB"] = str(self.store_path)
        cwd = task.cwd if task.cwd and Path(task.cwd).is_dir() else None
        # Reaped when it ends, so a long-lived dashboard leaves no zombies of its own.
        proc = spawn_detached(argv, log=log, env=env, cwd=cwd)
        self._launched = [*(p for p in self._launched if p.returncode is None), proc]
        return Launch(pid=proc.pid, log=log, argv=tuple(argv))

    async def compensate(self, task: Task, limits: Limits) -> str | None:
        """Run the step type's compensate_command; return why it failed, or None."""
        assert limits.compensate_command is not None
        argv = fill_placeholders(limits.compensate_command, task)
        env = clean_env()
        env.update(ZOMBIETOP_TASK=task.task_id, ZOMBIETOP_CHECKPOINT=task.checkpoint or "")
        cwd = task.cwd if task.cwd and Path(task.cwd).is_dir() else None
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                cwd=cwd,
                env=env,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.PIPE,
            )
        except OSError as exc:
            return f"compensation {argv[0]!r} could not start: {exc.strerror or exc}"
        try:
            # An undo is one call's worth of work: hold it to the request budget.
            _, err = await asyncio.wait_for(proc.communicate(), timeout=limits.request)
        except TimeoutError:
            proc.kill()
            await proc.wait()
            return f"compensation {argv[0]!r} ran past {format_age(limits.request)} and was killed"
        if proc.returncode != 0:
            tail = err.decode(errors="replace").strip().splitlines()[-1:] if err else []
            said = f": {tail[0]}" if tail else ""
            return f"compensation {argv[0]!r} failed with exit {proc.returncode}{said}"
        return None
