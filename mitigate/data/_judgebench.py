"""JudgeBench (Tan et al. 2024, "JudgeBench: a benchmark for evaluating LLM-based judges"), read from a copy
of its repository (github.com/ScalerLab/JudgeBench; ``docs/released_pairwise.md``): the response pairs of
``data/``, each judge's two judgments per pair (as given, then swapped; ``decision`` by presentation) in
``outputs/``, and the prompted judges' templates in ``utils/templates/``. A copy without those templates is
refused, naming the missing files, when a prompted judge is read; judges whose prompt JudgeBench does not ship
(not in :data:`JUDGE_TEMPLATES`) are read by their release decisions, reward models by their two rewards.

Judges are named ``"<judge_name>/<judge_model>@<response_model>"``; item ids are the ``pair_id`` s,
``meta["category"]`` the paper's grouping of the sources. Nothing is parsed here.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

from mitigate.data._jsonl import file_error, read_json_lines
from mitigate.data._released_pairwise import (
    RELEASE_CRITERION,
    PairwiseRelease,
    ReleasedAnswer,
    TemplateSource,
)
from mitigate.data._schema import Benchmark, Item
from mitigate.errors import DataError

JUDGE_TEMPLATES: dict[str, tuple[str, str | None]] = {
    "arena_hard": ("arena_hard_judge_prompt", "arena_hard_judge_system"),
    "vanilla": ("vanilla_prompt", None),
    "panda_lm": ("pandalm_prompt", None),
    "prometheus_2": ("prometheus2_prompt", None),
    "judge_lm": ("judgelm_prompt", None),
    "auto_j": ("autoj_prompt", None),
    "skywork_critic": ("skywork_critic_prompt", None),
}
"""JudgeBench judge name -> (user template, system template) under ``utils/templates/`` (no ``.jinja2``)."""

_HINT = "JudgeBench comes from github.com/ScalerLab/JudgeBench (folders data/, outputs/ and utils/templates/)"
_LABEL: dict[str, Literal["A", "B", "tie"]] = {"A>B": "A", "B>A": "B", "A=B": "tie"}
_FLIP: dict[str, Literal["A", "B", "tie"]] = {"A": "B", "B": "A", "tie": "tie"}
_OUT_NAME = re.compile(
    r"dataset=judgebench,response_model=(?P<rm>[^,]+),judge_name=(?P<jn>[^,]+),"
    r"judge_model=(?P<jm>.+)\.jsonl$"
)
_DATA_NAME = re.compile(r"dataset=judgebench,response_model=(?P<rm>.+)\.jsonl$")


def category(source: str) -> str:
    """The paper's category of a pair's source: knowledge, reasoning, math or coding."""
    s = source.lower()
    if s.startswith("mmlu"):
        return "knowledge"
    if s.startswith("livecodebench"):
        return "coding"
    if "math" in s:
        return "math"
    if "reasoning" in s:
        return "reasoning"
    return s.split("-")[0]


def _repo(path: str | Path) -> Path:
    p = Path(path)
    if not (p / "data").is_dir():
        raise DataError(
            f"expected a JudgeBench repository folder with data/ (and outputs/); got {p}. {_HINT}"
        )
    return p


def _gold(value: Any, path: Path, line: int) -> Literal["A", "B"]:
    got = _LABEL.get(value) if isinstance(value, str) else None
    if got not in ("A", "B"):
        raise DataError(f'{path}:{line}: expected \'label\' "A>B" or "B>A"; got {value!r}', path=str(path))
    return got


def _item(row: Any, path: Path, line: int) -> Item:
    if not isinstance(row, dict):
        raise file_error(path, f"expected a JSON object; got {type(row).__name__}", f"{path}:{line}")
    keys = ("pair_id", "question", "response_A", "response_B", "source")
    bad = [k for k in keys if not isinstance(row.get(k), str) or (k == "pair_id" and not row.get(k))]
    if bad:
        raise file_error(
            path, f"expected strings {list(keys)}; {bad} are missing or not strings", f"{path}:{line}"
        )
    model = str(row.get("response_model") or "")
    return Item(
        id=row["pair_id"],
        doc_id=row["pair_id"],
        inputs={"question": row["question"]},
        output=row["response_A"],
        output_b=row["response_B"],
        system=model or None,
        system_b=model or None,
        preference={RELEASE_CRITERION: _gold(row.get("label"), path, line)},
        meta={
            "source": row["source"],
            "category": category(row["source"]),
            "original_id": str(row.get("original_id", "")),
        },
    )


def load_judgebench(path: str | Path, *, response_model: str | None = None) -> Benchmark:
    """The JudgeBench pairs at ``path`` (the repository, or one data file) as a pairwise benchmark, every
    data file or ``response_model``'s."""
    p = Path(path)
    if p.is_file():
        m = _DATA_NAME.search(p.name)
        if m is None or p.parent.name != "data":
            raise DataError(
                "expected a JudgeBench folder or a data file "
                f"data/dataset=judgebench,response_model=<model>.jsonl; got {p}"
            )
        if response_model not in (None, m.group("rm")):
            raise DataError(
                f"expected response_model {m.group('rm')!r} for the data file {p.name}; got "
                f"{response_model!r}"
            )
        path, response_model = p.parent.parent, m.group("rm")
    repo = _repo(path)
    files = sorted(repo.glob("data/dataset=judgebench,response_model=*.jsonl"))
    models = [m.group("rm") for f in files if (m := _DATA_NAME.search(f.name))]
    if response_model is not None:
        if response_model not in models:
            raise DataError(f"expected a JudgeBench response model among {models}; got {response_model!r}")
        files = [f for f, m in zip(files, models, strict=True) if m == response_model]
    if not files:
        raise DataError(f"expected JudgeBench data files under {repo / 'data'}; found none. {_HINT}")
    items: dict[str, Item] = {}
    for file in files:
        for line, _, row in read_json_lines(file):
            item = _item(row, file, line)
            if item.id in items:
                raise file_error(file, f"pair_id {item.id!r} appears twice", f"{file}:{line}")
            items[item.id] = item
    name = "judgebench" if response_model is None else f"judgebench:{response_model}"
    return Benchmark(
        name=name,
        items=tuple(items.values()),
        criteria=(RELEASE_CRITERION,),
        description="JudgeBench response pairs; gold = the objectively correct response; no ties",
    )


