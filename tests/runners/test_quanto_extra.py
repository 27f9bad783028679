"""hqq is the default KV backend; optimum-quanto is an optional extra, imported only when a config
asks for it, its first-use compile said in the progress line and a stale compile lock never waited on."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
import yaml

from evalrun.runners.accel import validate_accelerations
from tests.conftest import ROOT, tiny_config

# optimum-quanto absent, as after `pip install evalrun` without the extra: a None in sys.modules makes
# importlib.util.find_spec answer None and an import raise ModuleNotFoundError, as for a missing package
_WITHOUT_QUANTO = textwrap.dedent("""
    import sys
    sys.modules["optimum"] = sys.modules["optimum.quanto"] = None
    from evalrun.cli import main
    sys.argv = ["evalrun", *sys.argv[1:]]
    main()
""")

# a build dir's quanto extension, as torch builds it: load it from elsewhere (a copy), then run the CLI
_WITH_BUILD_DIR = textwrap.dedent("""
    import sys
    from optimum.quanto.library.extensions import get_extension
    get_extension("quanto_cpp").build_directory = sys.argv.pop(1)
    from evalrun.cli import main
    sys.argv = ["evalrun", *sys.argv[1:]]
    main()
""")


def _cli(script: str, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "1000", "PYTHONUNBUFFERED": "1"}  # no wrapping: one line is one line
    return subprocess.run([sys.executable, "-c", script, *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout)


def _write(path: Path, data: dict) -> Path:
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def test_an_integer_quant_without_a_backend_is_hqq() -> None:
    settings = validate_accelerations({"kv_cache": {"quant": "int4"}})["kv_cache"]
    assert settings.backend == "hqq"
    assert validate_accelerations({"kv_cache": {"quant": "fp8"}})["kv_cache"].backend == "fp8"


def test_the_demo_candidates_are_on_hqq() -> None:
    from evalrun.evals.config import load_config

    for name in ("int4kv.yaml", "int2kv.yaml"):
        assert load_config(ROOT / "configs" / name).acceleration["kv_cache"].backend == "hqq", name


@pytest.mark.parametrize("acceleration, key", [
    ({"kv_cache": {"quant": "int4", "backend": "quanto", "group_size": 16}}, "acceleration.kv_cache.backend"),
    ({"weights": {"quant": "int8"}}, "acceleration.weights.backend"),
])
def test_asking_for_quanto_without_the_extra_exits_2_naming_file_key_and_install(
        tiny_model_dir: Path, tmp_path: Path, acceleration: dict, key: str) -> None:
    cfg = _write(tmp_path / "wants-quanto.yaml", tiny_config(tiny_model_dir, acceleration=acceleration))
    res = _cli(_WITHOUT_QUANTO, "run", str(cfg), "--out", str(tmp_path / "runs"))
    assert res.returncode == 2, res.stdout + res.stderr
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, res.stderr
    assert "wants-quanto.yaml" in lines[0] and key in lines[0] and "pip install 'evalrun[quanto]'" in lines[0]
    assert not (tmp_path / "runs").exists() or not list((tmp_path / "runs").glob("*/samples.jsonl"))


@pytest.mark.slow  # a CLI run in a subprocess: about 6 s
def test_without_quanto_the_default_kv_backend_runs(tiny_model_dir: Path, tmp_path: Path) -> None:
    """Nothing imports optimum-quanto unless a config asks for it: the default backend runs without it."""
    cfg = _write(tmp_path / "int4-default.yaml", tiny_config(
        tiny_model_dir, acceleration={"kv_cache": {"quant": "int4", "group_size": 16, "residual_length": 8}}))
    res = _cli(_WITHOUT_QUANTO, "run", str(cfg), "--out", str(tmp_path / "runs"))
    assert res.returncode == 0, res.stdout + res.stderr
    manifest = yaml.safe_load(next((tmp_path / "runs").glob("tiny-*/manifest.json")).read_text())
    assert manifest["effects"]["kv_cache"]["backend"] == "hqq" and manifest["effects"]["kv_cache"]["kv_bytes_stored"] > 0


# --------------------------------------------------------------------------- torch's compile lock


def _abandoned_lock(build_dir: Path) -> Path:
    """A lock as an interrupted compile leaves it: torch's FileBaton acquired, its process gone unreleased."""
    build_dir.mkdir(parents=True, exist_ok=True)
    code = ("import os, sys; from torch.utils.file_baton import FileBaton; "
            "assert FileBaton(os.path.join(sys.argv[1], 'lock')).try_acquire(); os._exit(0)")
    subprocess.run([sys.executable, "-c", code, str(build_dir)], check=True, timeout=120)
    lock = build_dir / "lock"
    assert lock.exists()
    return lock


def test_a_stale_lock_is_removed_with_a_message(tmp_path: Path) -> None:
    from torch.utils.file_baton import FileBaton

    from evalrun.runners.accel.quanto_ext import clear_stale_lock

    lock = _abandoned_lock(tmp_path / "build")
    said: list[str] = []
    assert clear_stale_lock(lock.parent, said.append) is True
    assert not lock.exists()
    assert said == [f"removed a stale lock left by an interrupted compile (no process holds it): {lock}"]
    baton = FileBaton(str(lock))
    assert baton.try_acquire()  # torch's next compile goes ahead
    baton.release()


