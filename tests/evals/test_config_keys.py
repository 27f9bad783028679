"""The run key of every shipped config, pinned: a stored run is found again only while its config
hashes as it did when the run was stored, so a change to how configs are validated or carried
(typed settings, the runner union) must leave every key byte-identical.

The keys were computed at the commit before the settings became typed, with a fixed model
identity, device and dtype: what varies here is the config alone."""

from __future__ import annotations

import pytest

from evalrun.evals.config import load_config
from evalrun.evals.run import key_payload
from evalrun.evals.store import run_key
from evalrun.runners.models import ModelSource
from tests.conftest import ROOT

SOURCE = ModelSource("pinned", "dir", "/pinned", {"pinned": "identity"})

PINNED = {
    "configs/baseline-eager.yaml": "6b69b3b0a58a8e8c095617dddcb0e8b8fde241a368bf830d55137cf90979fadd",
    "configs/baseline-ray.yaml": "e543bab882703ab0304fc22562b77677a4e042b7cb7375f1f723018f383b3a82",
    "configs/baseline.yaml": "e543bab882703ab0304fc22562b77677a4e042b7cb7375f1f723018f383b3a82",
    "configs/compile.yaml": "5b84b25017097fe269069ff675739de29070cf7a3d2152706dc90341787f9933",
    "configs/evict-knorm-context.yaml": "074bea99dcf9ba82ed5806ceaa5f43a0d5165a4c823a1bccabedfee2f4477516",
    "configs/evict-snapkv.yaml": "7ad72635179157c8f2518fdcf82c637c2cea79de261cf5cb25fb251986c78bc0",
    "configs/evict-streaming.yaml": "46ef24110195332c0cef6e37290da15dd0e9bff3552647d4259ff064523c90ce",
    "configs/fp8kv.yaml": "6680992bd8a81aedba7644bfb339d7dc100232da61ea8a278ae0d5da8642c2ed",
    "configs/int2kv-quanto.yaml": "6f1015803ab429006705696cc7e0134d66390fa07bbdb3748ac8735aca45e320",
    "configs/int2kv.yaml": "0bc3efa9a9337a194153d29dd6509624d22660c8f75a3da9a293ca7c3369e012",
    "configs/int4kv-bf16.yaml": "5e6625f12b54e2bea01c863b7588c9568fc168028833d021573acc1768d3d4a7",
    "configs/int4kv-quanto.yaml": "5e6625f12b54e2bea01c863b7588c9568fc168028833d021573acc1768d3d4a7",
    "configs/int4kv.yaml": "5c59b07f873e9807c9873ddf3ace730501c0b1f8c990f6de63cb0293e1c1e0ce",
    "configs/kernels-eager.yaml": "6b69b3b0a58a8e8c095617dddcb0e8b8fde241a368bf830d55137cf90979fadd",
    "configs/kernels-sdpa.yaml": "f7cb52c87787e2ed834c04a7cc13a9f5ea3761405a9fe5d04c5c9dbfbdf0e33d",
    "configs/kv-int3-sim.yaml": "fca6db656bb03972086e78c9d3ec6a299a7e93ce960b1b06212b405764928c05",
    "configs/kv-int4-sim.yaml": "1410884f5940e214a33d1155b38d74c97132d70ba7582e7841549377fa285b97",
    "configs/latency-int4kv.yaml": "2ed1ed4b85c712ae32382cbb557769abac6b5042dd549450793dab3bb2d88faf",
    "configs/latency-pld.yaml": "cf98731fafadd7caf0ed0ad60bebaf125cb9b061209915ca286eef0641170e90",
    "configs/latency.yaml": "3bf23377f2836213268877b5cc79567ddbb8ce8801b18a531813c7e066504ccd",
    "configs/noisy-bf16.yaml": "e543bab882703ab0304fc22562b77677a4e042b7cb7375f1f723018f383b3a82",
    "configs/openai-baseline.yaml": "a209d08448efe859906feff95ce7005ae42fcf50e93fc1d680345f0631931e65",
    "configs/openai-fp8kv.yaml": "e6442607306a5c15f8829bc5a280a22d5e8772b28d55fcbf31845af029d52e66",
    "configs/openai-sglang-gateway.yaml": "1067999007e0800954f903a0359f6909b4366d38d0e2a2ec243ba1e2c49ca2fa",
    "configs/openai-vllm-dp.yaml": "49f4eebc7a584dc9cf61aae1a96f8d2ddea681c8f95b2de10ce26547fa8a476e",
    "configs/paged-cb.yaml": "b8a72cbc05995092e27d09263900cd72b227b0f9941a71af69a074ac4963d790",
    "configs/sparse50.yaml": "e3dc1794a56b2bf762d7856f544a87a622f9dbb0349f03bbbb22e5c2214d99ea",
    "configs/specdec-draft.yaml": "7f5ff9b512da5b2e7d78566ca766001b170837a835dbcbee65ab634f9fa377ab",
    "configs/specdec-pld.yaml": "c42e2a93b8262ff688d96c7b6d3c06c0b626f582dcb9729425266dffffbb6541",
    "configs/w8.yaml": "a917b3e442bb27eee66f250eec04717cdd3f7e2f78d423ba5fd263d495fb506e",
    "configs/engines/llamacpp-f16-fa.yaml": "ce02a078182bce18c5b9f7d5f355411c936e93ef06a64fcb68ebb62d64e1fb06",
    "configs/engines/llamacpp-f16.yaml": "ce02a078182bce18c5b9f7d5f355411c936e93ef06a64fcb68ebb62d64e1fb06",
    "configs/engines/llamacpp-q4kv.yaml": "ce02a078182bce18c5b9f7d5f355411c936e93ef06a64fcb68ebb62d64e1fb06",
    "configs/engines/llamacpp-q8kv.yaml": "ce02a078182bce18c5b9f7d5f355411c936e93ef06a64fcb68ebb62d64e1fb06",
    "configs/engines/vllm-auto.yaml": "2f8c8b314cb6668676ab6f4a36976443c6ab9b829d2cd51bb4dc1ded9b81b0a5",
    "configs/engines/vllm-fp8e5m2kv.yaml": "2f8c8b314cb6668676ab6f4a36976443c6ab9b829d2cd51bb4dc1ded9b81b0a5",
    "configs/engines/vllm-fp8kv.yaml": "2f8c8b314cb6668676ab6f4a36976443c6ab9b829d2cd51bb4dc1ded9b81b0a5",
}


def _shipped() -> list[str]:
    return sorted(str(p.relative_to(ROOT)) for p in [*(ROOT / "configs").glob("*.yaml"),
                                                     *(ROOT / "configs" / "engines").glob("*.yaml")])


def test_every_shipped_config_is_pinned() -> None:
    assert _shipped() == sorted(PINNED), "a config added to configs/ gets its key pinned here"


@pytest.mark.parametrize("name", sorted(PINNED))
def test_the_run_key_of_a_shipped_config_is_unchanged(name: str) -> None:
    config = load_config(ROOT / name)
    assert run_key(key_payload(config, SOURCE, "cpu", "float32")) == PINNED[name]
