"""Shared fixtures: the real default model's files, a tiny random Llama for
runner mechanics, and a CLI runner that checks exit codes the way CI sees them."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

# Under pytest-xdist each worker's torch gets its share of the cores (set before torch is
# imported, and inherited by the CLI processes tests spawn): every worker starting a thread per
# core would oversubscribe them, and OpenMP threads waiting on a preempted sibling slow each step.
if os.environ.get("PYTEST_XDIST_WORKER_COUNT"):
    os.environ.setdefault("OMP_NUM_THREADS", str(max(1, len(os.sched_getaffinity(0))
                                                     // int(os.environ["PYTEST_XDIST_WORKER_COUNT"]))))

from evalrun.contract import Field, Item
from evalrun.evals import api
from evalrun.evals.results import RunResult
from evalrun.evals.store import RunStore
from tests.fakes.runs import answered, run_result

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ROOT / "configs"

# the smallest valid config, for tests of loading and validation
BASE_CONFIG = """
name: base
model: smollm2-135m
tasks:
  - pack: needle_numbers
    lengths: [512]
    depths: [0.5]
"""


@pytest.fixture(scope="session")
def smol_dir() -> str:
    """The default model converted to a plain checkpoint (cached on disk after the first time)."""
    from evalrun.runners.models import local_dir, resolve_model

    return local_dir(resolve_model("smollm2-135m"))


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory, smol_dir: str) -> Path:
    """A randomly initialised 2-layer Llama with the default model's tokenizer: fast, no download."""
    return write_tiny_model(tmp_path_factory.mktemp("tiny-llama"), smol_dir)


class ModelRuns:
    """Real-model runs generated once per test session and shared across modules.

    `copy(dest, config, limit=N)` puts into `dest` the stored run of `config` (a path) with
    `--limit N`, generated the first time any test asks for it and copied (never linked)
    afterwards, so each test still owns and may change its run store. Under pytest-xdist the
    workers share one store under a file lock: the first worker to ask generates, the others
    wait and copy. A test that checks how a run is generated, stopped or resumed generates its
    own; this is for the runs a test only compares against (a baseline)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def copy(self, dest: Path, config: Path, limit: int | None = None) -> Path:
        from filelock import FileLock

        resolved = str(Path(config).resolve())
        slot = self.root / f"{hashlib.sha256(f'{resolved}|{limit}'.encode()).hexdigest()[:16]}-limit-{limit}"
        self.root.mkdir(parents=True, exist_ok=True)
        with FileLock(f"{slot}.lock"):
            done = slot / "run-dir.txt"
            if not done.exists():
                made = api.run(api.load(config), out=slot / "out", limit=limit, log=lambda _m: None).dir
                done.write_text(str(made), encoding="utf-8")
            src = Path(done.read_text(encoding="utf-8"))
        dest.mkdir(parents=True, exist_ok=True)
        shutil.copytree(src, dest / src.name, ignore=shutil.ignore_patterns("lock"))
        return dest / src.name


@pytest.fixture(scope="session")
def model_runs(tmp_path_factory: pytest.TempPathFactory) -> ModelRuns:
    """The session's store of real-model runs (see ModelRuns); one for all xdist workers."""
    base = tmp_path_factory.getbasetemp()
    # under xdist each worker's base is a folder of the session's own base, which they share
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    return ModelRuns(shared / "model-runs")


