"""Replay source for the LLM-judge outputs Shen et al. (2023) released with LLM_summeval (data_format.md): the
judges' answers per system and dimension (``eval_model_generations/``, item ``"<Mx>/<id>"`` of
:func:`~mitigate.data._summeval.load_summeval`) and ChatGPT's head-to-head verdicts in both orders
(``comp_res/``). A response the parser rejects keeps its ParseError message, never a score.

Repeated runs: three ``consistency_mcq`` files hold the documents twice, two ``relevance_altmcq`` files a
partial second pass. Every line is a sample; ``primary`` is the last pass covering every document of the file,
the one whose prompt lengths match the other systems' (the same template).
"""

from __future__ import annotations

import functools
import itertools
import re
from pathlib import Path
from typing import Any, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict

from mitigate.data._jsonl import (
    file_error,
    is_number,
    read_json_lines,
    require_files,
    resolve_root,
    row_error,
)
from mitigate.data._recorded import DEFAULT_VARIANT, RecordedRow, RecordedRun, runs_from_rows
from mitigate.data._schema import Benchmark, Item
from mitigate.data._summeval import CRITERIA, LLM_SUMMEVAL_DIR, LLM_SUMMEVAL_SYSTEMS
from mitigate.errors import DataError, ParseError, ReplayFormatError
from mitigate.parse import parse_mcq, parse_pairwise, parse_score
from mitigate.registry import add, names, registered
from mitigate.scale import Scale

RTS_SCALE = Scale(min=1, max=5, step=0.5)
"""The scale RTS, alternative-RTS and star-rating answers are parsed on: 1-5 with the half points judges
sometimes answer ("Score: 3.5/5"), kept as they are."""

_STARS = re.compile(
    r"(?i)\b(\d+(?:\.\d+)?|zero|one|two|three|four|five|six|seven|eight|nine|ten)[- ]stars?\b"
)

MCQ_SCALE = Scale(min=1, max=5, letters={"A": 1, "B": 2, "C": 3, "D": 4, "E": 5})
"""The MCQ options of Shen et al.: A->1 ... E->5."""


class ReleasedJudgeFiles(NamedTuple):
    """Where a released judge's outputs live: its model folder and its method's file suffix."""

    model: str
    method: str


for _method in ("rts", "mcq", "altrts", "altmcq", "stareval"):
    add("released-judge", f"chatgpt-{_method}", ReleasedJudgeFiles("gpt-3.5-turbo-0301", _method))
add("released-judge", "gpt4-rts", ReleasedJudgeFiles("gpt-4-0314", "rts"))
for _size in ("7b", "13b", "70b"):
    add("released-judge", f"llama2-{_size}-rts", ReleasedJudgeFiles(f"llama-2-{_size}-chat-hf", "rts"))

MCQ_METHODS = frozenset({"mcq", "altmcq"})

H2H_MODEL = "gpt-3.5-turbo-0301"
_PAIR_NAMES = "M10-M20 M12-M13 M13-M15 M14-M8 M15-M14 M17-M12 M20-M11 M22-M23 M23-M17 M8-M9 M9-M10"
H2H_PAIRS: tuple[tuple[str, str], ...] = tuple(
    (a, b) for a, b in (pair.split("-") for pair in _PAIR_NAMES.split())
)
"""The 11 system pairs of the released head-to-head comparisons (first system = ``human_score_1``)."""


def released_judges() -> list[str]:
    """The names :func:`load_released` accepts, e.g. ``"chatgpt-rts"``, ``"llama2-70b-rts"``."""
    return [name for name, files in registered("released-judge").items() if files.method != "h2h"]


def judge_files(judge: str) -> list[str]:
    """The files a judge's outputs live in, relative to the data folder (12 systems x 4 dimensions)."""
    model, method = _judge(judge)
    return [
        f"{LLM_SUMMEVAL_DIR}/eval_model_generations/{model}/eval_{system}_generations/{dim}_{method}.txt"
        for system in LLM_SUMMEVAL_SYSTEMS
        for dim in CRITERIA
    ]


def _judge(judge: str) -> tuple[str, str]:
    if judge not in released_judges():
        raise DataError(f"expected a released judge name, one of {released_judges()}; got {judge!r}")
    return registered("released-judge")[judge]


