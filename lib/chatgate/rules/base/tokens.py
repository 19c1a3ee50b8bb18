"""Tokenizers for `max_tokens=` (`too_long`): loaded once per process, counted cheaply.

`tokenizer=` names one of three kinds:

- **a tiktoken encoding** (`cl100k_base`, `o200k_base`, ...), loaded with
  `tiktoken.get_encoding`. tiktoken downloads an encoding's file from
  openaipublic.blob.core.windows.net at its first use and keeps it in the folder
  `TIKTOKEN_CACHE_DIR` names (by default a folder of the system's temporary directory).
  Offline, or on a cluster whose executors can't reach the blob store, fill that folder
  once on a machine that can (`TIKTOKEN_CACHE_DIR=tiktoken-cache python -c "import
  tiktoken; tiktoken.get_encoding('cl100k_base')"`) and set `TIKTOKEN_CACHE_DIR` to it
  everywhere the check runs (on Spark, ship the folder as an archive,
  `--archives tiktoken-cache.zip#tiktoken-cache`, and set
  `spark.executorEnv.TIKTOKEN_CACHE_DIR=tiktoken-cache`).
- **a Hugging Face `tokenizer.json`**: a path ending in `.json`, loaded with the
  `tokenizers` library (`Tokenizer.from_file`). On Spark, ship the file with
  `--files /path/tokenizer.json` (or `SparkContext.addFile`): a path that doesn't exist
  where the check runs is looked up by its file name with `SparkFiles.get`, so
  `tokenizer="tokenizer.json"` (or the driver's full path) finds the shipped copy on
  every executor.
- **a Mistral tokenizer file** (`tekken.json`, `tokenizer.model.v3`), loaded with
  mistral-common (`MistralTokenizer.from_file`), told apart by its name as mistral-common
  does; shipped to Spark executors as a `tokenizer.json` is.

A tokenizer is loaded once per process and spec (`load_tokenizer`, cached): the options
carry only its name, so nothing but that string is pickled into Spark's tasks, and each
Python worker loads it at its first conversation that needs counting. The options' check
loads it once on the driver, before any row is read, so a missing library or file is one
line (`TokenizerError`) naming what to install or download.

The bound that spares the tokenizer: no token of these tokenizers covers less than one
byte of the text it encodes, so the text's UTF-8 length bounds its tokens. For tiktoken
(byte-level BPE, no normalisation) `tokens(text) <= bytes(text)`. A `tokenizer.json` may
normalise the text first (NFKC, replacing spaces with `▁`, ...), which can lengthen it, and
may add one token in front (a prefix space or `▁`): its bound is the bytes of the normalised
text (the raw text's when it has no normaliser) plus 1. A Mistral Tekken file is byte-level
BPE (tiktoken's): the raw text's bytes plus 1. A Mistral SentencePiece file may normalise its
text (NFKC) before it is encoded: its texts are always encoded. Special tokens are never added
(`add_special_tokens=False`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from functools import lru_cache
from typing import Any

TIKTOKEN = "tiktoken"
HF = "tokenizers"
MISTRAL = "mistral-common"

_SENTENCEPIECE = re.compile(r"\.model(\.v\d+(m\d+)?)?$")
"""A Mistral SentencePiece file's name ends so (`tokenizer.model.v3`), as mistral-common recognises it."""

INSTALL = "pip install 'chatgate[tokens]'"
INSTALL_MISTRAL = "pip install 'chatgate[mistral]'"


class TokenizerError(ValueError):
    """A tokenizer that can't be loaded: its library is missing or its file can't be read. (A
    ValueError of the options, as every option's: the job reports it as a `ConfigError`.)"""


class Tokenizer:
    """One loaded tokenizer: its kind, how many tokens a text is, and the bound on that count
    that needs no encoding (see the module docstring)."""

    __slots__ = ("kind", "spec", "_count", "_normalize", "_count_many", "_bounded")

    def __init__(
        self,
        kind: str,
        spec: str,
        count: Callable[[str], int],
        normalize: Callable[[str], str] | None = None,
        count_many: Callable[[list[str]], list[int]] | None = None,
        *,
        bounded: bool = True,
    ) -> None:
        self.kind = kind
        self.spec = spec
        self._count = count
        self._normalize = normalize
        self._count_many = count_many
        self._bounded = bounded

    def count(self, text: str) -> int:
        """The tokens of `text`, special tokens not added."""
        return self._count(text)

    def count_many(self, texts: list[str]) -> list[int]:
        """`count` of each text, in one call where the library encodes a batch (on its own threads)."""
        if self._count_many is None:
            return [self._count(text) for text in texts]
        return self._count_many(texts)

    @property
    def raw_bound(self) -> bool:
        """True when a text's tokens are at most its raw UTF-8 bytes (plus 1): no normaliser can
        lengthen it first (see the module docstring)."""
        return self._bounded and (self.kind != HF or self._normalize is None)

    def bound(self, text: str) -> int:
        """At least `count(text)`, without encoding it (a tokenizer without a known bound: its count)."""
        if not self._bounded:
            return self._count(text)
        if self.kind == TIKTOKEN:
            return _utf8_length(text)
        return 1 + _utf8_length(self._normalize(text) if self._normalize is not None else text)

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled as its spec, loaded again (once) where it is unpickled.
        return (load_tokenizer, (self.spec,))


