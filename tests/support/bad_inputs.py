"""A table of bad command lines: every one must end in one ``error:`` line and a non-zero exit.

Shared by the test suite (``tests/cli/test_cli_errors.py``, in-process) and the reliability benchmark
(``benchmarks/bench_reliability.py``, one real process per case). Each :class:`BadInput` is a command line
with placeholders: ``{d}`` is a folder prepared by :func:`make_fixtures` (good and damaged benchmarks,
prompts, a file where a folder is expected ...) and ``{url}`` the base URL of a stub server that must receive
no request at all, since every case is refusable before the first LM call. ``expect`` is a fragment the error
line must hold (case-insensitive), so a case cannot pass by failing for another reason.
"""

from __future__ import annotations

import json
import os
import shlex
from dataclasses import dataclass
from pathlib import Path

_ROWS = [
    {
        "id": f"x{i}",
        "system": f"S{i % 2}",
        "doc_id": f"d{i // 2}",
        "inputs": {"source": f"Article {i}."},
        "output": f"Summary {i}.",
        "human": {"fluency": 1.0 + i % 5},
    }
    for i in range(12)
]
_PROMPT = (
    "Rate the fluency of the summary from 1 to 5.\n\nArticle: {{source}}\nSummary: {{summary}}\n\nScore:"
)


@dataclass(frozen=True)
class BadInput:
    """One bad command line: ``args`` (with ``{d}``/``{url}`` placeholders) and a fragment of the expected
    error."""

    name: str
    args: tuple[str, ...]
    expect: str


