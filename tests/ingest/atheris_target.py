"""The coverage-guided fuzz target of one reader, for atheris (libFuzzer for Python):

    python atheris_target.py READER FILE_NAME KIND [libFuzzer options] CORPUS_DIR

Each input is written as ``FILE_NAME`` and read with :func:`rlvitals.load` (or, for a rollout dump,
:func:`rlvitals.rollout.read_rollouts` and :func:`rlvitals.rollout.analyze`). An ``RlvitalsError``
is a clear refusal; any other exception is a crash, which libFuzzer saves and reports.

For the framed formats (KIND ``tfrecord``, ``wandb``) an input is the records' payloads joined by
:data:`SEPARATOR`; the target frames them with valid checksums, so what libFuzzer changes reaches
the decoders behind the CRCs. Only rlvitals' own code is instrumented (all of it but ``ingest.pyrepr``:
see below).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).parent))

# pyrepr is left uninstrumented: atheris 2.3's instrumented copy of its string scanner raises a TypeError
# ("'str' object does not support the context manager protocol") that the plain module never does; the
# mutation fuzzer (test_fuzz.py) covers it, and every reader that calls it is instrumented
with atheris.instrument_imports(include=["rlvitals"], exclude=["rlvitals.ingest.pyrepr"]):
    from rlvitals import diagnose, load
    from rlvitals.errors import RlvitalsError
    from rlvitals.rollout import analyze, read_rollouts

from fuzzing import frame_tfrecords, frame_wandb  # noqa: E402

SEPARATOR = b"\n\x00\xffRECORD\xff\x00\n"
#: the W&B header (``:W&B``, 0xBEE1, version 0) the framed W&B inputs start with
WANDB_HEADER = b":W&B\xe1\xbe\x00"
ROLLOUTS = ("verl-dump", "trl-completions")


def main() -> None:
    reader, name, kind = sys.argv[1:4]
    folder = Path(tempfile.mkdtemp(prefix=f"atheris-{reader}-"))
    path = folder / name

    def one(data: bytes) -> None:
        if kind == "tfrecord":
            data = frame_tfrecords(data.split(SEPARATOR))
        elif kind == "wandb":
            data = frame_wandb(WANDB_HEADER, data.split(SEPARATOR))
        path.write_bytes(data)
        try:
            if reader in ROLLOUTS:
                analyze(read_rollouts(path).table)
            else:
                for run in load(path, None):
                    diagnose(run)
        except RlvitalsError:
            pass

    atheris.Setup([sys.argv[0], *sys.argv[4:]], one)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