class ReleasedSample(BaseModel):
    """One released response: its raw text and the parsed score or the parser's complaint (exactly one is
    set); ``run`` counts earlier lines of the file for the same document, ``line`` is 1-based."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    run: int
    raw: str
    score: float | None = None
    error: str | None = None
    line: int
    prompt_len: int | None = None
    total_len: int | None = None


class ReleasedJudgment(BaseModel):
    """All released responses of one judge for one item and dimension; ``primary`` is the headline's."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    item_id: str
    criterion: str
    samples: tuple[ReleasedSample, ...]
    primary: int = 0

    @property
    def sample(self) -> ReleasedSample:
        """The primary sample (see the module docstring); ``score``, ``raw`` and ``error`` are its."""
        return self.samples[self.primary]

    @property
    def score(self) -> float | None:
        return self.sample.score

    @property
    def raw(self) -> str:
        return self.sample.raw

    @property
    def error(self) -> str | None:
        return self.sample.error

    @property
    def scores(self) -> tuple[float | None, ...]:
        """Every sample's parsed score in run order (None for a failed parse)."""
        return tuple(s.score for s in self.samples)


class ReleasedRun(BaseModel):
    """A released judge's outputs over SummEval: item id -> criterion -> :class:`ReleasedJudgment`."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    judge: str
    model: str
    method: str
    scale: Scale
    judgments: dict[str, dict[str, ReleasedJudgment]]

    @property
    def criteria(self) -> tuple[str, ...]:
        """The dimensions judged, in SummEval order."""
        present = {c for per_item in self.judgments.values() for c in per_item}
        return tuple(c for c in CRITERIA if c in present) + tuple(sorted(present - set(CRITERIA)))

    def __len__(self) -> int:
        return sum(len(per_item) for per_item in self.judgments.values())

    def get(self, item_id: str, criterion: str) -> ReleasedJudgment:
        """The judgment for one item and criterion; DataError saying what exists when absent."""
        per_item = self.judgments.get(item_id)
        if per_item is None:
            raise DataError(
                f"expected an item id of the released run {self.judge!r} (e.g. "
                f"{next(iter(self.judgments), '')!r}); got {item_id!r}",
                item_id=item_id,
            )
        if criterion not in per_item:
            raise DataError(
                f"expected one of the criteria {sorted(per_item)} for item {item_id!r}; got {criterion!r}",
                item_id=item_id,
                criterion=criterion,
            )
        return per_item[criterion]

    def scores(self, criterion: str) -> dict[str, float | None]:
        """Item id -> primary parsed score for one criterion (None where parsing failed)."""
        return {i: per[criterion].score for i, per in self.judgments.items() if criterion in per}

    def iter_judgments(self) -> list[ReleasedJudgment]:
        """Every judgment, item by item in load order."""
        return [j for per_item in self.judgments.values() for j in per_item.values()]

    def counts(self) -> dict[str, dict[str, int]]:
        """Per criterion: judgments, samples, primary parse failures and failures over all samples."""
        out: dict[str, dict[str, int]] = {}
        for criterion in self.criteria:
            js = [per[criterion] for per in self.judgments.values() if criterion in per]
            out[criterion] = {
                "judgments": len(js),
                "samples": sum(len(j.samples) for j in js),
                "failures": sum(j.score is None for j in js),
                "sample_failures": sum(s.score is None for j in js for s in j.samples),
            }
        return out

    def parse_failures(self) -> int:
        """How many judgments' primary sample failed to parse."""
        return sum(c["failures"] for c in self.counts().values())

    def summary(self) -> str:
        """One line with the counts, for logs and reports."""
        counts = self.counts()
        samples = sum(c["samples"] for c in counts.values())
        per = ", ".join(f"{c}={v['failures']}" for c, v in counts.items())
        return (
            f"{self.judge} ({self.model}, {self.method}): {len(self)} judgments over {len(self.judgments)} "
            f"items, {samples} samples; parse failures {self.parse_failures()} ({per})"
        )


def stars_as_score(text: str) -> str:
    """Star ratings ("4 stars", "Four stars") rewritten as "Score: 4", a cue the score parser reads."""
    return _STARS.sub(lambda m: f"Score: {m.group(1)}", text)


def _parse(text: str, method: str) -> tuple[float | None, str | None]:
    try:
        if method in MCQ_METHODS:
            return parse_mcq(text, MCQ_SCALE), None
        if method == "stareval":
            return parse_score(stars_as_score(text), RTS_SCALE), None
        return parse_score(text, RTS_SCALE), None
    except ParseError as exc:
        return None, exc.message


def _optional_int(row: dict[str, Any], key: str, path: Path, line: int) -> int | None:
    value = row.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise _bad(path, line, f"expected an integer '{key}'; got {value!r}")
    return value


