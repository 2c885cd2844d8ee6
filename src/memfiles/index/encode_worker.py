"""The bulk encoder in a child process, started before it is needed.

A cold backfill imports torch (~2 s here) and chromadb (~2 s), each on one core. Started first, the
child imports torch and loads the model while the parent imports chromadb and reads the files and
the store; the parent then hands it the texts. On 2 cores that hides the shorter of the two imports.

The wire, over the child's stdin and stdout, one request at a time:
- request: one line of JSON, {"texts": [...], "batch_size": 16}; a batch_size of null leaves it to
  the child: index/embedder.py's EMBED_BATCH in float32, bert_torch.BFLOAT16_BATCH in bfloat16
- replies: lines {"done": n} as batches finish; then {"rows": r, "dimension": d, "precision": p}
  followed by r x d little-endian float32 values (p: the precision they were computed in, "float32" or
  "bfloat16"); or {"error": "...", "model": true|false} instead.
The child stops at the end of its input.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from memfiles.errors import IndexUnavailable

if TYPE_CHECKING:
    import numpy as np


_BOOT = "import sys; sys.path.append(sys.argv.pop(1)); from memfiles.index.encode_worker import main; main()"


class EncoderFailed(IndexUnavailable):
    """The encoder process failed as a process (ended, or answered nonsense): nothing to say about the
    store, which a rebuild must not take for damaged."""


class EncoderProcess:
    """The torch BERT recipe (index/bert_torch.py) run by a child process; an Embedder."""

    def __init__(self, name: str, path: Path, dimension: int, precision: str = "float32") -> None:
        self.name = name
        self.path = path
        self._dimension = dimension
        self._sent = 0
        # What the child computed the last vectors in ("float32" or "bfloat16"); None before any.
        self.precision: str | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 (lives as long as the child; closed by close())
        # The child imports this memfiles, wherever it came from (an install, or a checkout put on
        # sys.path by hand): its folder is appended to the child's path, so it shadows nothing; -P keeps
        # the current folder off it (a json.py there would be imported instead of the real one).
        package_root = str(Path(__file__).resolve().parents[2])
        try:
            self._process = subprocess.Popen(
                [sys.executable, "-P", "-c", _BOOT, package_root, name, str(path), precision],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._stderr,
            )
        except OSError:
            self._stderr.close()
            raise

    @property
    def alive(self) -> bool:
        """True while the child runs and can take a request."""
        return self._process is not None and self._process.poll() is None

    @property
    def dimension(self) -> int:
        return self._dimension

    def encode(
        self, texts: list[str], batch_size: int | None = None, progress: Callable[[int], object] | None = None
    ) -> np.ndarray:
        """The vectors of `texts` (batch_size None: the child's choice for its precision, as `submit`)."""
        import numpy as np

        if not texts:
            return np.zeros((0, self._dimension), dtype=np.float32)
        self.submit(texts, batch_size)
        return self.collect(progress)

    def submit(self, texts: list[str], batch_size: int | None = None) -> None:
        """Hand the child `texts` to encode, in batches of `batch_size` (None: the child's choice for its
        precision); `collect` waits for the vectors (meanwhile, this process is free)."""
        process = self._process
        if process is None or process.stdin is None:
            raise EncoderFailed("the encoder process was closed")
        request = json.dumps({"texts": texts, "batch_size": batch_size}, ensure_ascii=False) + "\n"
        self._sent = len(texts)
        try:
            process.stdin.write(request.encode("utf-8"))
            process.stdin.flush()
        except OSError:
            raise self._ended() from None

    def collect(self, progress: Callable[[int], object] | None = None) -> np.ndarray:
        """The vectors of the texts last submitted, in their order; `progress` hears of every batch."""
        import numpy as np

        process = self._process
        if process is None or process.stdout is None:
            raise EncoderFailed("the encoder process was closed")
        while True:
            line = process.stdout.readline()
            if not line:
                raise self._ended()
            try:
                reply = json.loads(line)
                if "done" in reply:
                    if progress is not None:
                        progress(int(reply["done"]))
                    continue
                if "error" in reply:
                    failed = str(reply["error"])
                    break
                rows, dimension = int(reply["rows"]), int(reply["dimension"])
                precision = str(reply["precision"])
            except (ValueError, TypeError, KeyError):
                raise self._ended(f"said {line[:80]!r}") from None
            if rows != self._sent or dimension != self._dimension:
                raise self._ended(f"sent {rows} x {dimension} vectors for {self._sent} texts")
            data = process.stdout.read(rows * dimension * 4)
            if len(data) != rows * dimension * 4:
                raise self._ended()
            self.precision = precision
            return np.frombuffer(data, dtype="<f4").reshape(rows, dimension).copy()
        from memfiles.index.embedder import ModelUnavailable

        raise (ModelUnavailable if reply.get("model") else EncoderFailed)(failed)

    def _ended(self, what: str | None = None) -> EncoderFailed:
        """The error for a child that stopped answering (or `what` it said instead), with the last of
        what it printed to stderr; the child is stopped."""
        process = self._process
        if process is not None and what is not None and process.poll() is None:
            process.kill()
        code = process.wait() if process is not None else None
        self._stderr.seek(0)
        said = self._stderr.read().decode("utf-8", "replace").strip().splitlines()
        last = f": {said[-1][:300]}" if said else ""
        return EncoderFailed(f"the encoder process ended unexpectedly ({what or f'exit {code}'}){last}")

    def close(self) -> None:
        """Stop the child (at once if it is still importing or encoding) and release its pipes."""
        process, self._process = self._process, None
        if process is not None:
            if process.poll() is None:
                process.kill()
            process.wait()
            for pipe in (process.stdin, process.stdout):
                if pipe is not None:
                    with contextlib.suppress(OSError):  # a request still buffered for a child that is gone
                        pipe.close()
        self._stderr.close()

    def __del__(self) -> None:
        if getattr(self, "_process", None) is not None:
            self.close()


def _serve(name: str, path: Path, precision: str, requests: IO[bytes], replies: IO[bytes]) -> None:
    from memfiles.index.bert_torch import BFLOAT16_BATCH, TorchBertEmbedder
    from memfiles.index.embedder import EMBED_BATCH, ModelUnavailable

    def say(message: dict[str, Any]) -> None:
        replies.write((json.dumps(message) + "\n").encode("utf-8"))
        replies.flush()

    embedder = TorchBertEmbedder(name, path, precision)
    try:  # load now, while the parent is still busy: that is the point of the child
        embedder.model  # noqa: B018
        embedder.tokenizer  # noqa: B018
        embedder.bfloat16  # noqa: B018 (asks the CPU once, before the first request)
        failed: Exception | None = None
    except (ModelUnavailable, OSError, ValueError) as error:
        failed = error
    for line in requests:
        request = json.loads(line)
        if failed is not None:
            say({"error": str(failed), "model": isinstance(failed, ModelUnavailable)})
            continue
        try:
            batch = request["batch_size"] or (BFLOAT16_BATCH if embedder.bfloat16 else EMBED_BATCH)
            vectors = embedder.encode(request["texts"], batch_size=int(batch), progress=lambda n: say({"done": n}))
        except (ModelUnavailable, OSError, ValueError) as error:
            say({"error": str(error), "model": isinstance(error, ModelUnavailable)})
            continue
        computed = "bfloat16" if embedder.bfloat16 else "float32"
        say({"rows": int(vectors.shape[0]), "dimension": int(vectors.shape[1]), "precision": computed})
        replies.write(vectors.astype("<f4").tobytes())
        replies.flush()


def main() -> None:
    name, path, precision = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
    # The replies get stdout's pipe to themselves: whatever a library prints goes to stderr instead.
    sys.stdout.flush()
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    try:
        _serve(name, path, precision, sys.stdin.buffer, replies)
    except (KeyboardInterrupt, BrokenPipeError):  # the parent was interrupted or went away
        sys.exit(1)


if __name__ == "__main__":
    main()