def test_a_live_compile_is_waited_for_and_its_lock_cleared_if_it_dies(tmp_path: Path) -> None:
    from evalrun.runners.accel.quanto_ext import clear_stale_lock

    build = tmp_path / "build"
    build.mkdir()
    holder = subprocess.Popen([sys.executable, "-c",
                               "import os, sys, time; from torch.utils.file_baton import FileBaton; "
                               "assert FileBaton(os.path.join(sys.argv[1], 'lock')).try_acquire(); "
                               "print('held', flush=True); time.sleep(300)", str(build)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        said: list[str] = []
        result: list[bool] = []
        waiter = threading.Thread(target=lambda: result.append(clear_stale_lock(build, said.append, poll=0.1)))
        waiter.start()
        deadline = time.monotonic() + 60
        while not said and time.monotonic() < deadline:
            time.sleep(0.1)
        assert said == [f"waiting for process {holder.pid} compiling in {build} (it holds lock)"]
        assert waiter.is_alive() and (build / "lock").exists()  # a live holder is not robbed of its lock
    finally:
        holder.kill()
        holder.wait()
    waiter.join(timeout=60)
    assert result == [True] and not (build / "lock").exists()
    assert said[-1].startswith("removed a stale lock left by an interrupted compile")


@pytest.mark.slow  # a CLI run in a subprocess: about 6 s
def test_a_quanto_run_goes_past_a_stale_lock(tiny_model_dir: Path, tmp_path: Path) -> None:
    """The reported hang: an interrupted compile's lock in quanto's build dir made every later quanto
    run wait forever. Here the built extension is copied to a temporary build dir holding such a lock."""
    from optimum.quanto.library.extensions import get_extension

    build = tmp_path / "quanto-build"
    real = Path(get_extension("quanto_cpp").build_directory)
    if real.is_dir():
        shutil.copytree(real, build, ignore=shutil.ignore_patterns("lock"))
    lock = _abandoned_lock(build)
    cfg = _write(tmp_path / "quanto.yaml", tiny_config(tiny_model_dir, acceleration={
        "kv_cache": {"quant": "int4", "backend": "quanto", "group_size": 16, "residual_length": 4}}))
    res = _cli(_WITH_BUILD_DIR, str(build), "run", str(cfg), "--out", str(tmp_path / "runs"), timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"removed a stale lock left by an interrupted compile (no process holds it): {lock}" in res.stderr
    assert not lock.exists() and list(build.glob("quanto_cpp*.so"))


# --------------------------------------------------------------------------- the progress line


def test_the_progress_line_names_a_first_use_compile_and_its_estimate(monkeypatch: pytest.MonkeyPatch,
                                                                      tmp_path: Path) -> None:
    from evalrun.cli_app import _PlainProgress
    from evalrun.runners.accel import quanto_ext
    from evalrun.runners.models import listening

    out = io.StringIO()
    progress = _PlainProgress(interval=3600, stream=out)

    class _Unbuilt:  # quanto's Extension before its first build: `lib` compiles
        build_directory = str(tmp_path / "build")
        _lib = None

        @property
        def lib(self) -> object:
            seen.append(out.getvalue())
            self._lib = object()
            return self._lib

    seen: list[str] = []
    monkeypatch.setattr(quanto_ext, "_extension", lambda device: _Unbuilt())
    progress.start("int4kv-quanto", 25, 0)
    with listening(progress.note):
        quanto_ext.ensure_extension("cpu", log=lambda m: None)
    progress.finish()
    during = seen[0].splitlines()[-1]
    assert during.startswith(f"int4kv-quanto: preparing: compiling optimum-quanto's CPU extension into "
                             f"{tmp_path / 'build'} (first use, about 2 min on 2 cores): 0/25 items"), during
    assert "rate unknown" not in during
    assert "preparing" not in out.getvalue().splitlines()[-1]  # said while it lasted, not after


@pytest.mark.model
def test_a_first_gguf_conversion_is_announced(tmp_path: Path) -> None:
    """The default model's first use de-quantizes its GGUF (tens of seconds): said before it starts.
    The process is stopped once it has said so: the conversion itself is tested where it is used."""
    env = {**os.environ, "EVALRUN_CACHE": str(tmp_path / "cache"), "COLUMNS": "200"}
    expected = ("preparing: de-quantizing SmolLM2-135M-Instruct.Q4_1.gguf into a transformers checkpoint under "
                f"{tmp_path / 'cache' / 'models'} (first use, about 20 s on 2 cores)")
    proc = subprocess.Popen([sys.executable, "-m", "evalrun.cli", "check", str(ROOT / "configs" / "baseline.yaml")],
                            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    said = ""
    try:
        assert proc.stderr is not None
        for line in proc.stderr:  # ends when the process exits without saying it
            said += line
            if expected in said:
                break
    finally:
        proc.kill()
        proc.wait(timeout=60)
    assert expected in said, said