def _template(repo: Path, judge_name: str) -> TemplateSource | list[str]:
    """How a judge's answers are read: its template, a declared reader, or the template files it lacks."""
    if judge_name == "reward_model":
        return TemplateSource(key="declared:reward-scores", answer="pairwise")
    names = JUDGE_TEMPLATES.get(judge_name)
    if names is None:  # a judge whose prompt JudgeBench does not ship: documented, its decisions are taken
        return TemplateSource(key="declared:release-decision", answer="pairwise")
    user, system = names
    folder = repo / "utils" / "templates"
    files = [f"utils/templates/{name}.jinja2" for name in (user, system) if name]
    missing = [f for f in files if not (repo / f).is_file()]
    if missing:
        return missing
    system_text = (folder / f"{system}.jinja2").read_text(encoding="utf-8") if system else None
    return TemplateSource(
        key=f"judgebench:{judge_name}",
        text=(folder / f"{user}.jinja2").read_text(encoding="utf-8"),
        system=system_text,
        answer="pairwise",
        labels=("A", "B"),
        path=f"utils/templates/{user}.jinja2",
    )


def _decision(value: Any, where: str) -> Literal["A", "B", "tie"] | None:
    if value is None:
        return None
    got = _LABEL.get(value) if isinstance(value, str) else None
    if got is None:
        raise DataError(f'{where}: expected a decision "A>B", "B>A", "A=B" or null; got {value!r}')
    return got