def _utf8_length(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def kind_of(spec: str) -> str:
    """The kind of tokenizer a `tokenizer=` value names: Mistral's files by their names, as
    mistral-common tells them apart (`tekken*.json`, `*.model`, `*.model.v3`), any other
    `.json` a Hugging Face file, anything else a tiktoken encoding.

    >>> kind_of("cl100k_base"), kind_of("models/tokenizer.json"), kind_of("tekken.json"), kind_of("tokenizer.model.v3")
    ('tiktoken', 'tokenizers', 'mistral-common', 'mistral-common')
    """
    name = os.path.basename(spec)
    if ("tekken" in name and name.endswith(".json")) or _SENTENCEPIECE.search(name):
        return MISTRAL
    return HF if spec.endswith(".json") else TIKTOKEN


@lru_cache(maxsize=8)
def load_tokenizer(spec: str) -> Tokenizer:
    """The tokenizer `spec` names, loaded once per process (see the module docstring);
    `TokenizerError` (one line) when its library or file is missing."""
    kind = kind_of(spec)
    if kind == HF:
        return _load_hf(spec)
    if kind == MISTRAL:
        return _load_mistral(spec)
    return _load_tiktoken(spec)


def _load_tiktoken(spec: str) -> Tokenizer:
    try:
        import tiktoken
    except ImportError:
        raise TokenizerError(f"tokenizer={spec!r} needs the tiktoken library: {INSTALL}") from None
    try:
        encoding = tiktoken.get_encoding(spec)
    except ValueError:
        raise TokenizerError(
            f"tokenizer={spec!r} isn't a tiktoken encoding (cl100k_base, o200k_base, ...) "
            "nor a path to a tokenizer.json"
        ) from None
    except Exception as error:  # noqa: BLE001 - the download failed: network, proxy, blob store
        cache = os.environ.get("TIKTOKEN_CACHE_DIR") or os.environ.get("DATA_GYM_CACHE_DIR")
        where = f"TIKTOKEN_CACHE_DIR={cache!r} doesn't hold it" if cache else "no TIKTOKEN_CACHE_DIR is set"
        raise TokenizerError(
            f"tokenizer={spec!r}: tiktoken couldn't download the encoding ({type(error).__name__}) and "
            f"{where}: fill a cache folder once where the network is reachable and set TIKTOKEN_CACHE_DIR to it"
        ) from None
    encode, encode_batch = encoding.encode_ordinary, encoding.encode_ordinary_batch
    return Tokenizer(
        TIKTOKEN, spec, lambda text: len(encode(text)), count_many=lambda texts: list(map(len, encode_batch(texts)))
    )


def _load_hf(spec: str) -> Tokenizer:
    try:
        from tokenizers import Tokenizer as HFTokenizer
    except ImportError:
        raise TokenizerError(f"tokenizer={spec!r} needs the tokenizers library: {INSTALL}") from None
    path = _file_of(spec, "the model's tokenizer.json")
    try:
        loaded = HFTokenizer.from_file(path)
    except Exception as error:  # noqa: BLE001 - the file isn't a tokenizer.json
        raise _unreadable(spec, "a tokenizer.json the tokenizers library reads", error) from None
    # A file may turn on padding (every text of a batch as long as the longest) or truncation
    # (every text cut to the model's length): a count is of the text alone.
    loaded.no_padding()
    loaded.no_truncation()
    encode = loaded.encode
    encode_batch = getattr(loaded, "encode_batch_fast", loaded.encode_batch)  # fast: no offsets (0.20)
    normalizer = loaded.normalizer
    normalize = normalizer.normalize_str if normalizer is not None else None
    return Tokenizer(
        HF,
        spec,
        lambda text: len(encode(text, add_special_tokens=False)),
        normalize,
        lambda texts: [len(e) for e in encode_batch(texts, add_special_tokens=False)],
    )


def _load_mistral(spec: str) -> Tokenizer:
    try:
        from mistral_common.tokens.tokenizers.mistral import MistralTokenizer
    except ImportError:
        raise TokenizerError(f"tokenizer={spec!r} needs the mistral-common library: {INSTALL_MISTRAL}") from None
    path = _file_of(spec, "the model's tekken.json (or tokenizer.model.v3)")
    try:
        loaded = MistralTokenizer.from_file(path).instruct_tokenizer.tokenizer
    except ImportError as error:  # a SentencePiece file without the sentencepiece library
        raise TokenizerError(f"tokenizer={spec!r} needs {error.name or 'sentencepiece'}: {INSTALL_MISTRAL}") from None
    except Exception as error:  # noqa: BLE001 - the file isn't one mistral-common reads
        raise _unreadable(spec, "a tokenizer file mistral-common reads", error) from None
    encode = loaded.encode
    # Tekken is byte-level BPE (at most a token per byte); a SentencePiece model may normalise
    # its text first (NFKC can lengthen it), so its counts have no bound but themselves.
    tekken = type(loaded).__name__ == "Tekkenizer"
    return Tokenizer(MISTRAL, spec, lambda text: len(encode(text, bos=False, eos=False)), bounded=tekken)


def _unreadable(spec: str, what: str, error: BaseException) -> TokenizerError:
    """The one-line error of a file its library refuses: what it isn't, and the start of why."""
    return TokenizerError(f"tokenizer={spec!r} isn't {what}: {' '.join(str(error).split())[:200]}")


def _file_of(spec: str, download: str) -> str:
    """The tokenizer file `spec` names, here or shipped to Spark; a one-line error saying what to
    download when there is none."""
    path = _local_path(spec)
    if path is None:
        raise TokenizerError(
            f"tokenizer={spec!r}: no such file here (nor shipped to Spark with --files): "
            f"download {download} and give its path"
        )
    return path


def _local_path(spec: str) -> str | None:
    """`spec` if it is a file here, else the copy Spark shipped under its file name (`--files`)."""
    if os.path.isfile(spec):
        return spec
    try:
        from pyspark import SparkFiles
    except ImportError:
        return None
    try:
        shipped = SparkFiles.get(os.path.basename(spec))
    except Exception:  # noqa: BLE001 - no SparkContext nor TaskContext here
        return None
    return shipped if os.path.isfile(shipped) else None
