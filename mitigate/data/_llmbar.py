"""LLMBar (Zeng et al. 2024, "Evaluating large language models at evaluating instruction following"), read
from a copy of its repository (github.com/princeton-nlp/LLMBar; ``docs/released_pairwise.md``): the sets under
``Dataset/``, each judge's raw answers per prompting strategy in both orders
(``evaluators/<model>/<strategy>/result.json``, ``winner`` mapped back to the original output; the Swap
strategies add a synthesising call when the two orders disagree, the rating strategies rate each output
alone), and the prompt of each call (``LLMEvaluator/``; without it the format "Output (a)" / "Output (b)" is
declared).

Item ids are ``"<set>/<index>"`` (``"LLMBar/Natural/0"``); gold ``preference`` "A" for label 1, "B" for 2,
criterion ``overall``. Nothing is parsed here.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from mitigate.data._jsonl import file_error, read_json
from mitigate.data._released_pairwise import (
    RELEASE_CRITERION,
    PairwiseRelease,
    ReleasedAnswer,
    TemplateSource,
)
from mitigate.data._schema import Benchmark, Item
from mitigate.errors import DataError

LLMBAR_SETS = (
    "LLMBar/Natural",
    "LLMBar/Adversarial/Neighbor",
    "LLMBar/Adversarial/GPTInst",
    "LLMBar/Adversarial/GPTOut",
    "LLMBar/Adversarial/Manual",
)
"""The five sets of LLMBar proper (100 + 134 + 92 + 47 + 46 = 419 instances): the default of the loaders."""

_HINT = "LLMBar comes from github.com/princeton-nlp/LLMBar (folders Dataset/ and LLMEvaluator/)"
_WINNER: dict[Any, Literal["A", "B"] | None] = {"1": "A", "2": "B", 1: "A", 2: "B", None: None}


def _layout(path: str | Path) -> tuple[Path, Path | None, list[str]]:
    """(Dataset folder, repository folder or None, the set names a path points at)."""
    p = Path(path)
    if not p.exists():
        raise DataError(
            f"expected an LLMBar folder (the repository, its Dataset/ or one set); {p} does not "
            f"exist. {_HINT}"
        )
    if (p / "dataset.json").is_file():  # one set: find the Dataset folder above it
        for parent in p.resolve().parents:
            if parent.name == "Dataset":
                rel = p.resolve().relative_to(parent).as_posix()
                return parent, parent.parent, [rel]
        return p.parent, None, [p.name]
    dataset = p / "Dataset" if (p / "Dataset").is_dir() else p
    repo = dataset.parent if dataset.name == "Dataset" else None
    found = sorted(
        f.parent.relative_to(dataset).as_posix()
        for f in dataset.rglob("dataset.json")
        if "evaluators" not in f.relative_to(dataset).parts
    )
    if not found:
        raise DataError(
            f"expected LLMBar sets (folders holding dataset.json) under {dataset}; found none. {_HINT}"
        )
    return dataset, repo, found


def _choose_sets(found: list[str], sets: str | Sequence[str] | None) -> list[str]:
    if sets is None:
        return [s for s in LLMBAR_SETS if s in found] or found
    if sets == "all":
        return found
    wanted = [sets] if isinstance(sets, str) else list(sets)
    unknown = [s for s in wanted if s not in found]
    if unknown:
        raise DataError(f"expected LLMBar sets among {found}; got {unknown}")
    return wanted


def _instance(row: Any, path: Path, index: int) -> tuple[str, str, str, Literal["A", "B"]]:
    if not isinstance(row, dict):
        raise file_error(
            path,
            f"instance {index}: expected an object with input, output_1, output_2 and label; got "
            f"{type(row).__name__}",
        )
    texts = [row.get(k) for k in ("input", "output_1", "output_2")]
    bad = [k for k in ("input", "output_1", "output_2") if not isinstance(row.get(k), str)]
    if bad:
        raise file_error(
            path, f"instance {index}: expected strings 'input', 'output_1' and 'output_2'; {bad} are not"
        )
    label = row.get("label")
    gold = _WINNER.get(label) if isinstance(label, int | str) and not isinstance(label, bool) else None
    if gold is None:
        raise file_error(path, f"instance {index}: expected 'label' 1 or 2; got {row.get('label')!r}")
    return texts[0], texts[1], texts[2], gold  # type: ignore[return-value]


def _set_items(dataset: Path, name: str) -> list[Item]:
    path = dataset / name / "dataset.json"
    rows = read_json(path)
    if not isinstance(rows, list) or not rows:
        raise file_error(path, f"expected a non-empty JSON list of instances; got {type(rows).__name__}")
    items = []
    for index, row in enumerate(rows):
        instruction, out_1, out_2, gold = _instance(row, path, index)
        item_id = f"{name}/{index}"
        items.append(
            Item(
                id=item_id,
                doc_id=item_id,
                inputs={"input": instruction},
                output=out_1,
                output_b=out_2,
                preference={RELEASE_CRITERION: gold},
                meta={"set": name, "index": index},
            )
        )
    return items


def load_llmbar(path: str | Path, *, sets: str | Sequence[str] | None = None) -> Benchmark:
    """The LLMBar instances at ``path`` as a pairwise benchmark: ``sets`` None for LLMBar proper (or the
    one set ``path`` points at), ``"all"``, or set names."""
    dataset, _, found = _layout(path)
    chosen = _choose_sets(found, sets)
    items = [it for name in chosen for it in _set_items(dataset, name)]
    label = "llmbar" if chosen == [s for s in LLMBAR_SETS if s in found] else "llmbar:" + ",".join(chosen)
    return Benchmark(
        name=label,
        items=tuple(items),
        criteria=(RELEASE_CRITERION,),
        description=f"LLMBar pairwise instances ({', '.join(chosen)}); gold = the objectively "
        "better output (label 1 -> A, 2 -> B); no ties",
    )


def _templates(repo: Path | None, model: str, strategy: str) -> list[TemplateSource]:
    """The template of each call of a judge's strategy (from its config), or a declared format when absent."""
    config = (
        None if repo is None else repo / "LLMEvaluator" / "evaluators" / "config" / model / f"{strategy}.json"
    )
    rating = strategy.startswith("Rating")
    if config is None or not config.is_file():
        key = f"declared:{'rating' if rating else 'output-ab'}{'-cot' if 'CoT' in strategy else ''}"
        return [
            TemplateSource(
                key=key, answer="score" if rating else "pairwise", labels=None if rating else ("a", "b")
            )
        ]
    modules = read_json(config)
    if not isinstance(modules, list) or not all(
        isinstance(m, dict) and isinstance(m.get("prompt"), str) for m in modules
    ):
        raise file_error(config, "expected a JSON list of calls, each with a 'prompt' file name")
    out = []
    for m in modules:
        rel = f"LLMEvaluator/evaluators/prompts/{m['prompt']}"
        file = repo / rel  # type: ignore[operator]
        if not file.is_file():
            raise file_error(config, f"names the prompt {m['prompt']!r}, which is missing at {file}")
        answer: Literal["pairwise", "score"] = "score" if m["prompt"].startswith("rating/") else "pairwise"
        out.append(TemplateSource(key=m["prompt"], text=_cached_text(str(file)), answer=answer, path=rel))
    return out


