"""Context-length buckets, the one definition every slice by length uses: powers of two from 256 tokens,
upper-inclusive, as packs choose their lengths, so each lands in its own bucket and long contexts (where KV
compression loses detail) keep their own rows instead of sharing one ">8192"."""

from __future__ import annotations

FIRST_EDGE = 256


def bucket_edge(tokens: int) -> int:
    """The upper edge (inclusive) of the bucket holding `tokens`."""
    edge = FIRST_EDGE
    while tokens > edge:
        edge *= 2
    return edge


def edge_label(edge: int) -> str:
    return f"<={edge // 1024}k" if edge >= 1024 else f"<={edge}"


def length_bucket(tokens: int) -> str:
    """The bucket label of a context of `tokens` tokens: "<=512", "<=2k"."""
    return edge_label(bucket_edge(tokens))
