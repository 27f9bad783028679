"""The run store: one directory per run, generations appended and flushed per item, so a killed run loses at
most the batch in flight (docs/run-store.md, 'Integrity'). Reading never deletes a generation; one writer per
run holds a flock on `<run>/lock`, which the kernel drops when its holder dies, so a lock is never stale.
Every file is opened through evals.files.store_files: never through a symbolic link.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from evalrun.evals.files import ConfigError, StoreLink, StoreWriteFailed, jsonl, store_files
from evalrun.contract.types import Generation, Item, Reask, Retiming
from evalrun.contract.manifest import RunManifest

SAMPLES = "samples.jsonl"
MANIFEST = "manifest.json"
ITEMS = "items.jsonl"
SCORES = "scores.jsonl"
CONFIRMATIONS = "confirmations.jsonl"  # re-asks of flipped items (the gate's `confirm`), apart from the samples
INTERLEAVED = "interleaved.jsonl"  # batches of the baseline and this candidate re-timed side by side
LOCK_NAME = "lock"

if sys.platform != "win32":
    import fcntl
else:  # not POSIX: no OS lock; one writer per run is then up to the user
    fcntl = None


def run_key(payload: dict[str, Any]) -> str:
    """Hash of everything that can change an output."""
    canonical = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def items_sha256(items: list[Item]) -> str:
    """Hash of the items' content, independent of their order and of how the lines were formatted."""
    return lines_sha256(jsonl.canonical(it) for it in items)


def lines_sha256(canonical: Iterable[str]) -> str:
    """The hash of canonical lines, independent of their order (what a run's manifest records)."""
    digest = hashlib.sha256()
    for text in sorted(canonical):
        digest.update(text.encode("ascii") + b"\n")
    return digest.hexdigest()


# Defaults of the Item as stored before context/question/answer_format were fields (and
# of its Field and GenerationOverride), which that form's hash was computed with.
_V1_ITEM_DEFAULTS: dict[str, Any] = {"system": None, "meta": {}, "generation": None}


def _v1_canonical(raw: bytes) -> str | None:
    """The canonical text that items_sha256 hashed for an items.jsonl line written before
    items had context/question/answer_format: the line's own JSON, defaults filled. Read
    from the bytes, not from the upgraded Item (whose form is the current one)."""
    try:
        data = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("fields"), list):
        return None
    data = {**_V1_ITEM_DEFAULTS, **data}
    data["fields"] = [{"options": {}, **f} if isinstance(f, dict) else f for f in data["fields"]]
    if isinstance(data["generation"], dict):
        data["generation"] = {"ignore_eos": False, **data["generation"]}
    return json.dumps(data, ensure_ascii=True, sort_keys=True, separators=(",", ":"))


def v1_items_sha256(lines: Iterable[bytes]) -> str | None:
    """items_sha256 as a run written before items had context/question recorded it, over
    the stored lines (None when a line is not of that form). Lets such a run be verified
    without rewriting its files: its items upgrade on reading, its recorded hash does not."""
    texts = [_v1_canonical(raw) for raw in lines]
    return None if any(t is None for t in texts) else lines_sha256(t for t in texts if t is not None)


