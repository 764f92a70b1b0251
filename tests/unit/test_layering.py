"""Adapters stay thin and apart: neither imports the other, and no module cycles back."""

from __future__ import annotations

import subprocess
import sys


def _modules_after(statement: str) -> set[str]:
    code = f"import sys; {statement}; print('\\n'.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return set(out.split())


def test_llamaindex_adapter_does_not_import_the_langchain_one() -> None:
    loaded = _modules_after("import hindsight_llamaindex.retriever")
    assert not any(m.startswith("hindsight_langchain") for m in loaded)


def test_the_importer_does_not_import_the_retriever() -> None:
    loaded = _modules_after("import hindsight_langchain._import")
    assert "hindsight_langchain.retriever" not in loaded


def test_the_core_imports_no_adapter() -> None:
    loaded = _modules_after("import shared_core, shared_core.integrations")
    assert not any(m.startswith(("hindsight_langchain", "hindsight_llamaindex")) for m in loaded)