def _bad(path: Path, line: int, message: str) -> DataError:
    return row_error(path, line, message, error=ReplayFormatError)


def _id_and_resp(row: Any, path: Path, line: int) -> tuple[str, str]:
    """The ``id`` (a SummEval doc id) and ``resp`` (the judge's response) of a released line."""
    if not isinstance(row, dict):
        raise _bad(path, line, f"expected a JSON object {{id, resp, ...}}; got {type(row).__name__}")
    doc_id, resp = row.get("id"), row.get("resp")
    if not isinstance(doc_id, str) or not doc_id:
        raise _bad(path, line, f"expected a non-empty string 'id' (a SummEval doc id); got {doc_id!r}")
    if not isinstance(resp, str):
        raise _bad(path, line, f"expected a string 'resp' (the judge's response); got {type(resp).__name__}")
    return doc_id, resp


def _read_judge_file(path: Path, system: str, criterion: str, method: str) -> list[ReleasedJudgment]:
    per_doc: dict[str, list[ReleasedSample]] = {}
    for line, _, row in read_json_lines(path, error=ReplayFormatError):
        doc_id, resp = _id_and_resp(row, path, line)
        score, error = _parse(resp, method)
        samples = per_doc.setdefault(doc_id, [])
        samples.append(
            ReleasedSample(
                run=len(samples),
                raw=resp,
                score=score,
                error=error,
                line=line,
                prompt_len=_optional_int(row, "prompt_len", path, line),
                total_len=_optional_int(row, "total_len", path, line),
            )
        )
    if not per_doc:
        raise file_error(path, "expected one JSON line per judged summary; the file is empty")
    runs = max(len(s) for s in per_doc.values())
    complete = [r for r in range(runs) if all(len(s) > r for s in per_doc.values())]
    primary = complete[-1] if complete else 0
    return [
        ReleasedJudgment(
            item_id=f"{system}/{doc_id}", criterion=criterion, samples=tuple(samples), primary=primary
        )
        for doc_id, samples in per_doc.items()
    ]


@functools.lru_cache(maxsize=16)
def _load_all(root: str, judge: str) -> ReleasedRun:
    model, method = _judge(judge)
    paths = require_files(
        Path(root),
        judge_files(judge),
        dataset=f"released judge outputs {judge!r}",
        hint="They come from github.com/DAMO-NLP-SG/LLM_summeval, folder eval_model_generations/.",
    )
    judgments: dict[str, dict[str, ReleasedJudgment]] = {}
    files = zip(itertools.product(LLM_SUMMEVAL_SYSTEMS, CRITERIA), paths, strict=True)
    for (system, criterion), path in files:
        for judgment in _read_judge_file(path, system, criterion, method):
            judgments.setdefault(judgment.item_id, {})[criterion] = judgment
    scale = MCQ_SCALE if method in MCQ_METHODS else RTS_SCALE
    return ReleasedRun(judge=judge, model=model, method=method, scale=scale, judgments=judgments)


def load_released(
    judge: str, benchmark: Benchmark | None = None, *, root: str | Path | None = None
) -> ReleasedRun:
    """Load one released judge (a name from :func:`released_judges`) as a :class:`ReleasedRun`, restricted
    to the items of ``benchmark`` when given (DataError naming the items it has no judgment for)."""
    run = _load_all(str(resolve_root(root, "summeval")), judge)
    if benchmark is None:
        return run
    wanted = [c for c in run.criteria if c in benchmark.criteria] or list(run.criteria)
    missing: list[str] = []
    for item in benchmark.items:
        per_item = run.judgments.get(item.id, {})
        gaps = [c for c in wanted if c not in per_item]
        if gaps:
            missing.append(f"{item.id} ({', '.join(gaps)})")
    if missing:
        raise DataError(
            f"expected a released {judge!r} judgment for every item of benchmark {benchmark.name!r}; "
            f"{len(missing)} of {len(benchmark)} items have none, e.g. {missing[:3]} "
            f"(the released outputs cover the 12 systems of load_summeval('llm_summeval'))"
        )
    keep = {item.id for item in benchmark.items}
    return run.model_copy(update={"judgments": {i: per for i, per in run.judgments.items() if i in keep}})


