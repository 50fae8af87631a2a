"""User Satisfaction Simulation (USS, Sun et al. 2021): dialogues rated for user satisfaction (1-5), one turn
per line (``role <TAB> text <TAB> action <TAB> ratings``); a USER line's ratings judge the system's preceding
response, a final ``USER <TAB> OVERALL`` line the dialogue.

``level="dialogue"``: one item per dialogue, ``output`` (and ``inputs["dialogue"]``) its ``USER: ...`` /
``SYSTEM: ...`` transcript, labels the OVERALL ratings. ``level="turn"``: one item per rated exchange,
``output`` the SYSTEM lines since the last user turn, ``inputs["context"]`` the transcript before them, labels
the next USER line's. ``human`` is the mean rating, ``meta["label"]`` the majority (ties to the lower score),
``doc_id`` the dialogue id (``"sgd/0007"``).
"""

from __future__ import annotations

import functools
from collections import Counter
from pathlib import Path
from typing import Literal

from mitigate.constraints import Options, check_param
from mitigate.data._jsonl import int_ratings, mean, read_text_lines, require_files, resolve_root, row_error
from mitigate.data._schema import Benchmark, Item
from mitigate.scale import Scale

CORPORA = {"sgd": "SGD", "multiwoz": "MWOZ", "redial": "ReDial", "ccpe": "CCPE"}
"""Corpus name -> file stem in ``user_satisfaction_uss/dataset``."""

ALIASES = {"mwoz": "multiwoz"}
_WHAT = {
    "dialogue": "dialogue-level user satisfaction (OVERALL ratings)",
    "turn": "exchange-level user satisfaction of each system response",
}
USS_DIR = "user_satisfaction_uss/dataset"
CRITERION = "satisfaction"
SCALE = Scale(min=1, max=5)
"""The USS satisfaction scale (1 very dissatisfied ... 5 very satisfied)."""


def majority_label(ratings: tuple[float, ...] | list[float]) -> int:
    """The most frequent rating, ties going to the lowest (Sun et al.'s ``get_main_score`` rule)."""
    counts = Counter(int(rating) for rating in ratings)
    top = max(counts.values())
    return min(score for score, count in counts.items() if count == top)


class _Turn:
    __slots__ = ("role", "text", "action", "ratings", "line")

    def __init__(self, role: str, text: str, action: str, ratings: tuple[float, ...], line: int) -> None:
        self.role, self.text, self.action, self.ratings, self.line = role, text, action, ratings, line


def parse_uss_file(path: Path) -> list[list[_Turn]]:
    """Split a USS file into dialogues of turns, checking each line (DataError with file and line)."""
    dialogues: list[list[_Turn]] = []
    current: list[_Turn] = []
    for number, _, raw_line in read_text_lines(path):
        text = raw_line.rstrip("\r\n")
        if not text.strip():
            if current:
                dialogues.append(current)
                current = []
            continue
        fields = text.split("\t")
        if len(fields) < 4:
            got = f"{len(fields)}: {text[:60]!r}"
            raise row_error(
                path, number, f"expected 4 tab-separated fields (role, text, action, ratings); got {got}"
            )
        role, utterance, action = (f.strip() for f in fields[:3])
        ratings_text = fields[3]
        if role not in ("USER", "SYSTEM"):
            raise row_error(path, number, f"expected role USER or SYSTEM; got {role!r}")
        if current and current[-1].role == "USER" and current[-1].text == "OVERALL":
            raise row_error(
                path, number, "expected a blank line after the USER OVERALL line; got another turn"
            )
        ratings: tuple[float, ...] = ()
        if role == "USER":
            ratings = tuple(map(float, int_ratings(ratings_text, 1, 5, "on a USER line", path, number)))
        current.append(_Turn(role, utterance, action, ratings, number))
    if current:
        dialogues.append(current)
    for dialogue in dialogues:
        last = dialogue[-1]
        if not (last.role == "USER" and last.text == "OVERALL"):
            raise row_error(
                path,
                dialogue[0].line,
                "expected the dialogue starting here to end with a 'USER<TAB>OVERALL' line; it ends at line "
                f"{last.line} with {last.role} {last.text[:40]!r}",
            )
    return dialogues


def _transcript(turns: list[_Turn]) -> str:
    return "\n".join(f"{t.role}: {t.text}" for t in turns)


def _item(
    item_id: str, doc_id: str, output: str, inputs: dict[str, str], rated: _Turn, **meta: object
) -> Item:
    """An item labelled with the ratings on ``rated`` (their mean; their majority as ``meta["label"]``)."""
    return Item(
        id=item_id,
        doc_id=doc_id,
        output=output,
        inputs=inputs,
        human={CRITERION: mean(rated.ratings)},
        annotators={CRITERION: rated.ratings},
        meta={"label": majority_label(rated.ratings), **meta},
    )


def load_uss(
    corpus: str = "sgd", level: Literal["dialogue", "turn"] = "dialogue", *, root: str | Path | None = None
) -> Benchmark:
    """Load one USS corpus (sgd, multiwoz, redial, ccpe) at dialogue or turn level (module docstring)."""
    key = ALIASES.get(corpus.lower(), corpus.lower())
    check_param("load_uss", "corpus", key, [Options(*sorted(CORPORA))])
    check_param("load_uss", "level", level, [Options("dialogue"), Options("turn")])
    return _load(str(resolve_root(root, f"uss-{key}")), key, level)


@functools.lru_cache(maxsize=8)
def _load(root: str, corpus: str, level: str) -> Benchmark:
    (path,) = require_files(
        Path(root),
        [f"{USS_DIR}/{CORPORA[corpus]}.txt"],
        dataset=f"USS {corpus}",
        hint="It comes from github.com/sunnweiwei/user-satisfaction-simulation, folder dataset/.",
    )
    items: list[Item] = []
    for index, dialogue in enumerate(parse_uss_file(path)):
        dialogue_id = f"{corpus}/{index:04d}"
        turns, overall = dialogue[:-1], dialogue[-1]
        if level == "dialogue":
            text = _transcript(turns)
            line = turns[0].line if turns else overall.line
            items.append(
                _item(
                    dialogue_id,
                    dialogue_id,
                    text,
                    {"dialogue": text},
                    overall,
                    corpus=corpus,
                    line=line,
                    n_turns=len(turns),
                )
            )
            continue
        pending: list[_Turn] = []
        for position, turn in enumerate(turns):
            if turn.role == "SYSTEM":
                pending.append(turn)
                continue
            if pending:
                context = {"context": _transcript(turns[: position - len(pending)])}
                output = "\n".join(t.text for t in pending)
                item_id = f"{dialogue_id}/t{position:02d}"
                meta = {"corpus": corpus, "line": turn.line, "action": pending[-1].action}
                items.append(_item(item_id, dialogue_id, output, context, turn, **meta))
            pending = []
    return Benchmark(
        name=f"uss-{corpus}" + ("" if level == "dialogue" else "-turn"),
        items=tuple(items),
        criteria=(CRITERION,),
        scale=SCALE,
        description=f"USS {CORPORA[corpus]}: {_WHAT[level]}; human = mean rating, meta['label'] = majority "
        "vote (ties to the lower score)",
    )
