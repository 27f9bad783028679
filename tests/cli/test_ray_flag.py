"""`--ray [ADDRESS]`: a bare flag gets its default before Click parses; a value is an address."""

from __future__ import annotations

from pathlib import Path

from evalrun.cli_options import AUTO, apply_ray, fill_bare_ray
from evalrun.evals.config import load_config
from tests.conftest import BASE_CONFIG as BASE


def test_a_bare_flag_before_a_config_or_an_option_or_at_the_end_is_auto(tmp_path: Path) -> None:
    cfg = tmp_path / "b.yaml"
    cfg.write_text(BASE)
    assert fill_bare_ray(["compare", "--ray", str(cfg), "c.yaml"]) == ["compare", "--ray", AUTO, str(cfg), "c.yaml"]
    assert fill_bare_ray(["run", "c.yaml", "--ray"]) == ["run", "c.yaml", "--ray", AUTO]
    assert fill_bare_ray(["run", "--ray", "--limit", "2"]) == ["run", "--ray", AUTO, "--limit", "2"]


def test_an_address_is_kept() -> None:
    assert fill_bare_ray(["run", "--ray", "ray://head:10001", "c.yaml"]) == ["run", "--ray", "ray://head:10001", "c.yaml"]
    assert fill_bare_ray(["run", "--ray=local", "c.yaml"]) == ["run", "--ray=local", "c.yaml"]


def test_apply_ray_names_what_stays_in_process(cfg_file) -> None:
    hf = load_config(cfg_file("a.yaml", BASE))
    paged = load_config(cfg_file("p.yaml", BASE.replace("name: base", "name: paged") + "batching: {mode: continuous}\n"))
    said: list[str] = []
    out = apply_ray([hf, paged], AUTO, said.append)
    assert out[0].executor == "ray" and out[0].ray.address is None
    assert out[1].executor == "inprocess" and said == ["paged: --ray: stays in process (batching.mode: continuous "
                                                      "runs in process only)"]
    assert apply_ray([hf], None, said.append) == [hf]