@functools.lru_cache(maxsize=64)
def _cached_text(path: str) -> str:
    return Path(path).read_text(encoding="utf-8")


def _completion(value: Any, where: str) -> str:
    if isinstance(value, list) and value and isinstance(value[0], str):
        return value[0]
    raise DataError(f"{where}: expected a completion [text, finish_reason]; got {str(value)[:60]!r}")


def _order_answers(entry: Any, where: str) -> dict[str, tuple[str, Literal["A", "B"] | None]]:
    if not isinstance(entry, dict):
        raise DataError(
            f"{where}: expected an object with 'swap = False' and 'swap = True'; got {type(entry).__name__}"
        )
    out = {}
    for order, key in (("original", "swap = False"), ("swapped", "swap = True")):
        got = entry.get(key)
        if not isinstance(got, dict):
            raise DataError(
                f"{where}: expected {key!r} with a completion and a winner; got {str(got)[:60]!r}"
            )
        if not isinstance(got.get("winner"), str | int | None) or got.get("winner") not in _WINNER:
            raise DataError(f"{where}: expected {key!r} winner '1', '2' or null; got {got.get('winner')!r}")
        out[order] = (_completion(got.get("completion"), f"{where} {key!r}"), _WINNER[got.get("winner")])
    return out


def _strategy_answers(
    rows: list[Any], set_name: str, judge: str, strategy: str, templates: list[TemplateSource], path: Path
) -> list[ReleasedAnswer]:
    out: list[ReleasedAnswer] = []
    rating = strategy.startswith("Rating")
    swap = strategy.startswith("Swap")
    final_t = templates[-1].key
    for index, row in enumerate(rows):
        where = f"{path}: instance {index}"
        results = row.get("results") if isinstance(row, dict) else None
        if not isinstance(results, list) or not results:
            raise file_error(path, f"expected a non-empty 'results' list; got {str(results)[:60]!r}", where)
        item_id = f"{set_name}/{index}"
        if rating:
            last = results[-1]
            if not isinstance(last, dict):
                raise file_error(path, "expected the rating entry with score_1 and score_2", where)
            for part, key in (("score_a", "score_1"), ("score_b", "score_2")):
                out.append(
                    ReleasedAnswer(
                        item_id=item_id,
                        judge=judge,
                        part=part,  # type: ignore[arg-type]
                        raw=_completion(last.get(key), f"{where} {key!r}"),
                        template=final_t,
                    )
                )
            continue
        stages = [r for r in results if isinstance(r, dict)] if swap else [results[-1]]
        for stage_no, entry in enumerate(stages, start=1):
            template = templates[min(stage_no, len(templates)) - 1].key if swap else final_t
            for order, (raw, winner) in _order_answers(entry, where).items():
                out.append(
                    ReleasedAnswer(
                        item_id=item_id,
                        judge=judge,
                        order=order,  # type: ignore[arg-type]
                        stage=stage_no,
                        final=stage_no == len(stages),
                        raw=raw,
                        template=template,
                        release_verdict=winner,
                    )
                )
    return out