class H2HRecord(BaseModel):
    """One released ChatGPT head-to-head verdict between two systems' summaries of a document: ``verdict``
    by presentation (``order="toggled"`` showed ``system_2``'s first), :attr:`preferred` by system;
    ``human_score_1`` / ``_2`` the mean expert scores."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    system_1: str
    system_2: str
    criterion: str
    doc_id: str
    order: Literal["original", "toggled"]
    raw: str
    human_score_1: float
    human_score_2: float
    verdict: Literal["first", "second", "tie"] | None = None
    error: str | None = None
    line: int
    prompt_len: int | None = None

    @property
    def pair(self) -> str:
        """The pair as the files name it, e.g. ``"M8-M9"``."""
        return f"{self.system_1}-{self.system_2}"

    @property
    def item_ids(self) -> tuple[str, str]:
        """The SummEval item ids of ``system_1``'s and ``system_2``'s summaries."""
        return f"{self.system_1}/{self.doc_id}", f"{self.system_2}/{self.doc_id}"

    @property
    def preferred(self) -> str | None:
        """The system the judge preferred, ``"tie"``, or None when the verdict failed to parse."""
        if self.verdict is None:
            return None
        text = _by_text(self.verdict, self.order == "original")
        return {"A": self.system_1, "B": self.system_2}.get(text, "tie")

    @property
    def human_preferred(self) -> str:
        """The system with the higher mean expert score, or ``"tie"`` when they are equal."""
        if abs(self.human_score_1 - self.human_score_2) < 1e-9:
            return "tie"
        return self.system_1 if self.human_score_1 > self.human_score_2 else self.system_2


def h2h_files() -> list[str]:
    """The head-to-head files, relative to the data folder (11 pairs x 4 dimensions x 2 orders)."""
    return [
        f"{LLM_SUMMEVAL_DIR}/comp_res/{H2H_MODEL}/{a}-{b}_{dim}{suffix}.result"
        for a, b in H2H_PAIRS
        for dim in CRITERIA
        for suffix in ("", "_toggle")
    ]


def _h2h_record(row: Any, path: Path, line: int, pair: tuple[str, str], dim: str, order: str) -> H2HRecord:
    doc_id, resp = _id_and_resp(row, path, line)
    humans = []
    for key in ("human_score_1", "human_score_2"):
        value = row.get(key)
        if not is_number(value):
            raise _bad(path, line, f"expected a number '{key}'; got {value!r}")
        humans.append(float(value))
    verdict: Literal["first", "second", "tie"] | None = None
    error: str | None = None
    try:
        verdict = parse_pairwise(resp, ("A", "B"), tie="C")
    except ParseError as exc:
        error = exc.message
    return H2HRecord(
        system_1=pair[0],
        system_2=pair[1],
        criterion=dim,
        doc_id=doc_id,
        order="toggled" if order == "_toggle" else "original",
        raw=resp,
        human_score_1=humans[0],
        human_score_2=humans[1],
        verdict=verdict,
        error=error,
        line=line,
        prompt_len=_optional_int(row, "prompt_len", path, line),
    )


@functools.lru_cache(maxsize=4)
def _load_h2h(root: str) -> tuple[H2HRecord, ...]:
    paths = require_files(
        Path(root),
        h2h_files(),
        dataset="released head-to-head verdicts",
        hint="They come from github.com/DAMO-NLP-SG/LLM_summeval, folder comp_res/gpt-3.5-turbo-0301/.",
    )
    files = zip(itertools.product(H2H_PAIRS, CRITERIA, ("", "_toggle")), paths, strict=True)
    return tuple(
        _h2h_record(row, path, line, pair, dim, order)
        for (pair, dim, order), path in files
        for line, _, row in read_json_lines(path, error=ReplayFormatError)
    )


def load_head_to_head(*, root: str | Path | None = None) -> list[H2HRecord]:
    """The 8,800 released ChatGPT head-to-head verdicts (11 pairs x 4 dimensions x 100 docs x 2 orders), read
    with :func:`mitigate.parse.parse_pairwise` (labels A/B, tie C; a failure keeps its message in
    ``error``)."""
    return list(_load_h2h(str(resolve_root(root, "summeval-h2h"))))


# the releases as recorded judgments, and the head-to-head as a pairwise benchmark

H2H_JUDGE = "chatgpt-h2h"
"""The name of the released ChatGPT head-to-head judge as a recorded (pairwise) judge."""
add("released-judge", H2H_JUDGE, ReleasedJudgeFiles(H2H_MODEL, "h2h"))


def released_names() -> list[str]:
    """Every released judge :func:`released_recorded` accepts: the score judges and ``"chatgpt-h2h"``."""
    return names("released-judge")


def run_to_recorded(run: ReleasedRun) -> RecordedRun:
    """A released score judge as recorded judgments, one row per response: the primary pass is variant
    ``"default"``, the others ``"pass <k>"`` (another template, their prompt lengths show)."""
    rows: list[RecordedRow] = []
    for judgment in run.iter_judgments():
        for sample in judgment.samples:
            variant = DEFAULT_VARIANT if sample.run == judgment.primary else f"pass {sample.run + 1}"
            rows.append(
                RecordedRow(
                    item_id=judgment.item_id,
                    judge=run.judge,
                    criterion=judgment.criterion,
                    score=sample.score,
                    raw=sample.raw,
                    variant=variant,
                    error=sample.error,
                    line=sample.line,
                    meta={"model": run.model, "method": run.method},
                )
            )
    return runs_from_rows(rows, f"released:{run.judge}", {c: run.scale for c in run.criteria})[run.judge]


def h2h_item_id(record: H2HRecord) -> str:
    """The pairwise item id of a head-to-head record: ``"<system_1>-<system_2>/<doc_id>"``."""
    return f"{record.pair}/{record.doc_id}"


def h2h_to_recorded(records: list[H2HRecord]) -> RecordedRun:
    """The head-to-head verdicts as recorded judgments of ``"chatgpt-h2h"`` over ``summeval-h2h``'s items."""
    rows = [
        RecordedRow(
            item_id=h2h_item_id(r),
            judge=H2H_JUDGE,
            criterion=r.criterion,
            raw=r.raw,
            line=r.line,
            verdict=None if r.verdict is None else _by_text(r.verdict, r.order == "original"),
            error=r.error,
            order="original" if r.order == "original" else "swapped",
            meta={"model": H2H_MODEL},
        )
        for r in records
    ]
    return runs_from_rows(rows, f"released:{H2H_JUDGE}")[H2H_JUDGE]


