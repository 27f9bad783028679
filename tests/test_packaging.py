"""What `pip install .` puts in site-packages: the one import name `evalrun` and
its metadata, nothing generic (`tasks`, `evals`, `reports` and `runners` are
other distributions on PyPI). Read from the wheel pip would install."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import ROOT


@pytest.mark.slow
def test_wheel_installs_only_evalrun(tmp_path: Path) -> None:
    src = tmp_path / "src"
    ignore = shutil.ignore_patterns(".venv", ".git", "runs", "reports-out", "build", "*.egg-info", "__pycache__",
                                    "test-artifacts", ".hypothesis", ".mypy_cache", "tests", "benchmarks",
                                    ".engines", "site")  # .engines: the engines' virtualenvs, gigabytes
    shutil.copytree(ROOT, src, ignore=ignore)
    res = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
                          str(tmp_path / "dist"), str(src)], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    (wheel,) = (tmp_path / "dist").glob("evalrun-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    top = {n.split("/")[0] for n in names}
    assert top == {"evalrun", next(t for t in top if t.endswith(".dist-info"))}, sorted(top)
    for stage in ("contract", "values", "values/types", "tasks", "runners", "runners/accel", "evals", "reports"):
        assert f"evalrun/{stage}/__init__.py" in names, stage
    assert "evalrun/reports/templates/report.html.j2" in names, "the HTML templates ship with the package"
    assert "evalrun/values/types/amount.py" in names, "the field types ship with the package (the registry finds them)"
    assert "evalrun/py.typed" in names, "the package says it is typed (PEP 561)"
    # every package folder under src/ ships (setuptools finds them; none is listed by hand)
    on_disk = {p.relative_to(ROOT / "src").as_posix() for p in (ROOT / "src" / "evalrun").rglob("__init__.py")}
    assert on_disk <= set(names), sorted(on_disk - set(names))
    dist_info = next(t for t in top if t.endswith(".dist-info"))
    entry_points = zipfile.ZipFile(wheel).read(f"{dist_info}/entry_points.txt").decode()
    assert "evalrun = evalrun.cli:main" in entry_points