class RunStore:
    """Reads and appends one run directory. Every problem found while reading (a skipped line, a torn
    tail, unknown keys) is passed to `log` once and kept in `warnings`, so callers can show it."""

    def __init__(self, run_dir: str | Path, log: Callable[[str], None] | None = None):
        self.dir = Path(run_dir)
        self.samples_path = self.dir / SAMPLES
        self.manifest_path = self.dir / MANIFEST
        self.items_path = self.dir / ITEMS
        self.confirmations_path = self.dir / CONFIRMATIONS
        self.interleaved_path = self.dir / INTERLEAVED
        self.log = log
        self.warnings: list[str] = []
        self._item_lines: dict[str, bytes] = {}  # the stored line of each item read, for the v1 hash

    def warn(self, message: str) -> None:
        if message in self.warnings:
            return
        self.warnings.append(message)
        if self.log is not None:
            self.log(message)

    def _tail(self, path: Path, found: jsonl.Scan, repair: bool) -> None:
        """A torn last line: moved aside by the writer, only reported by readers."""
        tail = found.tail
        if tail is None:
            return
        side = jsonl.move_tail_aside(path, found) if repair else None
        if side is not None:
            self.warn(f"warning: {path}:{tail.number}: torn last line ({len(tail.raw)} bytes, no newline) "
                      f"moved to {side.name}")
        else:
            self.warn(f"warning: {path}:{tail.number}: incomplete last line ignored ({len(tail.raw)} bytes, "
                      "no newline: torn by a killed writer, or being written now)")

    def read_items(self, repair: bool = False) -> list[Item]:
        """The exact items the run was asked (prompts and gold), so scoring needs no model.
        The first line for an id wins; a later, different one is reported."""
        records, found = jsonl.read(self.items_path, Item, self.warn)
        self._tail(self.items_path, found, repair)
        out: dict[str, Item] = {}
        self._item_lines = {}
        for line, item in records:
            first = out.setdefault(item.id, item)
            if first is item:
                self._item_lines[item.id] = line.raw
            elif jsonl.canonical(first) != jsonl.canonical(item):
                self.warn(f"warning: {self.items_path}:{line.number}: a second, different item {item.id!r} "
                          "ignored (the first line for an id wins)")
        return list(out.values())

    def write_items(self, items: list[Item]) -> str:
        """Record items not yet recorded (a --limit run followed by a full one adds the rest);
        returns the hash of every stored item and keeps the manifest's `items_sha256` current."""
        stored = self.read_items(repair=True)
        known = {it.id for it in stored}
        new = list({it.id: it for it in items if it.id not in known}.values())
        if new:
            jsonl.append(self.items_path, list(new), sync=True)
        digest = items_sha256(stored + new)  # what reading the file back gives (JSON round-trips exactly)
        if new and self.exists():
            try:
                manifest = self.read_manifest()
            except StoreLink:
                raise
            except ConfigError:
                return digest  # the caller rebuilds an unreadable manifest
            self.write_manifest(manifest | {"items_sha256": digest})
        return digest

    def exists(self) -> bool:
        """A link there counts: reading it is refused, naming it."""
        return store_files.exists(self.manifest_path)

    def read_samples(self, repair: bool = False) -> dict[str, Generation]:
        """Generations by item id; the first line for an id wins. Unreadable lines are skipped
        (and reported) wherever they are; with `repair` (the writer, under the lock) a torn
        trailing line is moved to a side file so appends start on a clean line."""
        records, found = jsonl.read(self.samples_path, Generation, self.warn)
        self._tail(self.samples_path, found, repair)
        out: dict[str, Generation] = {}
        for _, gen in records:
            out.setdefault(gen.item_id, gen)
        return out

    def append(self, gen: Generation) -> None:
        jsonl.append(self.samples_path, [gen], sync=True)

    def read_confirmations(self) -> dict[str, list[Reask]]:
        """Re-asks per item, by attempt; an unreadable line is skipped with a warning, never removed."""
        records, _ = jsonl.read(self.confirmations_path, Reask, self.warn)
        out: dict[str, list[Reask]] = {}
        for _, r in records:
            out.setdefault(r.generation.item_id, []).append(r)
        return {k: sorted(v, key=lambda r: r.attempt) for k, v in out.items()}

    def append_confirmation(self, reask: Reask) -> None:
        jsonl.append(self.confirmations_path, [reask], sync=True)

    def read_interleaved(self, baseline_key: str) -> list[Retiming]:
        """Re-timings against that baseline; an unreadable line is skipped with a warning, never removed."""
        records, _ = jsonl.read(self.interleaved_path, Retiming, self.warn)
        return [r for _, r in records if r.baseline_key == baseline_key]

    def append_interleaved(self, records: list[Retiming]) -> None:
        jsonl.append(self.interleaved_path, records, sync=True)

    def read_manifest(self) -> dict[str, Any]:
        """The manifest, {} when there is none; an unreadable one is a ConfigError naming the file."""
        try:
            raw = store_files.read_bytes(self.manifest_path)
            if raw is None:
                return {}
            text = raw.decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read the run's manifest: {exc}", file=self.manifest_path) from None
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise ConfigError(f"the run's manifest is not valid JSON ({exc})", file=self.manifest_path) from None
        if not isinstance(data, dict):
            raise ConfigError("the run's manifest is not a JSON object", file=self.manifest_path)
        return data

    def write_manifest(self, manifest: "RunManifest | dict[str, Any]") -> None:
        """Replace manifest.json atomically; a `RunManifest` is written as read plus what was set."""
        if isinstance(manifest, RunManifest):
            manifest = manifest.to_dict()
        store_files.replace(self.manifest_path, json.dumps(manifest, indent=2, sort_keys=True, default=str).encode())

    def write_failed_manifest(self, manifest: RunManifest) -> bool:
        """Record a session that ended in failure, even on a full disk: when replacing the manifest
        cannot get new blocks, the same record is written compactly into the old file's own blocks
        (the indented form is always the longer), so it never stays `running`. False when neither works."""
        try:
            self.write_manifest(manifest)
            return True
        except StoreWriteFailed:
            pass
        compact = json.dumps(manifest.to_dict(), sort_keys=True, separators=(",", ":"), default=str).encode()
        try:
            store_files.overwrite_in_place(self.manifest_path, compact)
        except StoreWriteFailed:
            return False
        return True

    def vouched_item_rows(self, manifest: dict[str, Any]) -> list[dict[str, Any]] | None:
        """The stored items as the JSON objects on their lines, without building Items (most of the cost
        of reading 10,000 of them), when `manifest`'s items_sha256 vouches for them (an Item's canonical
        form is the object on its line). None for anything short of that: `read_checked` then says why."""
        recorded = manifest.get("items_sha256")
        raw = store_files.read_bytes(self.items_path) if recorded else None
        if raw is None:
            return None
        found = jsonl.scan(raw)
        if found.tail is not None:
            return None
        rows: dict[str, dict[str, Any]] = {}
        for line in found.lines:
            try:
                data = json.loads(line.raw)
            except ValueError:
                return None
            if not isinstance(data, dict) or not isinstance(data.get("id"), str) or data["id"] in rows:
                return None
            rows[data["id"]] = data
        digest = lines_sha256(jsonl.canonical(d) for d in rows.values())
        return list(rows.values()) if digest == recorded else None

    def read_checked(self, trust_edited_items: bool = False) -> tuple[dict[str, Any], list[Item]]:
        """The manifest and items of a stored run, refusing (ConfigError naming the file) a manifest
        that cannot be read or items.jsonl that no longer matches the recorded hash, unless
        `trust_edited_items`; then, and for older runs without a hash, it warns and goes on."""
        flag = "pass --trust-edited-items to use it anyway"
        try:
            manifest = self.read_manifest()
        except StoreLink:
            raise  # never trusted: reading it would read outside the store
        except ConfigError as exc:
            if not trust_edited_items:
                raise ConfigError(f"{exc}; what the run was cannot be verified; {flag}") from None
            self.warn(f"warning: {exc}; going on without it (--trust-edited-items)")
            manifest = {}
        items = self.read_items()
        recorded = manifest.get("items_sha256")
        if recorded is None:
            if manifest:
                self.warn(f"warning: {self.manifest_path}: no items_sha256 recorded (a run from an older "
                          "evalrun): the integrity of items.jsonl cannot be verified")
        elif recorded != items_sha256(items) and recorded != v1_items_sha256(self._item_lines.values()):
            message = ("items.jsonl was changed after the run: its items no longer match items_sha256 "
                       f"in {MANIFEST} (edited gold, or an unreadable line)")
            if not trust_edited_items:
                raise ConfigError(f"{message}; refusing to score it; {flag}", file=self.items_path)
            self.warn(f"warning: {self.items_path}: {message}; scoring it anyway (--trust-edited-items)")
        return manifest, items