def write_tiny_model(out: Path, tokenizer_dir: str, **shape: float) -> Path:
    """The tiny random Llama (seed 0) saved to `out` with the tokenizer from `tokenizer_dir`
    (also for benchmarks that need a model whose compute is negligible); `shape` overrides its
    LlamaConfig settings (DEFAULT_MODEL_HEADS: the default model's attention shape on two layers;
    initializer_range: a larger weight scale for peaked distributions)."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    tok = AutoTokenizer.from_pretrained(tokenizer_dir)
    cfg = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id,
    )
    for key, value in shape.items():
        setattr(cfg, key, value)
    torch.manual_seed(0)
    model = LlamaForCausalLM(cfg)
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out


# SmolLM2-135M's attention shape (9 heads, 3 KV heads of 64 dims): the KV group sizes its configs use pack here too
DEFAULT_MODEL_HEADS = {"hidden_size": 576, "num_attention_heads": 9, "num_key_value_heads": 3, "head_dim": 64}


def tiny_config(model_dir: Path, **over) -> dict:
    """A run config for the tiny model: six short needle items in two batches."""
    data = {
        "name": "tiny",
        "model": str(model_dir),
        "batch_size": 4,
        "generation": {"max_new_tokens": 8},
        "tasks": [{"pack": "needle_numbers", "lengths": [96, 160, 240], "depths": [0.0, 1.0], "values": ["integer"]}],
    }
    data.update(over)
    return data


def write_config(path: Path, body: str) -> Path:
    path.write_text(textwrap.dedent(body).lstrip(), encoding="utf-8")
    return path


@pytest.fixture
def cfg_file(tmp_path: Path):
    """Write a config YAML into tmp_path: cfg_file('name.yaml', 'yaml text')."""

    def make(name: str, body: str) -> Path:
        return write_config(tmp_path / name, body)

    return make


def run_cli(*args: str, cwd: Path | None = None, timeout: float = 900,
            env: dict[str, str] | None = None, fresh_process: bool = False) -> subprocess.CompletedProcess[str]:
    """Run `evalrun` as a user or CI would: its console entry point, its exit code, its two streams.

    In this test process by default: importing torch and transformers costs each new process seconds,
    and the suite calls the CLI over a hundred times. `fresh_process=True` runs it in a subprocess,
    for what only a separate process shows (signals, a process group, the `-m` entry point itself);
    `timeout` bounds that subprocess, and pytest-timeout's limit an in-process call."""
    base = {k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"}
    extra = {"COLUMNS": "200", "PYTHONUNBUFFERED": "1", **(env or {})}
    if fresh_process:
        return subprocess.run([sys.executable, "-m", "evalrun.cli", *args], cwd=cwd or ROOT, env={**base, **extra},
                              capture_output=True, text=True, timeout=timeout)
    return _run_in_process(list(args), cwd or ROOT, extra)


def _run_in_process(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The entry point `evalrun.cli.main` in this process, with its streams, argv, cwd, environment and
    signal handlers swapped in and restored afterwards (what a run changes must not leak into the next test)."""
    import signal
    import traceback

    from click.testing import CliRunner

    from evalrun import cli, cli_app

    saved_env, saved_argv, saved_cwd = dict(os.environ), sys.argv, os.getcwd()
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    widths = [(c, c._width) for c in (cli_app.console, cli_app.err_console)]
    code: int = 0
    with CliRunner().isolation() as (out, err, _):
        os.environ.pop("GITHUB_STEP_SUMMARY", None)
        os.environ.update(env)
        sys.argv = ["evalrun", *args]
        os.chdir(cwd)
        for c, _w in widths:
            c.width = int(env["COLUMNS"])
        try:
            cli.main()
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except BaseException:  # what a process would print before dying
            traceback.print_exc()
            code = 1
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.chdir(saved_cwd)
            sys.argv = saved_argv
            os.environ.clear()
            os.environ.update(saved_env)
            for s, h in handlers.items():
                signal.signal(s, h)
            for c, w in widths:
                c._width = w
        stdout, stderr = out.getvalue().decode(), err.getvalue().decode()
    return subprocess.CompletedProcess(["evalrun", *args], code, stdout, stderr)


# --------------------------------------------------------------------------- synthetic runs (no model)
# A baseline and candidates with known flips, timings and hostile text, for the
# verdict, the report view model and every renderer.

HOSTILE_OUTPUT = "<img src=x onerror=\"window.pwned=true;document.title='pwned'\"></textarea><script>window.pwned=true</script>"
HOSTILE_GOLD = "<script>window.pwned=true</script></textarea>"
LENGTHS, DEPTHS = [512, 1024], [0.0, 0.5, 1.0]
# (length, depth, i) -> how the run answers the needle; everything else is answered correctly
BASE_WRONG = {(512, 1.0, 0)}
CAND_WRONG = {(512, 0.0, 1), (1024, 0.5, 0), (1024, 1.0, 0), (1024, 1.0, 1)}
DOC = ("INVOICE\n\n" + " ".join(f"Clause {k} of the agreement stays in force." for k in range(60))
       + " The total amount due is EUR 14,851.20. " + " ".join(f"Remark {k} for the file." for k in range(40)))
DOC_SOURCE = "The total amount due is EUR 14,851.20."


def needle_items() -> list[Item]:
    items = []
    for length in LENGTHS:
        for depth in DEPTHS:
            for i in range(2):
                value = f"{7000000 + 1000 * length // 512 + int(depth * 100) + i}"
                needle = f"The special magic number for Key{chr(65 + i)} is {value}."
                filler = [f"Filler sentence number {chr(97 + k % 26)} in the haystack." for k in range(length // 16)]
                at = round(depth * len(filler))
                text = " ".join([*filler[:at], needle, *filler[at:]])
                prompt = f"Read the text.\n\n{text}\n\nQuestion: What is the special magic number for Key{chr(65 + i)}?"
                items.append(Item(id=f"needle/L{length}-D{depth:.2f}-{i}", pack="needle", prompt=prompt,
                                  fields=[Field(name="value", kind="number", gold=value)],
                                  meta={"context_tokens": length - 10, "target_tokens": length, "depth": depth,
                                        "value_kind": "integer", "needle": needle}))
    return items


def doc_items() -> list[Item]:
    """Three questions about one document: the document must be stored once."""
    out = []
    for name, kind, gold in (("total", "amount", "EUR 14851.20"), ("supplier", "text", HOSTILE_GOLD),
                             ("term", "number", None)):
        prompt = f"Read the invoice below.\n\n{DOC}\n\nWhat is the {name}?"
        out.append(Item(id=f"docs/INV1/{name}", pack="docs", prompt=prompt, fields=[Field(name=name, kind=kind, gold=gold)],
                        meta={"answer_format": "text", "context_tokens": 900, "target_tokens": 1024, "field": name,
                              "doc_id": "INV1", "field_depth": 0.6 if gold else None,
                              "source": DOC_SOURCE if name == "total" else None}))
    return out


def _answer(item: Item, wrong: bool, hostile: bool) -> str:
    gold = item.fields[0].gold
    if item.pack == "docs":
        name = item.fields[0].name
        if name == "total":
            return "The total is EUR 1,485.20." if wrong else "The total is EUR 14,851.20."
        if name == "supplier":
            return HOSTILE_OUTPUT if hostile else gold or ""
        return "There is no term in this invoice."
    return f"The number is {gold[:-1]}." if wrong else f"The number is {gold}."


def make_run(name: str, items: list[Item], wrong: set, *, hostile: bool = False, seconds: float = 0.8,
             batch: int = 4, new_tokens: int = 10, emulated: list[str] | None = None) -> RunResult:
    """Timings scale with `seconds`: a quarter of the batch's time is prefill (varying a little per item),
    the rest decode, so a run with half the seconds is exactly 2x faster on every item."""
    gens = {}
    for k, it in enumerate(items):
        m = it.meta
        is_wrong = (m.get("target_tokens"), m.get("depth"), int(it.id[-1]) if it.id[-1].isdigit() else 0) in wrong \
            if it.pack == "needle" else ("docs" in wrong)
        output = _answer(it, is_wrong, hostile)
        # one "token" per character: outputs that differ part at a known position
        gens[it.id] = answered(it, output, output_ids=[ord(c) for c in output], new_tokens=new_tokens, seconds=seconds,
                               batch_size=batch, prompt_tokens=it.meta.get("context_tokens", 100),
                               prefill_seconds=seconds * (0.25 + 0.01 * k), decode_seconds=seconds * 0.7)
    accel = {} if name == "baseline" else {"kv_cache": {"quant": name, "backend": "quanto"}}
    speed = {"peak_memory": {"bytes": int(2e9 * seconds), "kind": "process_peak_rss", "scope": "run"},
             "kv_cache": {"bytes_per_token": 46080.0 * (0.25 if accel else 1.0), "longest_context_tokens": 1024,
                          "bytes_at_longest_context": round(46080 * (0.25 if accel else 1.0) * 1024)}}
    return run_result(name, items, gens, device="cpu", dtype="float32", load_seconds=1.5, speed=speed,
                      config={"model": "synthetic", "acceleration": accel}, emulated=emulated or [],
                      effects={"kv_cache": {"kv_bytes_ratio": 0.25}} if accel else {})


def make_report(hostile: bool = True):  # type: ignore[no-untyped-def]
    """baseline, `int4kv` (needle and document flips, a hostile output) and an emulated `sparse` (no flips)."""
    items = needle_items() + doc_items()
    base = make_run("baseline", items, BASE_WRONG, seconds=0.8, batch=4, new_tokens=10)
    cand = make_run("int4kv", items, CAND_WRONG | {"docs"}, hostile=hostile, seconds=0.4, batch=4, new_tokens=10)
    sparse = make_run("sparse", items, BASE_WRONG, seconds=0.2, batch=4, emulated=["activation_sparsity"])
    return api.compare_results(base, [(cand, None), (sparse, None)])


def write_runs(root: Path, report) -> list[Path]:  # type: ignore[no-untyped-def]
    """Store the report's runs on disk as `evalrun` would (for `evalrun report`)."""
    dirs = []
    for run in [report.baseline, *(c.run for c in report.candidates)]:
        store = RunStore(root / run.name)
        store.dir.mkdir(parents=True)
        store.write_items(run.items)
        for g in run.generations.values():
            store.append(g)
        store.write_manifest(run.manifest)
        dirs.append(store.dir)
    return dirs


# the longest modules, longest first (measured on 2 cores); only an order: a module not named here runs
# after them, in its rank (model, slow, the rest)
# test_compare_model waits for the baseline test_early_stop's setup generates (ModelRuns): it starts later;
# test_types_checked (mypy then pyright, cold: about 3 minutes on one worker) starts early, not in the tail
LONGEST_FIRST = ["tests/cli/test_noise_gate.py", "tests/runners/test_control_llamacpp.py",
                 "tests/runners/test_calibrate_llamacpp.py", "tests/cli/test_calibrate.py", "tests/cli/test_early_stop.py",
                 "tests/evals/test_acceptance_floor.py", "tests/runners/test_server_lifecycle.py",
                 "tests/cli/test_compare_model.py", "tests/runners/test_ray_executor.py",
                 "tests/runners/test_vllm_engine.py", "tests/cli/test_ray_compare.py", "tests/cli/test_speed_gate.py",
                 "tests/test_types_checked.py"]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The longest modules first, then the other real-model ones, then the other slow ones: `make test` hands
    whole modules to its workers in this order (`--dist loadfile --no-loadscope-reorder`), so the long ones
    start at once and the many short ones fill the gaps at the end, instead of a long one running alone last."""
    rank: dict[str, int] = {}
    for item in items:
        module = item.nodeid.split("::")[0]
        here = 0 if item.get_closest_marker("model") else 1 if item.get_closest_marker("slow") else 2
        rank[module] = min(rank.get(module, 2), here)

    def key(item: pytest.Item) -> tuple[int, int]:
        module = item.nodeid.split("::")[0]
        return (LONGEST_FIRST.index(module), 0) if module in LONGEST_FIRST else (len(LONGEST_FIRST), rank[module])

    items.sort(key=key)  # stable: collection order kept within a rank
