"""The default embedder's weights under torch against onnxruntime (fp32): speed on the 1 MB
document's units and agreement on LoCoMo's turns (issue 15.3, a feasibility measurement).

    .venv/bin/pip install onnxruntime onnx      # not dependencies of the library
    .venv/bin/python benchmarks/embed_runtime.py --out docs/benchmarks/doc20_embed_runtime.json

all-MiniLM-L6-v2 (the bundled copy, nothing downloaded) is exported once with ``torch.onnx``
into ``--cache`` (the transformer only; mean pooling and the L2 normalisation, which the
sentence-transformers pipeline adds, are done in numpy). Both runtimes get the same texts in the
same batches (length-sorted by characters, ``DEFAULT_EMBED_BATCH_SIZE``, as ``flow.embed``
cuts them), tokenised by the same tokenizer with the model's ``max_seq_length`` truncation.
Rounds alternate which runtime goes first; wall time, CPU time and the load average are
recorded per run. Agreement: max |cos - 1| between the two vectors of each LoCoMo turn.
Also reported: padding of the length-sorted batches by characters against by the model's own
token counts (torch only).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np
import numpy.typing as npt
from _locomo import DEFAULT_DATA_PATH
from _report import write_json
from retain import locomo_turns, prose_document

Vectors = npt.NDArray[np.float32]


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def document_units(megabytes: float) -> list[str]:
    from shared_core.config import DEFAULT_SENTENCE_WINDOW_TOKENS
    from shared_core.retain.prepare import sentence_windows
    from shared_core.tokens import default_token_counter

    text = prose_document(int(megabytes * 1_000_000))
    return sentence_windows(text, DEFAULT_SENTENCE_WINDOW_TOKENS, default_token_counter())


def batches(texts: Sequence[str], size: int, key: Callable[[int], int]) -> list[list[int]]:
    order = sorted(range(len(texts)), key=lambda i: -key(i))
    return [order[s : s + size] for s in range(0, len(order), size)]


def export(model: Any, cache: Path) -> Path:
    """The transformer of ``model`` as ONNX (exported once into ``cache``)."""
    import torch

    path = cache / "all-MiniLM-L6-v2.onnx"
    if path.exists():
        return path
    cache.mkdir(parents=True, exist_ok=True)
    bert = model[0].auto_model.eval()

    class Wrapped(torch.nn.Module):  # keyword arguments: BertModel's positional order varies
        def __init__(self) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            out = self.bert(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
            return out.last_hidden_state

    enc = model.tokenizer(["a short text", "another one here"], padding=True, return_tensors="pt")
    with torch.inference_mode():
        torch.onnx.export(
            Wrapped(),
            (enc["input_ids"], enc["attention_mask"], enc["token_type_ids"]),
            str(path),
            input_names=["input_ids", "attention_mask", "token_type_ids"],
            output_names=["last_hidden_state"],
            dynamic_axes={
                n: {0: "batch", 1: "seq"} for n in ("input_ids", "attention_mask", "token_type_ids")
            }
            | {"last_hidden_state": {0: "batch", 1: "seq"}},
            opset_version=17,
            dynamo=False,
        )
    return path


class OrtEmbedder:
    def __init__(self, model: Any, path: Path, threads: int) -> None:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        self.tokenizer = model.tokenizer
        self.max_len = model.max_seq_length

    def embed(self, texts: Sequence[str]) -> Vectors:
        enc = self.tokenizer(
            list(texts), padding=True, truncation=True, max_length=self.max_len, return_tensors="np"
        )
        feeds = {k: enc[k].astype(np.int64) for k in ("input_ids", "attention_mask", "token_type_ids")}
        (hidden,) = self.session.run(None, feeds)
        mask = feeds["attention_mask"][..., None].astype(np.float32)
        pooled = (hidden * mask).sum(axis=1) / np.clip(mask.sum(axis=1), 1e-9, None)
        norm = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.clip(norm, 1e-12, None)).astype(np.float32)


def run(
    embed: Callable[[list[str]], Vectors], texts: Sequence[str], order: list[list[int]]
) -> tuple[Vectors, dict[str, Any]]:
    load = _load()
    c0, w0 = time.process_time(), time.perf_counter()
    parts = [embed([texts[i] for i in b]) for b in order]
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    flat = [i for b in order for i in b]
    out = np.empty((len(texts), parts[0].shape[1]), dtype=np.float32)
    out[flat] = np.concatenate(parts)
    return out, {
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "units_per_s": round(len(texts) / wall, 1),
        "loadavg": {"start": load, "end": _load()},
    }


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--megabytes", type=float, default=1.0)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--threads", type=int, default=2, help="torch and onnxruntime intra-op threads")
    p.add_argument("--locomo-turns", type=int, default=5882)
    p.add_argument("--data", type=Path, default=DEFAULT_DATA_PATH)
    p.add_argument("--cache", type=Path, default=Path("/tmp/hindsight-onnx"))
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)

    import torch

    from shared_core.config import DEFAULT_EMBED_BATCH_SIZE
    from shared_core.embedding import default_embedder

    torch.set_num_threads(args.threads)
    embedder = default_embedder()
    model = embedder._load()
    ort_embedder = OrtEmbedder(model, export(model, args.cache), args.threads)
    runtimes: dict[str, Callable[[list[str]], Vectors]] = {
        "torch": embedder.embed_documents,
        "onnxruntime": ort_embedder.embed,
    }
    report: dict[str, Any] = {"threads": args.threads, "batch": DEFAULT_EMBED_BATCH_SIZE, "rounds": []}

    units = document_units(args.megabytes)
    tokens = [
        len(model.tokenizer(u, truncation=True, max_length=model.max_seq_length)["input_ids"]) for u in units
    ]
    by_chars = batches(units, DEFAULT_EMBED_BATCH_SIZE, lambda i: len(units[i]))
    by_tokens = batches(units, DEFAULT_EMBED_BATCH_SIZE, lambda i: tokens[i])

    def padded(order: list[list[int]]) -> int:
        return sum(len(b) * max(tokens[i] for i in b) for b in order)

    report["document"] = {
        "units": len(units),
        "word_pieces": sum(tokens),
        "padded_by_chars": padded(by_chars),
        "padded_by_tokens": padded(by_tokens),
    }
    print(report["document"], flush=True)
    for r in range(args.rounds):
        names = ["torch", "onnxruntime"] if r % 2 == 0 else ["onnxruntime", "torch"]
        row: dict[str, Any] = {}
        for name in names:
            _, row[name] = run(runtimes[name], units, by_chars)
            print(f"round {r + 1} {name}: {row[name]}", flush=True)
        report["rounds"].append(row)

    turns = [t for t, _ in locomo_turns(args.data, args.locomo_turns)]
    turn_order = batches(turns, DEFAULT_EMBED_BATCH_SIZE, lambda i: len(turns[i]))
    a, ta = run(runtimes["torch"], turns, turn_order)
    b, tb = run(runtimes["onnxruntime"], turns, turn_order)
    cos = np.sum(a * b, axis=1)
    report["locomo"] = {
        "turns": len(turns),
        "torch": ta,
        "onnxruntime": tb,
        "max_abs_cos_minus_1": float(np.max(np.abs(cos - 1.0))),
        "min_cos": float(np.min(cos)),
    }
    print(report["locomo"], flush=True)
    if args.out:
        write_json(args.out, report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