def _stats(path: Path) -> dict[str, str | float]:
    if not path.is_file():
        return {}
    raw = read_json(path)
    return {k: v for k, v in raw.items() if isinstance(v, str | float | int)} if isinstance(raw, dict) else {}


def read_llmbar(
    path: str | Path, *, sets: str | Sequence[str] | None = None, judges: str | None = None
) -> PairwiseRelease:
    """The LLMBar release at ``path``: benchmark, every raw judge answer, templates and the paper's
    statistics. Judges are named ``"<model>/<strategy>"`` (``"GPT-4/CoT"``); ``judges`` is a glob over those
    names, ``sets`` as in :func:`load_llmbar`."""
    dataset, repo, found = _layout(path)
    chosen = _choose_sets(found, sets)
    bench = load_llmbar(path, sets=chosen)
    answers: list[ReleasedAnswer] = []
    templates: dict[str, TemplateSource] = {}
    names: dict[str, dict[str, str]] = {}
    stats: dict[str, dict[str, str | float]] = {}
    for set_name in chosen:
        root = dataset / set_name / "evaluators"
        for result in sorted(root.glob("*/*/result.json")):
            model, strategy = result.parent.parent.name, result.parent.name
            judge = f"{model}/{strategy}"
            srcs = _templates(repo, model, strategy)
            for s in srcs:
                templates.setdefault(s.key, s)
            rows = read_json(result)
            if not isinstance(rows, list):
                raise file_error(result, f"expected a JSON list of instances; got {type(rows).__name__}")
            answers += _strategy_answers(rows, set_name, judge, strategy, srcs, result)
            names.setdefault(judge, {"model": model, "strategy": strategy})
            stats[f"{set_name}|{judge}"] = _stats(result.parent / "statistics.json")
    # auxiliary calls (Metrics questions, Reference outputs) judge nothing
    used = {a.template for a in answers}
    templates = {k: v for k, v in templates.items() if k in used}
    return PairwiseRelease(
        source=f"llmbar:{path}",
        benchmark=bench,
        answers=tuple(answers),
        templates=templates,
        judges=tuple(names),
        judge_info=names,
        release_stats=stats,
    ).select(judges)
