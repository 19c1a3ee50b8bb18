"""The SHA-256 of failing tuples, computed in Python from Arrow buffers.

Apart from the Ibis plan so that check workers, which import no engine library,
digest the failing tuples of the rows they read themselves (see `file_groups`).
The backend computes the same digests for the join back (`ibis.plan._tuple_digest`).
"""

from __future__ import annotations

import hashlib
import itertools

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

NULL_PART = "~"
"""The part of a null value in the SHA-256 of a tuple of several columns."""


def sha256_hex(texts: pa.Array) -> pa.StringArray:
    """The SHA-256 of each (non-null) text's UTF-8 bytes, in hex, read from the Arrow buffers."""
    if not (pa.types.is_string(texts.type) or pa.types.is_large_string(texts.type)):
        texts = texts.cast(pa.large_string())
    _, offsets_buffer, data_buffer = texts.buffers()
    wide = pa.types.is_large_string(texts.type)
    offsets = np.frombuffer(offsets_buffer, dtype=np.int64 if wide else np.int32)
    offsets = offsets[texts.offset : texts.offset + len(texts) + 1].tolist()
    data = memoryview(data_buffer) if data_buffer is not None else memoryview(b"")
    digests = [hashlib.sha256(data[a:b]).hexdigest() for a, b in itertools.pairwise(offsets)]
    return pa.array(digests, pa.string())


def tuple_sha256(arrays: list[pa.Array], kinds: tuple[str, ...]) -> pa.StringArray:
    """The SHA-256 (hex) of each tuple: that of its parts joined with "," (see `engines.ibis`)."""
    parts = []
    for array, kind in zip(arrays, kinds):
        if kind == "text":
            part = sha256_hex(array)
        elif kind == "bool":
            part = pc.if_else(array, "t", "f")
        else:  # int
            part = array.cast(pa.string())
        parts.append(pc.if_else(array.is_null(), NULL_PART, part))
    return sha256_hex(pc.binary_join_element_wise(*parts, ","))


def digests(arrays: list[pa.Array], kinds: tuple[str, ...], *, single: bool) -> pa.StringArray:
    """The SHA-256 of each failing tuple: a lone chat column's text, or the tuple's parts."""
    return sha256_hex(arrays[0]) if single else tuple_sha256(arrays, kinds)
