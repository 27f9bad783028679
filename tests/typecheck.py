"""Run mypy over the package by its import names: `python tests/typecheck.py [mypy args]`.

The stages live in top-level folders that setuptools installs as `evalrun.*`
(pyproject `package-dir`), a mapping mypy cannot follow, and the editable
install is an import hook mypy does not run. So the packages pyproject lists
are laid out as links under .mypy_cache/src/evalrun (`mypy_path` in
`[tool.mypy]`), the tree the wheel would install, and mypy checks that;
error paths are given back as the repository's own."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TREE = ROOT / ".mypy_cache" / "src"


def package_dirs(root: Path = ROOT) -> dict[str, Path]:
    """Each package the wheel installs -> its folder in the repository (setuptools' package-dir rules)."""
    tool = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    mapping: dict[str, str] = tool.get("package-dir", {})
    out = {}
    for package in tool["packages"]:
        parts = package.split(".")
        for cut in range(len(parts), 0, -1):  # the longest mapped prefix wins
            prefix = ".".join(parts[:cut])
            if prefix in mapping:
                out[package] = root / mapping[prefix] / Path(*parts[cut:])
                break
        else:
            out[package] = root / Path(*parts)
    return out


def build_tree(root: Path = ROOT, tree: Path = TREE) -> dict[Path, Path]:
    """Lay the installed layout out as symlinks to the sources; returns link folder -> source folder."""
    shutil.rmtree(tree, ignore_errors=True)
    folders: dict[Path, Path] = {}
    for package, src in package_dirs(root).items():
        dest = tree / Path(*package.split("."))
        dest.mkdir(parents=True, exist_ok=True)
        for path in sorted(src.iterdir()):
            if path.is_file() and path.suffix in (".py", ".pyi") or path.name == "py.typed":
                (dest / path.name).symlink_to(path)
        folders[dest] = src
    return folders


def run_mypy(*args: str, root: Path = ROOT, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """mypy with the project's config over the laid-out tree; output paths point at the sources."""
    folders = build_tree(root)
    res = subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(root / "pyproject.toml"), *args],
                         cwd=root, capture_output=True, text=True, timeout=timeout)
    out = res.stdout
    # longest first, so a sub-package's link folder is not read as its parent's
    for dest, src in sorted(folders.items(), key=lambda kv: -len(str(kv[0]))):
        out = out.replace(f"{dest.relative_to(root)}/", f"{src.relative_to(root)}/")
    return subprocess.CompletedProcess(res.args, res.returncode, out, res.stderr)


if __name__ == "__main__":
    result = run_mypy(*sys.argv[1:])
    sys.stdout.write(result.stdout)
    sys.stderr.write(result.stderr)
    sys.exit(result.returncode)