def _by_text(verdict: str, first_is_1: bool) -> Literal["A", "B", "tie"]:
    """A verdict by presentation ("first", "second", "tie") as the text preferred (A: ``system_1``'s)."""
    return "tie" if verdict == "tie" else "A" if (verdict == "first") == first_is_1 else "B"


def released_recorded(name: str, *, root: str | Path | None = None) -> RecordedRun:
    """A released judge (a name from :func:`released_names`) as a :class:`RecordedRun`."""
    if name == H2H_JUDGE:
        return h2h_to_recorded(load_head_to_head(root=root))
    if name not in released_judges():
        raise DataError(f"expected a released judge name, one of {released_names()}; got {name!r}")
    return run_to_recorded(load_released(name, root=root))


def load_head_to_head_benchmark(*, root: str | Path | None = None) -> Benchmark:
    """The SummEval head-to-head as a pairwise benchmark (``summeval-h2h``): one item per system pair and
    document, ``output`` (A) ``system_1``'s summary, gold ``preference`` the higher mean expert score
    (equal: a tie), the means in ``meta["human_a"]`` / ``meta["human_b"]``."""
    from mitigate.data._summeval import load_summeval

    records = load_head_to_head(root=root)
    summaries = {item.id: item for item in load_summeval("llm_summeval", root=root).items}
    items: dict[str, dict[str, Any]] = {}
    for r in records:
        if r.order != "original":
            continue
        key = h2h_item_id(r)
        id_a, id_b = r.item_ids
        if id_a not in summaries or id_b not in summaries:
            raise DataError(
                f"expected SummEval summaries {id_a!r} and {id_b!r} for the head-to-head item {key!r}; "
                "the annotations lack one",
                item_id=key,
            )
        entry = items.setdefault(
            key,
            {
                "id": key,
                "system": r.system_1,
                "system_b": r.system_2,
                "doc_id": r.doc_id,
                "inputs": dict(summaries[id_a].inputs),
                "output": summaries[id_a].output,
                "output_b": summaries[id_b].output,
                "preference": {},
                "meta": {"human_a": {}, "human_b": {}},
            },
        )
        entry["preference"][r.criterion] = {r.system_1: "A", r.system_2: "B"}.get(r.human_preferred, "tie")
        entry["meta"]["human_a"][r.criterion] = r.human_score_1
        entry["meta"]["human_b"][r.criterion] = r.human_score_2
    return Benchmark(
        name="summeval-h2h",
        items=tuple(Item(**fields) for fields in items.values()),
        criteria=CRITERIA,
        description="SummEval head-to-head pairs of Shen et al. 2023; gold = the higher mean expert score, "
        "equal means a tie",
    )
