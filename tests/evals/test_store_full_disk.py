"""A disk that fills up while a run is stored: the error names the file and says that the same
command resumes, the manifest is left `failed` (never `running`) even though it cannot be
replaced, no torn line is left, and the same command then does resume.

The full disk is injected where file systems with delayed allocation report it (ext4, XFS,
NFS): at fsync, for a file that grew or a new file, while rewriting an existing file in its
own blocks still works, as on a real full disk."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest

from evalrun.evals.run import RunFailed, execute_run
from tests.evals.fake_runs import GoldRunner, gold_run

pytestmark = pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="names an fd's file through /proc")


class FullDisk:
    """os.fsync that fails with ENOSPC, once `full`, for a file that needs new blocks: samples,
    items and the temporary file a manifest is replaced with. Rewriting in place still works."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.full = False
        real = os.fsync

        def fsync(fd: int) -> None:
            name = os.readlink(f"/proc/self/fd/{fd}")
            if self.full and (name.endswith((".jsonl", ".tmp"))):
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            real(fd)

        monkeypatch.setattr(os, "fsync", fsync)


def test_enospc_names_the_file_leaves_the_manifest_failed_and_the_same_command_resumes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    disk = FullDisk(monkeypatch)
    prepared = gold_run(tmp_path, GoldRunner(after_each=lambda n: setattr(disk, "full", disk.full or n == 3)))
    samples = prepared.dir / "samples.jsonl"
    with pytest.raises(RunFailed) as exc:
        execute_run(prepared, None, lambda _m: None, fresh=False)
    message = str(exc.value)
    assert message.startswith(f"gold: {samples}: cannot write: No space left on device; 3 of 6 items are stored"), \
        message
    assert "run the same command again, it resumes" in message and "\n" not in message
    manifest = json.loads((prepared.dir / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["status"] == "failed" and manifest["sessions"][-1]["status"] == "failed"
    assert "No space left on device" in manifest["failure"]
    assert samples.read_bytes().count(b"\n") == 3 and samples.read_bytes().endswith(b"\n"), "no torn line left"
    assert sorted(p.name for p in prepared.dir.iterdir()) == ["items.jsonl", "lock", "manifest.json", "samples.jsonl"]

    disk.full = False  # space freed: the same command resumes with the three items still missing
    resumed = execute_run(gold_run(tmp_path), None, lambda _m: None, fresh=False)
    assert resumed.generated == 3 and len(resumed.generations) == 6
    assert json.loads((prepared.dir / "manifest.json").read_text(encoding="utf-8"))["status"] == "complete"


def test_enospc_before_generating_names_the_items_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    FullDisk(monkeypatch).full = True
    prepared = gold_run(tmp_path)
    with pytest.raises(RunFailed) as exc:
        execute_run(prepared, None, lambda _m: None, fresh=False)
    assert str(exc.value).startswith(f"gold: {prepared.dir / 'items.jsonl'}: cannot write: No space left on device")
    assert prepared.runner.emitted == 0
    assert (prepared.dir / "items.jsonl").read_bytes() == b"", "the failed append is cut back off"


def test_a_manifest_that_cannot_be_rewritten_in_place_says_so(tmp_path: Path) -> None:
    """In-place rewriting never grows the file (that would need new blocks): refused, file untouched."""
    from evalrun.evals.files import store_files

    path = tmp_path / "manifest.json"
    path.write_bytes(b"{}")
    with pytest.raises(store_files.StoreWriteFailed) as exc:
        store_files.overwrite_in_place(path, b'{"status":"failed"}')
    assert str(exc.value).startswith(f"{path}: cannot write: No space left on device")
    assert path.read_bytes() == b"{}"