def _answers(row: dict[str, Any], judge: str, template: str, file: Path, line: int) -> list[ReleasedAnswer]:
    judgments = row.get("judgments")
    where = f"{file}:{line}"
    if not isinstance(judgments, list) or not 1 <= len(judgments) <= 2:
        raise file_error(
            file,
            f"expected 'judgments': one or two entries (as given, then swapped); got {str(judgments)[:60]!r}",
            where,
        )
    out = []
    orders: tuple[Literal["original", "swapped"], ...] = ("original", "swapped")
    for order, entry in zip(orders, judgments, strict=False):
        entry = {} if entry is None else entry  # None: the release recorded no judgment for this order
        if not isinstance(entry, dict):
            raise file_error(file, f"expected a judgment object; got {type(entry).__name__}", where)
        decision = _decision(entry.get("decision"), where)
        if order == "swapped" and decision is not None:
            decision = _FLIP[decision]
        given = entry.get("judgment")
        inner = given if isinstance(given, dict) else {}
        raw = inner.get("response") or ""
        scores = inner.get("scores")
        pair: tuple[float, float] | None = None
        if isinstance(scores, list) and len(scores) == 2 and all(isinstance(s, int | float) for s in scores):
            first, second = float(scores[0]), float(scores[1])
            pair = (first, second) if order == "original" else (second, first)
        out.append(
            ReleasedAnswer(
                item_id=row["pair_id"],
                judge=judge,
                order=order,
                raw=raw if isinstance(raw, str) else "",
                scores=pair,
                template=template,
                release_verdict=decision,
                line=line,
            )
        )
    return out


def read_judgebench(path: str | Path, *, judges: str | None = None) -> PairwiseRelease:
    """The JudgeBench release at ``path``; ``judges`` is a glob over the judge names (``"arena_hard/*"``)."""
    repo = _repo(path)
    bench = load_judgebench(repo)
    known = {it.id for it in bench.items}
    answers: list[ReleasedAnswer] = []
    templates: dict[str, TemplateSource] = {}
    info: dict[str, dict[str, str]] = {}
    missing: dict[str, list[str]] = {}
    for file in sorted(repo.glob("outputs/*.jsonl")):
        m = _OUT_NAME.search(file.name)
        if m is None:
            continue
        judge = f"{m.group('jn')}/{m.group('jm')}@{m.group('rm')}"
        src = _template(repo, m.group("jn"))
        if isinstance(src, list):  # refused below if this judge is asked for
            missing[judge] = src
            src = TemplateSource(key=f"missing:{m.group('jn')}", answer="pairwise")
        templates.setdefault(src.key, src)
        for line, _, row in read_json_lines(file):
            if not isinstance(row, dict) or row.get("pair_id") not in known:
                raise file_error(
                    file,
                    "expected a pair of the data files (a known pair_id); got "
                    f"{str(row.get('pair_id') if isinstance(row, dict) else row)[:60]!r}",
                    f"{file}:{line}",
                )
            answers += _answers(row, judge, src.key, file, line)
        info[judge] = {"model": m.group("jm"), "strategy": m.group("jn"), "response_model": m.group("rm")}
    release = PairwiseRelease(
        source=f"judgebench:{path}",
        benchmark=bench,
        answers=tuple(answers),
        templates=templates,
        judges=tuple(info),
        judge_info=info,
    ).select(judges)
    lacking = [j for j in release.judges if j in missing]
    if lacking:
        files = sorted({f for j in lacking for f in missing[j]})
        raise DataError(
            f"expected the prompt templates the answers of {lacking[0]}"
            f"{f' (and {len(lacking) - 1} more judges)' if len(lacking) > 1 else ''} are read "
            f"with; {repo} lacks {', '.join(files)} (a copy without utils/templates/; {_HINT})",
            path=str(repo),
        )
    used = {a.template for a in release.answers}
    return release.model_copy(update={"templates": {k: v for k, v in release.templates.items() if k in used}})
