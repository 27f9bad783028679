"""The pack registry finds packs by listing the tasks folder (a pack is one new file
with a module-level SPEC), and the folder stays readable: small modules, short functions."""

from __future__ import annotations

import importlib

import pytest

from evalrun.tasks import PackSpec, all_packs, get_pack, register
from tests.conftest import ROOT

TASKS = ROOT / "src" / "evalrun" / "tasks"


def test_every_module_or_package_with_a_spec_is_registered_under_its_name() -> None:
    found = {}
    names = [p.stem for p in TASKS.glob("*.py")] + [p.parent.name for p in TASKS.glob("*/__init__.py")]
    for name in sorted(names):
        if name in {"__init__", "registry", "base"} or name.startswith("_"):
            continue
        spec = getattr(importlib.import_module(f"evalrun.tasks.{name}"), "SPEC", None)
        if isinstance(spec, PackSpec):
            found[spec.name] = spec
    assert found == {k: v for k, v in all_packs().items() if k in found}
    assert set(found) == {"needle_numbers", "doc_fields", "files", "latency"}
    assert (TASKS / "files" / "__init__.py").is_file() and (TASKS / "doc_fields" / "__init__.py").is_file()


def test_unknown_pack_names_the_available_ones() -> None:
    with pytest.raises(KeyError, match="available: doc_fields, files, latency, needle_numbers"):
        get_pack("nope")


def test_a_pack_from_outside_the_folder_can_be_registered() -> None:
    spec = get_pack("latency")
    extra = PackSpec(name="test_extra_pack", version="1", params=spec.params, build=spec.build)
    try:
        assert register(extra) is extra and get_pack("test_extra_pack") is extra
    finally:
        from evalrun.tasks import registry

        registry._PACKS._entries.pop("test_extra_pack", None)
