"""Execute every notebook in ``notebooks/`` top to bottom; any cell error fails the test.

The notebooks run in a kernel started with this interpreter (a kernelspec written to a temporary
directory, so a ``python3`` kernelspec elsewhere on the machine cannot pick another Python). They
use the embedded Postgres server's default data directory and banks of their own, as a user
would. The executed copies stay in memory: the committed notebooks (with their outputs) are not
rewritten by the tests.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import nbclient
import nbformat
import pytest
from ipykernel import kernelspec

NOTEBOOKS_DIR = Path(__file__).resolve().parents[2] / "notebooks"
NOTEBOOKS = sorted(NOTEBOOKS_DIR.glob("*.ipynb"))
KERNEL_NAME = "hindsight-notebook-tests"
CELL_TIMEOUT_S = 600


def test_the_four_notebooks_exist() -> None:
    assert [p.name[:2] for p in NOTEBOOKS] == ["01", "02", "03", "04"]


@pytest.fixture(scope="module")
def kernel_name(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A kernelspec whose argv is ``sys.executable -m ipykernel_launcher``, on JUPYTER_PATH."""
    prefix = tmp_path_factory.mktemp("jupyter-prefix")
    kernelspec.install(prefix=str(prefix), kernel_name=KERNEL_NAME)
    with pytest.MonkeyPatch.context() as mp:
        jupyter_path = os.environ.get("JUPYTER_PATH")
        mp.setenv(
            "JUPYTER_PATH", os.pathsep.join(p for p in (str(prefix / "share" / "jupyter"), jupyter_path) if p)
        )
        mp.setenv("HF_HUB_OFFLINE", "1")
        mp.setenv("TRANSFORMERS_OFFLINE", "1")
        from jupyter_client.kernelspec import KernelSpecManager

        argv = KernelSpecManager().get_kernel_spec(KERNEL_NAME).argv
        assert os.path.realpath(argv[0]) == os.path.realpath(sys.executable), argv
        yield KERNEL_NAME


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_is_committed_executed(path: Path) -> None:
    """The committed file holds outputs: every code cell ran, in order, without an error."""
    nb = nbformat.read(path, as_version=4)
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    assert code, f"{path.name} has no code cells"
    counts = [cell.get("execution_count") for cell in code]
    assert counts == list(range(1, len(code) + 1)), (
        f"{path.name}: execute it top to bottom and save it with its outputs (execution counts {counts})"
    )
    errors = [out for cell in code for out in cell.get("outputs", []) if out.get("output_type") == "error"]
    assert not errors, f"{path.name} was saved with an error output: {errors[0].get('ename')}"
    assert nb.cells[0].cell_type == "markdown", f"{path.name} should open with a markdown cell"


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs(path: Path, kernel_name: str) -> None:
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        nb,
        kernel_name=kernel_name,
        timeout=CELL_TIMEOUT_S,
        allow_errors=False,
        resources={"metadata": {"path": str(NOTEBOOKS_DIR)}},
    )
    started = time.perf_counter()
    client.execute()  # raises CellExecutionError (with the traceback) on the first failing cell
    print(f"{path.name}: {time.perf_counter() - started:.1f}s")