def _holder(fd: int) -> str:
    try:
        text = os.pread(fd, 64, 0).decode("ascii", "replace").strip()
    except OSError:
        return "unknown"
    return text or "unknown"


def _same_file(fd: int, path: Path) -> bool:
    """False when the run directory was moved or removed while we waited (then lock afresh)."""
    try:
        st, here = os.lstat(path), os.fstat(fd)
    except FileNotFoundError:
        return False
    return (st.st_dev, st.st_ino) == (here.st_dev, here.st_ino)


@contextmanager
def run_lock(run_dir: Path, log: Callable[[str], None] = print, label: str = "") -> Iterator[bool]:
    """Hold the run's writer lock; yields whether this process had to wait for another."""
    store_files.make_dir(run_dir)
    path = run_dir / LOCK_NAME
    if fcntl is None:
        yield False
        return
    waited = False
    while True:
        fd = store_files.open_fd(path, os.O_RDWR | os.O_CREAT)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                prefix = f"{label}: " if label else ""
                log(f"{prefix}waiting for another process generating this run (pid {_holder(fd)}): {run_dir}")
                waited = True
                fcntl.flock(fd, fcntl.LOCK_EX)
        except BaseException:  # interrupted while waiting
            os.close(fd)
            raise
        if _same_file(fd, path):
            break
        os.close(fd)
        store_files.make_dir(run_dir)
    try:
        with suppress(OSError):  # only for messages: a full disk is said by the store's next write, naming its file
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        yield waited
    finally:
        os.close(fd)  # closing the only descriptor releases the flock
