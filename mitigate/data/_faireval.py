"""FairEval (Wang et al. 2023, "Large language models are not fair evaluators"), read from a copy of its
repository (github.com/i-Eval/FairEval): ChatGPT's (A) and Vicuna-13B's (B) answers to the 80 Vicuna
questions with the human verdict, item ids ``"faireval/<question_id>"``, criterion ``overall``. No judge
outputs are released (LLMBar's ``Processed/FairEval`` has some)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from mitigate.data._jsonl import file_error, read_json_lines, read_text_lines
from mitigate.data._released_pairwise import RELEASE_CRITERION
from mitigate.data._schema import Benchmark, Item
from mitigate.errors import DataError

_HUMAN: dict[str, Literal["A", "B", "tie"]] = {"CHATGPT": "A", "VICUNA13B": "B", "TIE": "tie"}
_HINT = "FairEval comes from github.com/i-Eval/FairEval (question.jsonl, answer/, review/)"


def _by_question(path: Path) -> dict[int, dict[str, Any]]:
    out: dict[int, dict[str, Any]] = {}
    for line, _, row in read_json_lines(path):
        qid = row.get("question_id") if isinstance(row, dict) else None
        if not isinstance(qid, int) or not isinstance(row.get("text"), str):
            raise file_error(
                path,
                f"expected an integer 'question_id' and a string 'text'; got {str(row)[:60]!r}",
                f"{path}:{line}",
            )
        out[qid] = row
    return out


def load_faireval(path: str | Path) -> Benchmark:
    """The 80 FairEval questions, ChatGPT's (A) and Vicuna-13B's (B) answers, the human verdict as gold."""
    repo = Path(path)
    files = {
        "question": repo / "question.jsonl",
        "a": repo / "answer" / "answer_gpt35.jsonl",
        "b": repo / "answer" / "answer_vicuna-13b.jsonl",
        "human": repo / "review" / "review_gpt35_vicuna-13b_human.txt",
    }
    missing = [str(p.relative_to(repo)) for p in files.values() if not p.is_file()]
    if missing:
        raise DataError(f"expected the FairEval files {missing} under {repo}; they are missing. {_HINT}")
    questions = _by_question(files["question"])
    answers_a, answers_b = _by_question(files["a"]), _by_question(files["b"])
    verdicts = [(line, text.strip()) for line, _, text in read_text_lines(files["human"]) if text.strip()]
    order = list(questions)
    if len(verdicts) != len(order):
        raise DataError(
            f"{files['human']}: expected one human verdict per question ({len(order)}); got {len(verdicts)}",
            path=str(files["human"]),
        )
    items = []
    for qid, (line, verdict) in zip(order, verdicts, strict=True):
        gold = _HUMAN.get(verdict)
        if gold is None:
            raise DataError(
                f"{files['human']}:{line}: expected CHATGPT, VICUNA13B or TIE; got {verdict!r}",
                path=str(files["human"]),
            )
        if qid not in answers_a or qid not in answers_b:
            raise DataError(
                f"expected both answers to question {qid}; "
                f"{'answer_gpt35' if qid not in answers_a else 'answer_vicuna-13b'} has none"
            )
        items.append(
            Item(
                id=f"faireval/{qid}",
                doc_id=f"faireval/{qid}",
                inputs={"question": questions[qid]["text"]},
                output=answers_a[qid]["text"],
                output_b=answers_b[qid]["text"],
                system="gpt-3.5-turbo",
                system_b="vicuna-13b",
                preference={RELEASE_CRITERION: gold},
                meta={"category": str(questions[qid].get("category", ""))},
            )
        )
    return Benchmark(
        name="faireval",
        items=tuple(items),
        criteria=(RELEASE_CRITERION,),
        description="FairEval: Vicuna-80 questions, ChatGPT (A) vs Vicuna-13B (B), human "
        "verdicts (ties kept)",
    )
