"""Served logprobs read into the run's per-token record: the shapes engines send (llama-cpp-python's
text without bytes, vLLM's bytes, `token_id:N`, the legacy completions form) map to the default
model's token ids; what cannot be mapped leaves the answer without a record and says why."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from evalrun.runners.openai._logprobs import MAX_TOP, ServedDists, TokenIds, request_fields, token_dists, tokens_of


@pytest.fixture(scope="module")
def tok(smol_dir: str) -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(smol_dir)


def _entry(text: str, lp: float, top: list[tuple[str, float]], with_bytes: bool = False) -> dict[str, Any]:
    def one(t: str, v: float) -> dict[str, Any]:
        return {"token": t, "logprob": v, "bytes": list(t.encode()) if with_bytes else None}

    return {**one(text, lp), "top_logprobs": [one(t, v) for t, v in top]}


def test_request_asks_for_at_most_twenty_alternatives() -> None:
    assert request_fields("chat", 5) == {"logprobs": True, "top_logprobs": 5}
    assert request_fields("chat", 64) == {"logprobs": True, "top_logprobs": MAX_TOP}
    assert request_fields("completions", 3) == {"logprobs": 3}
    assert request_fields("chat", 0) == {}


@pytest.mark.parametrize("with_bytes", [False, True], ids=["llama.cpp text", "vLLM bytes"])
def test_chat_tokens_map_to_the_tokenizers_ids(tok: Any, with_bytes: bool) -> None:
    ids = tok("The total is € 14,851.20", add_special_tokens=False)["input_ids"]
    raw = [_token_bytes(tok, t) for t in tok.convert_ids_to_tokens(ids)]

    def one(b: bytes, v: float) -> dict[str, Any]:
        return {"token": b.decode("utf-8"), "logprob": v, "bytes": list(b) if with_bytes else None}

    choice = {"logprobs": {"content": [{**one(b, -0.1), "top_logprobs": [one(b, -0.1), one(b" the", -3.0)]}
                                       for b in raw]}}
    record, why = token_dists(tokens_of(choice, "chat") or [], TokenIds.of(tok), 20)
    assert why is None and record is not None and record.ids.tolist() == ids
    assert record.k == 2 and record.top_ids[:, 1].tolist() == [tok.convert_tokens_to_ids("Ġthe")] * len(ids)
    assert np.allclose(record.rest_logprob, math.log(1 - math.exp(-0.1) - math.exp(-3.0)), atol=1e-6)


def _token_bytes(tok: Any, token: str) -> bytes:
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    decode = {c: b for b, c in bytes_to_unicode().items()}
    return bytes(decode[c] for c in token)


def test_llamacpp_text_and_its_empty_end_token(tok: Any) -> None:
    """llama-cpp-python names tokens by their text and a special token by "": the answer's end is EOS."""
    pieces = [" The", " number", " is", " the", " end", "."]
    entries = [_entry(p, -0.2, [(p, -0.2), (" a", -2.5)]) for p in pieces] + [_entry("", -0.01, [("", -0.01), (".", -5.0)])]
    record, why = token_dists(tokens_of({"logprobs": {"content": entries}}, "chat") or [], TokenIds.of(tok), 20)
    assert why is None and record is not None
    assert record.ids[-1] == tok.eos_token_id
    assert tok.decode(record.ids.tolist(), skip_special_tokens=True) == "".join(pieces)


def test_token_id_names_and_the_completions_form(tok: Any) -> None:
    vllm = {"logprobs": {"content": [{"token": "token_id:504", "logprob": -0.5,
                                      "top_logprobs": [{"token": "token_id:504", "logprob": -0.5},
                                                       {"token": "token_id:378", "logprob": -1.0}]}]}}
    record, _ = token_dists(tokens_of(vllm, "chat") or [], TokenIds.of(tok), 20)
    assert record is not None and record.ids.tolist() == [504] and record.top_ids.tolist() == [[504, 378]]
    legacy = {"logprobs": {"tokens": [" The", " end"], "token_logprobs": [-0.3, -0.4],
                           "top_logprobs": [{" The": -0.3, " A": -1.9}, {" end": -0.4, " start": -2.0}]}}
    record, _ = token_dists(tokens_of(legacy, "completions") or [], TokenIds.of(tok), 20)
    assert record is not None and tok.decode(record.ids.tolist()) == " The end"
    assert record.top_logprobs[0].tolist() == pytest.approx([-0.3, -1.9])


def test_what_cannot_be_mapped_is_no_record_with_its_reason(tok: Any) -> None:
    ids = TokenIds.of(tok)
    assert tokens_of({"logprobs": None}, "chat") is None  # a server that sends none
    record, why = token_dists([], ids, 20)
    assert record is None and why == "no logprobs in the answer"
    not_one_token = {"logprobs": {"content": [_entry(" The number", -0.1, [(" The number", -0.1), (" the", -2.0)])]}}
    record, why = token_dists(tokens_of(not_one_token, "chat") or [], ids, 20)
    assert record is None and "not one entry of the tokenizer's vocabulary" in (why or "")
    # vLLM and llama-cpp-python send "" for an alternative that is part of a UTF-8 character: left to the rest
    partial = {"logprobs": {"content": [_entry(" yes", -0.1, [(" yes", -0.1), ("", -2.0), (" no", -3.0)]),
                                        _entry(".", -0.2, [(".", -0.2), ("!", -2.5), ("?", -2.6)])]}}
    record, why = token_dists(tokens_of(partial, "chat") or [], ids, 20)
    assert why is None and record is not None and record.k == 2
    assert record.top_ids[0].tolist() == [tok.convert_tokens_to_ids("Ġyes"), tok.convert_tokens_to_ids("Ġno")]
    assert record.rest_logprob[0] == pytest.approx(math.log(1 - math.exp(-0.1) - math.exp(-3.0)), abs=1e-6)
    assert record.top_ids[1].tolist() == [tok.convert_tokens_to_ids("."), tok.convert_tokens_to_ids("!")]
    only_empty = {"logprobs": {"content": [_entry("", -0.1, [("", -0.1), ("", -0.2)])]}}
    record, why = token_dists(tokens_of(only_empty, "chat") or [], ids, 20)
    assert record is None and why == "no top logprobs that name a token of the tokenizer"


def test_ids_that_do_not_decode_to_the_answer_are_not_kept(tok: Any) -> None:
    served = ServedDists(tok)
    written: list[str] = []
    served.top_k, served.on_distribution = 20, lambda item_id, rec: written.append(item_id)
    tokens = tokens_of({"logprobs": {"content": [_entry(" yes", -0.1, [(" yes", -0.1)])]}}, "chat")
    assert served.take("a", tokens, " yes") == [tok.convert_tokens_to_ids("Ġyes")]
    assert served.take("b", tokens, " no") is None  # the text the server sent is not what its tokens say
    served.store("a")
    served.store("b")
    assert written == ["a"]
    assert served.facts() == {"top_k_asked": 20, "answers_with": 1, "answers_without": 1,
                              "first_without": "item b: its token ids do not decode to the answer's text"}