def make_fixtures(folder: Path) -> Path:
    """Write the files the cases refer to into ``folder`` (created); returns it."""
    d = Path(folder)
    d.mkdir(parents=True, exist_ok=True)
    (d / "bench.jsonl").write_text("".join(json.dumps(r) + "\n" for r in _ROWS), encoding="utf-8")
    (d / "prompt.txt").write_text(_PROMPT, encoding="utf-8")
    (d / "no_slot.txt").write_text("Rate the text from 1 to 5.\nScore:", encoding="utf-8")
    (d / "unknown_slot.txt").write_text(_PROMPT.replace("{{source}}", "{{author}}"), encoding="utf-8")
    (d / "latin1.txt").write_bytes(_PROMPT.replace("fluency", "fluency \xe9").encode("latin-1"))
    good = json.dumps(_ROWS[0])
    (d / "latin1.jsonl").write_bytes((good + "\n").encode() + b'{"id": "y", "output": "caf\xe9"}\n')
    (d / "surrogate.jsonl").write_text(
        good + '\n{"id": "y", "output": "half a pair \\ud800"}\n', encoding="utf-8"
    )
    (d / "bad_json.jsonl").write_text(good + '\n{"id": "y", "output": \n', encoding="utf-8")
    (d / "no_id.jsonl").write_text(good + '\n{"output": "no id"}\n', encoding="utf-8")
    (d / "empty.jsonl").write_text("", encoding="utf-8")
    (d / "a_file").write_text("not a folder\n", encoding="utf-8")
    (d / "not_gguf.gguf").write_bytes(b"not a model file")
    (d / "pipeline_bad.json").write_text("{not json", encoding="utf-8")
    (d / "pipeline_latin1.json").write_bytes(b'{"name": "caf\xe9"}')
    (d / "journal_dir" / "journal.jsonl").mkdir(parents=True, exist_ok=True)
    (d / "empty_folder").mkdir(exist_ok=True)
    (d / "config_unknown_key.toml").write_text('criterion = "fluency"\nlimitt = 3\n', encoding="utf-8")
    (d / "config_wrong_type.toml").write_text('limit = "ten"\n', encoding="utf-8")
    (d / "config_not_toml.toml").write_text("limit = \n", encoding="utf-8")
    (d / "replay_latin1.jsonl").write_bytes(b'{"prompt": "caf\xe9", "response": "Score: 3"}\n')
    rec = [{"item_id": r["id"], "judge": "j", "criterion": "fluency", "score": 3} for r in _ROWS]
    (d / "recorded.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rec), encoding="utf-8")
    (d / "recorded_bad_score.jsonl").write_text(
        json.dumps(rec[0]) + "\n" + json.dumps({**rec[1], "score": "high"}) + "\n", encoding="utf-8"
    )
    (d / "recorded_part.jsonl").write_text(json.dumps(rec[0]) + "\n", encoding="utf-8")
    (d / "recorded_latin1.jsonl").write_bytes(
        b'{"item_id": "caf\xe9", "judge": "j", "criterion": "fluency"}\n'
    )
    (d / "deep.jsonl").write_text(good + "\n" + "[" * 100_000 + "]" * 100_000 + "\n", encoding="utf-8")
    (d / "slot_loop.txt").write_text(
        _PROMPT.replace("Summary:", "Summary:{% for i in range(10000) %} {{ summary }}{% endfor %}"),
        encoding="utf-8",
    )
    (d / "long.jsonl").write_text(json.dumps({**_ROWS[0], "output": "word " * 3000}) + "\n", encoding="utf-8")
    huge = "1" * 5000  # past the 4,300 digits Python converts to an integer
    label = good.replace('"x0"', '"y"').replace('"fluency": 1.0', f'"fluency": {huge}')
    (d / "huge_label.jsonl").write_text(good + "\n" + label + "\n", encoding="utf-8")
    (d / "config_huge.json").write_text(f'{{"limit": {huge}}}', encoding="utf-8")
    (d / "pipeline_huge.json").write_text(f'{{"name": "granularity", "params": {{"scale": {huge}}}}}')
    (d / "promptfoo_huge.json").write_text(f'{{"results": {{"results": [{{"score": {huge}}}]}}}}')
    fifo = d / "fifo"
    if hasattr(os, "mkfifo") and not fifo.exists():
        os.mkfifo(fifo)
    (d / "pairs.jsonl").write_text(
        json.dumps({"id": "p", "output": "a", "output_b": "b", "preference": {"fluency": "A"}}) + "\n",
        encoding="utf-8",
    )
    return d


_TASK = (
    "-b jsonl:{d}/bench.jsonl -c fluency --prompt {d}/prompt.txt --backend openai:stub-model --base-url {url}"
)
_J = f"judge {_TASK} --no-progress --no-cache"
"""A judge command line that would work: each judge case overrides one option (the last value wins)."""
_C = f"compare {_TASK} --no-progress --no-cache --out {{d}}/cmp"
_S = f"search {_TASK} --no-progress --no-cache --out {{d}}/search/pipeline.json --budget 5 --no-plot"


def _case(name: str, line: str, expect: str) -> BadInput:
    """A case whose command line is written as a shell would read it (``''`` an empty value)."""
    return BadInput(name, tuple(shlex.split(line)), expect)


def _j(name: str, expect: str, line: str = "") -> BadInput:
    return _case(name, f"{_J} {line}", expect)


def _c(name: str, expect: str, line: str = "") -> BadInput:
    return _case(name, f"{_C} {line}", expect)


def _s(name: str, expect: str, line: str = "") -> BadInput:
    return _case(name, f"{_S} {line}", expect)


BAD_INPUTS: tuple[BadInput, ...] = (
    # options with a bad value
    _j("negative limit", "'--limit' parameter", "-n -3"),
    _j("limit -1", "'--limit' parameter", "-n -1"),
    _j("limit not a number", "invalid value for '--limit'", "-n abc"),
    _j("zero samples", "'--samples' parameter", "--samples 0"),
    _j("zero max tokens", "'--max-tokens' parameter", "--max-tokens 0"),
    _j("zero concurrency", "'--concurrency' parameter", "--concurrency 0"),
    _j("negative temperature", "'--temperature' parameter", "--temperature -0.5"),
    _j("temperature too high", "'--temperature' parameter", "--temperature 5"),
    _j("temperature nan", "'--temperature' parameter", "--temperature nan"),
    _j("unknown reducer", "'--reducer' parameter", "--reducer foo"),
    _j("unknown scoring", "'--scoring' parameter", "--scoring logits"),
    _j("zero timeout", "'--timeout' parameter", "--timeout 0"),
    _j("negative timeout", "'--timeout' parameter", "--timeout -3"),
    _j("zero patience", "'--patience' parameter", "--patience 0"),
    _j("negative stop-after", "'--stop-after' parameter", "--stop-after -1"),
    _j("reversed scale", "min < max", "--scale 5,1"),
    _j("scale not numbers", "--scale as min,max", "--scale low,high"),
    _j("unknown option", "no such option", "--frobnicate"),
    _case("unknown command", "frobnicate", "no such command"),
    # backends
    _j("unknown backend", "unknown backend spec", "--backend gpt5"),
    _j("backend without model", "names no model", "--backend openai:"),
    _j("model name with a newline", "line breaks", "--backend 'openai:gpt-4o\nmini'"),
    _j("model name with a tab", "control characters", "--backend 'anthropic:claude\tx'"),
    _j("missing gguf", "no such file", "--backend local:{d}/missing.gguf --base-url ''"),
    _j("file that is not gguf", "gguf model file", "--backend local:{d}/not_gguf.gguf --base-url ''"),
    _case(
        "missing api key",
        "judge -b jsonl:{d}/bench.jsonl -c fluency --prompt {d}/prompt.txt --backend openai:gpt-4o-mini "
        "--no-progress",
        "OPENAI_API_KEY",
    ),
    _j("base url not a url", "base url", "--base-url 'not a url'"),
    _j("base url without scheme", "base url", "--base-url localhost:8000/v1"),
    _j("base url port out of range", "base url", "--base-url http://127.0.0.1:99999/v1"),
    _j("base url ftp", "base url", "--base-url ftp://example.org/v1"),
    _j("base url for the local backend", "--base-url applies", "--backend local"),
    _j("timeout for the local backend", "--timeout applies", "--backend local --base-url '' --timeout 5"),
    _j("missing replay file", "replay file", "--backend replay:{d}/missing.jsonl --base-url ''"),
    _j("replay file not utf-8", "utf-8", "--backend replay:{d}/replay_latin1.jsonl --base-url ''"),
    # large runs: transport and batch mode
    _j("unknown transport", "'--transport' parameter", "--transport websocket"),
    _j(
        "transport on an anthropic backend",
        "--transport applies",
        "--backend anthropic:claude-x --transport direct",
    ),
    _j("unknown guided decoding", "'--guided' parameter", "--guided outlines"),
    _j("guided on the local backend", "--guided applies", "--backend local --base-url '' --guided vllm"),
    _j("guided server without a url", "expected --base-url", "--base-url '' --guided sglang"),
    _j("batch without a run dir", "--batch needs --run-dir", "--batch"),
    _j(
        "batch on the local backend",
        "batch mode needs",
        "--backend local --base-url '' --run-dir {d}/batch_run --batch",
    ),
    _j(
        "batch on the dspy backend",
        "batch mode needs",
        "--backend dspy:openai/gpt-4o-mini --run-dir {d}/batch_run --batch",
    ),
    _j(
        "negative batch retries",
        "'--batch-retries' parameter",
        "--run-dir {d}/batch_run --batch --batch-retries -1",
    ),
    _j("batch retries without batch", "--batch-retries applies with --batch", "--batch-retries 2"),
    # prompt and system files
    _j("missing prompt", "does not exist", "--prompt {d}/missing.txt"),
    _j("prompt is a folder", "is a directory", "--prompt {d}/empty_folder"),
    _j("prompt not utf-8", "utf-8", "--prompt {d}/latin1.txt"),
    _j("prompt without a slot for the text", "slot for the judged text", "--prompt {d}/no_slot.txt"),
    _j("prompt slot no item has", "no lm call was made", "--prompt {d}/unknown_slot.txt"),
    _j("missing system file", "does not exist", "--system {d}/missing.txt"),
    _j("system file not utf-8", "utf-8", "--system {d}/latin1.txt"),
    # data
    _j("unknown benchmark", "expected a benchmark name", "-b nope"),
    _j("jsonl without a path", "path after 'jsonl:'", "-b jsonl:"),
    _j("missing jsonl", "no such file", "-b jsonl:{d}/missing.jsonl"),
    _j("jsonl not utf-8", "latin1.jsonl:2", "-b jsonl:{d}/latin1.jsonl"),
    _j("jsonl lone surrogate escape", "surrogate.jsonl:2", "-b jsonl:{d}/surrogate.jsonl"),
    _j("jsonl invalid json", "bad_json.jsonl:2", "-b jsonl:{d}/bad_json.jsonl"),
    _j("jsonl row without id", "no_id.jsonl:2", "-b jsonl:{d}/no_id.jsonl"),
    _j("empty jsonl", "at least one row", "-b jsonl:{d}/empty.jsonl"),
    _j("unknown criterion", "expected a criterion", "-c coherence"),
    # output folders
    _j("run dir under a file", "--run-dir", "--run-dir {d}/a_file/run"),
    _j("run dir is a file", "is a file", "--run-dir {d}/a_file"),
    _j("run dir under /proc", "--run-dir", "--run-dir /proc/mitigate-run"),
    _j("run dir is /proc", "--run-dir", "--run-dir /proc"),
    _j("journal is a folder", "is a directory", "--run-dir {d}/journal_dir"),
    _j("missing pipeline file", "does not exist", "--pipeline @{d}/missing.json"),
    _j("pipeline not json", "pipeline", "--pipeline @{d}/pipeline_bad.json"),
    _j("pipeline not utf-8", "utf-8", "--pipeline @{d}/pipeline_latin1.json"),
    # other commands
    _case("unknown built-in prompt", "prompts nope", "unknown built-in prompt"),
    _case("report of a missing folder", "report {d}/missing", "does not exist"),
    _case("report of a file", "report {d}/a_file", "is a file"),
    _case("report of a folder without results", "report {d}/empty_folder", "results.json"),
    _c("compare without pipelines", "at least one --pipeline", ""),
    _c("compare negative limit", "'--limit' parameter", "-p baseline -n -1"),
    _c("compare unknown mitigation", "unknown mitigation", "-p nosuchthing"),
    _c("compare out under a file", "--out", "-p baseline --out {d}/a_file/cmp"),
    _c("compare zero patience", "'--patience' parameter", "-p baseline --patience 0"),
    _c(
        "compare batch on the local backend",
        "batch mode needs",
        "-p baseline --backend local --base-url '' --batch",
    ),
    _c("compare unknown transport", "'--transport' parameter", "-p baseline --transport http3"),
    _c("compare train fraction 0", "--train", "-p random-demos(k=2) --train 0"),
    _c("compare train fraction above 1", "--train", "-p random-demos(k=2) --train 1.5"),
    _c("compare train benchmark unknown", "expected a benchmark name", "-p baseline --train nope"),
    _c("compare train sharing documents", "document", "-p random-demos(k=2) --train jsonl:{d}/bench.jsonl"),
    _c("compare unfitted entry without train", "--train", "-p random-demos(k=2)"),
    _c("compare missing recorded file", "no such file", "--recorded {d}/missing.jsonl"),
    _c("compare recorded not utf-8", "recorded_latin1.jsonl:1", "--recorded {d}/recorded_latin1.jsonl"),
    _c("compare recorded bad score", "recorded_bad_score.jsonl:2", "--recorded {d}/recorded_bad_score.jsonl"),
    _c(
        "compare recorded not covering the items", "recorded_part.jsonl", "--recorded {d}/recorded_part.jsonl"
    ),
    _c("compare recorded unknown criterion", "criterion", "--recorded {d}/recorded.jsonl -c coherence"),
    _c("compare released on another benchmark", "released", "--released chatgpt-h2h"),
    _c("compare released repository missing", "does not exist", "--released llmbar:{d}/no_llmbar_copy"),
    _c("compare released layout without a path", "expected '<layout>:<path>", "--released judgebench:"),
    _c(
        "compare config unknown key",
        "config_unknown_key.toml:2: unknown key 'limitt'",
        "-p baseline -f {d}/config_unknown_key.toml",
    ),
    _c(
        "compare config wrong type",
        "config_wrong_type.toml:1: expected 'limit' to be an integer",
        "-p baseline -f {d}/config_wrong_type.toml",
    ),
    _c(
        "compare config not toml",
        "config_not_toml.toml:1: expected valid TOML",
        "-p baseline -f {d}/config_not_toml.toml",
    ),
    _c("compare config missing", "expected a config file", "-p baseline -f {d}/no_such_config.toml"),
    _c(
        "compare plugin not found",
        "plugin module 'no_such_plugin' was not found",
        "-p baseline --plugin no_such_plugin",
    ),
    _j(
        "judge refused option names the one it meant",
        "did you mean '1-100'",
        "--pipeline granularity(scale=100)",
    ),
    _case(
        "compare pairwise without a prompt",
        "compare -b jsonl:{d}/pairs.jsonl -c fluency --backend openai:stub-model --base-url {url} "
        "--no-progress --no-cache --out {d}/cmp -p baseline",
        "pairwise",
    ),
    _j("judge out is a folder", "is a directory", "--out {d}/empty_folder"),
    _j("judge out under a file", "--out", "--out {d}/a_file/rows.jsonl"),
    _s("search negative limit", "'--limit' parameter", "-n -1"),
    _s("search zero k", "'--k' parameter", "--k 0"),
    _s("search zero budget", "'--budget' parameter", "--budget 0"),
    _s("search two splits", "--splits", "--splits 0.5,0.5"),
    _s("search unknown selector", "unknown selector", "--selector bogus"),
    _s("search unknown engine", "engine", "--engine bogus"),
    _s(
        "search transport on the local backend",
        "--transport applies",
        "--backend local --base-url '' --transport direct",
    ),
    _s("search unknown scoring", "'--scoring' parameter", "--scoring logits"),
    _c(
        "compare guided on an anthropic backend",
        "--guided applies",
        "--backend anthropic:claude-x --guided vllm",
    ),
    _s("search out is a folder", "is a directory", "--out {d}/empty_folder"),
    _j("judge data is a folder", "is a directory", "-b jsonl:{d}/empty_folder"),
    _j("judge data is a FIFO", "is a FIFO", "-b jsonl:{d}/fifo"),
    _j("judge data is /dev/zero", "is a character device", "-b jsonl:/dev/zero"),
    _j("judge prompt is a FIFO", "is a FIFO", "--prompt {d}/fifo"),
    _j("judge prompt is /dev/zero", "is a character device", "--prompt /dev/zero"),
    _j("judge system is a FIFO", "is a FIFO", "--system {d}/fifo"),
    _j("judge data nested too deep", "nested too deep", "-b jsonl:{d}/deep.jsonl"),
    _j(
        "judge credentials in the base url", "without credentials", "--base-url http://user:pw@127.0.0.1:9/v1"
    ),
    _j("judge a billion samples", "--max-samples", "--samples 1000000000"),
    _j(
        "judge prompt over the size cap",
        "max_prompt_chars",
        "-b jsonl:{d}/long.jsonl --max-prompt-chars 5000",
    ),
    _j(
        "judge prompt repeating a slot in a loop",
        "would fill the prompt",
        "-b jsonl:{d}/long.jsonl --prompt {d}/slot_loop.txt",
    ),
    _j(
        "judge dry run of a prompt repeating a slot in a loop",
        "would fill the prompt",
        "-b jsonl:{d}/long.jsonl --prompt {d}/slot_loop.txt --dry-run",
    ),
    _j("judge zero deadline", "'--deadline' parameter", "--deadline 0"),
    _j("judge zero response cap", "'--max-response-bytes' parameter", "--max-response-bytes 0"),
    _j("judge out is a FIFO", "is a FIFO", "--out {d}/fifo"),
    _c("compare a billion samples", "--max-samples", "--samples 1000000000"),
    # numbers longer than Python converts, and files that are no files (issue 45)
    _j(
        "judge data with a 5000-digit integer",
        "huge_label.jsonl:2: expected",
        "-b jsonl:{d}/huge_label.jsonl",
    ),
    _c(
        "compare json config with a 5000-digit integer",
        "config_huge.json:1: expected valid JSON; expected numbers of at most",
        "-p baseline -f {d}/config_huge.json",
    ),
    _j("judge pipeline spec with a 5000-digit integer", "digits", "--pipeline @{d}/pipeline_huge.json"),
    _j("judge pipeline spec that is a FIFO", "is a FIFO", "--pipeline @{d}/fifo"),
    _case(
        "convert a promptfoo file with a 5000-digit integer",
        "data convert {d}/promptfoo_huge.json --from promptfoo --out {d}/converted.jsonl",
        "expected numbers of at most",
    ),
    _case("convert a FIFO", "data convert {d}/fifo --from promptfoo --out {d}/converted.jsonl", "is a FIFO"),
    _case(
        "convert /dev/zero",
        "data convert /dev/zero --from promptfoo --out {d}/converted.jsonl",
        "is a character device",
    ),
    _case(
        "convert an inspect log that is a FIFO",
        "data convert {d}/fifo --from inspect --out {d}/converted.jsonl",
        "is a FIFO",
    ),
    _case(
        "convert an inspect log at /dev/zero",
        "data convert /dev/zero --from inspect --out {d}/converted.jsonl",
        "is a character device",
    ),
)


def expand(case: BadInput, folder: Path | str, url: str) -> list[str]:
    """The case's command line with ``{d}`` and ``{url}`` filled in."""
    return [a.replace("{d}", str(folder)).replace("{url}", url) for a in case.args]
