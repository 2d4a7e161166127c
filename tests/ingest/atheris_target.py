"""The coverage-guided fuzz target of every reader at once, for atheris (libFuzzer for Python):

    python atheris_target.py MANIFEST.json [libFuzzer options] CORPUS_DIR

The manifest lists the targets as ``[reader, file name, kind, folder, root]``. An input's first byte picks
the target (its index, modulo their number); the rest is written under the target's file name and read
with :func:`rlvitals.load` and diagnosed (or, for a rollout dump, read with
:func:`rlvitals.rollout.read_rollouts` and analysed). A file of a run folder (``folder`` not empty: a
folder holding the run's other files, as the writer left them) is written into a copy of that folder, and
the copy's ``root`` is read. An ``RlvitalsError`` is a clear refusal; any
other exception is a crash, which libFuzzer saves and reports, naming the reader. One process for
all the readers: instrumenting rlvitals costs seconds, paid once.

For the framed formats (KIND ``tfrecord``, ``wandb``, ``swanlab``) an input is the records' payloads joined by
:data:`SEPARATOR`; the target frames them with valid checksums, so what libFuzzer changes reaches
the decoders behind the CRCs. Only rlvitals' own code is instrumented (all of it but ``ingest.pyrepr``:
see below).
"""

from __future__ import annotations

import json
import shutil
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
#: the headers the framed LevelDB-log inputs start with: W&B's (``:W&B``, 0xBEE1, version 0) and SwanLab's
#: (``:SWL``, 0xE1D6, version 2)
HEADERS = {"wandb": b":W&B\xe1\xbe\x00", "swanlab": b":SWL\xd6\xe1\x02"}
WANDB_HEADER = HEADERS["wandb"]
ROLLOUTS = ("verl-dump", "trl-completions")


def main() -> None:
    targets = json.loads(Path(sys.argv[1]).read_text())
    folder = Path(tempfile.mkdtemp(prefix="atheris-"))
    for reader, _, _, run_folder, _ in targets:
        if run_folder:  # the run's other files, read as they are: copied once
            shutil.copytree(run_folder, folder / reader)

    def one(data: bytes) -> None:
        if not data:
            return
        reader, name, kind, _, root = targets[data[0] % len(targets)]
        data = data[1:]
        if kind == "tfrecord":
            data = frame_tfrecords(data.split(SEPARATOR))
        elif kind in HEADERS:
            data = frame_wandb(HEADERS[kind], data.split(SEPARATOR))
        path = folder / reader / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        try:
            if reader in ROLLOUTS:
                analyze(read_rollouts(path).table)
            else:
                for run in load(folder / reader / root if root else path, None):
                    diagnose(run)
        except RlvitalsError:
            pass
        except Exception as exc:
            raise RuntimeError(f"the {reader} reader crashed on this input") from exc

    atheris.Setup([sys.argv[0], *sys.argv[2:]], one)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
