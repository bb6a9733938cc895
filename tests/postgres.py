"""A throwaway PostgreSQL server for the test session: real, local, gone at the end.

``PostgresCluster`` runs Debian's PostgreSQL binaries: ``initdb`` into a fresh temporary
directory (trust authentication, no fsync: nothing here needs to survive), ``pg_ctl start``
on a free loopback port with its unix socket in that directory, and a database for the
tests. PostgreSQL refuses to run as root, so under root every server command runs as the
``postgres`` system user the Debian package creates, and the directory is handed to it.

When PostgreSQL is not installed, ``PostgresMissingError`` says to run ``make postgres``; the
fixture turns that into a failure, never a skip, so CI cannot pass without the real server.
"""

from __future__ import annotations

import os
import pwd
import re
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

import psycopg

DATABASE = "assay_test"
_START_ATTEMPTS = 3


class PostgresMissingError(RuntimeError):
    """PostgreSQL's server binaries are not installed on this machine."""


def find_bindir() -> Path:
    """The directory holding ``initdb`` and ``pg_ctl``: ``$ASSAY_PG_BINDIR``, else the newest
    ``/usr/lib/postgresql/*/bin`` (Debian keeps them off ``PATH``), else ``pg_ctl`` on
    ``PATH``."""
    override = os.environ.get("ASSAY_PG_BINDIR")
    candidates = [Path(override)] if override else []
    versions = sorted(
        Path("/usr/lib/postgresql").glob("*/bin"),
        key=lambda path: [int(part) for part in re.findall(r"\d+", path.parent.name)],
        reverse=True,
    )
    candidates += versions
    on_path = shutil.which("pg_ctl")
    if on_path:
        candidates.append(Path(on_path).resolve().parent)
    for bindir in candidates:
        if (bindir / "pg_ctl").is_file() and (bindir / "initdb").is_file():
            return bindir
    raise PostgresMissingError(
        "PostgreSQL is not installed: no initdb and pg_ctl under /usr/lib/postgresql/*/bin "
        "or on PATH. Run `make postgres` (it installs Debian's postgresql package), or set "
        "ASSAY_PG_BINDIR to the directory that holds them."
    )


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class PostgresCluster:
    """One PostgreSQL server in a temporary directory; ``url`` once started."""

    def __init__(self, bindir: Path | None = None) -> None:
        self.bindir = bindir or find_bindir()
        self.root = Path(tempfile.mkdtemp(prefix="assay-pg-"))
        self.data = self.root / "data"
        self.log = self.root / "server.log"
        self.port = 0
        self._as_user: list[str] = []
        if os.geteuid() == 0:
            try:
                account = pwd.getpwnam("postgres")
            except KeyError:
                shutil.rmtree(self.root, ignore_errors=True)
                raise PostgresMissingError(
                    "running as root, PostgreSQL needs the 'postgres' system user, which "
                    "does not exist; run `make postgres` to install Debian's postgresql "
                    "package, which creates it"
                ) from None
            os.chown(self.root, account.pw_uid, account.pw_gid)
            self._as_user = ["runuser", "-u", "postgres", "--"]

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{DATABASE}"

    def __enter__(self) -> PostgresCluster:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    def start(self) -> None:
        """initdb, start on a free port (retried if another process takes it), create the
        test database."""
        self._run(
            "initdb",
            [
                *("-D", str(self.data), "-U", "postgres", "-A", "trust", "-E", "UTF8"),
                *("--locale=C", "--no-sync", "--no-instructions"),
            ],
        )
        for attempt in range(1, _START_ATTEMPTS + 1):
            self.port = _free_port()
            options = " ".join(
                [
                    "-c listen_addresses=127.0.0.1",
                    f"-c port={self.port}",
                    f"-c unix_socket_directories={self.root}",
                    "-c fsync=off",
                    "-c synchronous_commit=off",
                    "-c full_page_writes=off",
                    "-c timezone=UTC",
                ]
            )
            started = self._run(
                "pg_ctl",
                ["-D", str(self.data), "-l", str(self.log), "-o", options, "-w", "start"],
                check=attempt == _START_ATTEMPTS,
            )
            if started:
                break
        with psycopg.connect(
            f"postgresql://postgres@127.0.0.1:{self.port}/postgres", autocommit=True
        ) as admin:
            admin.execute(f"CREATE DATABASE {DATABASE}")

    def stop(self) -> None:
        """Stop the server at once and remove its directory; safe to call twice."""
        if (self.data / "postmaster.pid").exists():
            self._run("pg_ctl", ["-D", str(self.data), "-m", "immediate", "-w", "stop"])
        shutil.rmtree(self.root, ignore_errors=True)

    def _run(self, program: str, arguments: Sequence[str], *, check: bool = True) -> bool:
        command = [*self._as_user, str(self.bindir / program), *arguments]
        began = time.monotonic()
        done = subprocess.run(
            command,
            cwd=self.root,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            check=False,
            env={**os.environ, "LC_ALL": "C"},
        )
        if done.returncode != 0 and check:
            log = self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""
            raise RuntimeError(
                f"{program} failed with exit status {done.returncode} after "
                f"{time.monotonic() - began:.1f} s: {' '.join(command)}\n"
                f"{done.stdout}{done.stderr}{log}"
            )
        return done.returncode == 0
