"""The judge as a DSPy program, and the run of DSPy's optimizers over it (imports ``dspy``).

:class:`JudgeProgram` keeps DSPy's demos but renders **the judge's own prompt** and calls **the judge's own
backend** through the search's cache and budget; the optimizers get :meth:`Objective.item_metric`, and every
demo set they produce is ranked with the full objective on dev. Only MIPROv2's instruction proposer calls a
model itself (``prompt_model``, outside the budget); its instructions are recorded, not used.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import math
import random as _random
import threading
from collections.abc import Coroutine, Mapping, Sequence
from typing import Any, TypeVar

import dspy
from dspy.teleprompt import BootstrapFewShotWithRandomSearch, LabeledFewShot, MIPROv2

from mitigate.data import Item
from mitigate.errors import ConfigError, MitigateError
from mitigate.judge import Judge, Judgment
from mitigate.lm import BudgetExhaustedError, DSPyLM
from mitigate.prompt import Demo
from mitigate.search._objective import Objective, consistent, judgment_score
from mitigate.search._session import Candidate, Session
from mitigate.strategies import Demos

T = TypeVar("T")


class JudgeItem(dspy.Signature):
    """Score the judged text as the judge prompt asks."""

    item_id: str = dspy.InputField(desc="id of the benchmark item being judged")
    text: str = dspy.InputField(desc="the judged text")
    score: float = dspy.OutputField(desc="the score on the judge prompt's scale")


class ProgramContext:
    """What the program's copies share (DSPy deep-copies modules): session, event loop, items."""

    def __init__(self, session: Session, loop: asyncio.AbstractEventLoop, items: Mapping[str, Item]) -> None:
        self.session, self.loop, self.items = session, loop, dict(items)
        self.refused = self.errors = 0
        self._lock = threading.Lock()

    def __deepcopy__(self, memo: dict[int, Any]) -> ProgramContext:
        return self

    def __copy__(self) -> ProgramContext:
        return self

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the search's event loop and wait for its result (from one of DSPy's threads)."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def demo(self, example: Any) -> Demo:
        """The :class:`Demo` of a DSPy example: its item with the *human* score."""
        item_id = example.get("item_id")
        if item_id not in self.items:
            raise ConfigError(f"a DSPy demo names item {item_id!r}, which is not in the train split")
        s = self.session
        return Demo.from_item(
            self.items[item_id], s.criterion, human_scale=s.split.scale, prompt_scale=s.prompt_scale
        )

    def judge(self, item: Item, demos: Sequence[Demo]) -> Judgment | None:
        """Judge ``item`` with ``demos`` through the session's judge; None when the budget or LM refused."""
        s = self.session
        judge = s.judge_for(Demos(demos=tuple(demos), k=len(demos)) if demos else None)
        try:
            return self.run(judge.judge(item))
        except BudgetExhaustedError:
            with self._lock:
                self.refused += 1
            return None
        except MitigateError:  # a failed LM call: a missing score for DSPy's metric, never a default score
            with self._lock:
                self.errors += 1
            return None


class JudgeProgram(dspy.Module):
    """The judge as a DSPy program: ``forward`` scores an item with the demos DSPy set."""

    def __init__(self, context: ProgramContext, instructions: str) -> None:
        super().__init__()
        self.context = context
        self.predict = dspy.Predict(JudgeItem.with_instructions(instructions))

    def demo_objects(self, exclude: str | None = None) -> list[Demo]:
        """The current demos as :class:`Demo` objects (human scores), leaving out ``exclude``."""
        return [self.context.demo(ex) for ex in self.predict.demos if ex.get("item_id") != exclude]

    def forward(self, item_id: str, text: str | None = None) -> dspy.Prediction:
        """Score ``item_id`` with the current demos (the item itself is never among them)."""
        item = self.context.items.get(item_id)
        if item is None:
            raise ConfigError(f"JudgeProgram was asked to judge unknown item {item_id!r}")
        judgment = self.context.judge(item, self.demo_objects(exclude=item_id))
        score = None if judgment is None else judgment_score(judgment, self.context.session.criterion)
        same = math.nan if judgment is None else consistent(judgment)
        trace = dspy.settings.trace
        if trace is not None:
            inputs = {"item_id": item_id, "text": text if text is not None else item.output}
            trace.append((self.predict, inputs, dspy.Prediction(score=score)))
        return dspy.Prediction(score=score, consistent=same)


def dspy_lm_of(judge: Judge) -> Any | None:
    """The ``dspy.LM`` inside the judge's first leaf backend, when it is a DSPyLM (None otherwise)."""
    for leaf in judge.leaves():
        lm: Any = leaf.lm
        while lm is not None:
            if isinstance(lm, DSPyLM):
                return lm._lm
            lm = getattr(lm, "inner", None)
    return None


def _programs(compiled: Any) -> list[Any]:
    """The compiled program and every candidate program DSPy attached to it (best first)."""
    out = [compiled]
    for entry in getattr(compiled, "candidate_programs", None) or []:
        program = entry.get("program") if isinstance(entry, dict) else None
        if program is not None:
            out.append(program)
    return out


async def optimize(engine: Any, s: Session, kmax: int) -> tuple[str, dict[str, Any]]:
    """Run ``engine``'s optimizer and evaluate every demo set it produced; why it stopped, and meta."""
    optimizer: str = engine.optimizer
    split, crit = s.split, s.criterion
    train = [it for it in split.train if crit in it.human and math.isfinite(it.human[crit])]
    context = ProgramContext(s, asyncio.get_running_loop(), {it.id: it for it in (*split.train, *split.dev)})
    program = JudgeProgram(
        context,
        next((lf.prompt.task for lf in s.judge.leaves() if lf.prompt.task), "")
        or "Score the judged text as the judge prompt asks.",
    )
    trainset = [_example(it, s) for it in train]
    devset = [_example(it, s) for it in split.dev]
    prompt_model = getattr(engine, "prompt_model", None)
    before_pm = len(getattr(prompt_model, "history", []) or [])

    def compile_quietly() -> tuple[Any, dict[str, Any]]:
        with contextlib.nullcontext() if s.progress else _silenced():
            return _compile(optimizer, program, trainset, devset, kmax, s, engine)

    compiled, details = await asyncio.to_thread(compile_quietly)
    meta: dict[str, Any] = {"optimizer": optimizer, "k": kmax, **details}
    if prompt_model is not None:
        meta["prompt_model_calls"] = len(getattr(prompt_model, "history", []) or []) - before_pm
    meta["calls_refused_in_dspy"] = context.refused
    meta["dspy_errors"] = context.errors
    stopped = "budget" if s.budget.exhausted else "done"
    seen: set[tuple[str, ...]] = set()
    for rank, prog in enumerate(_programs(compiled)):
        demos = prog.demo_objects()
        key = tuple(d.item.id for d in demos)
        if not demos or key in seen:
            continue
        seen.add(key)
        augmented = [bool(ex.get("augmented", False)) for ex in prog.predict.demos]
        info = {
            "dspy_rank": rank,
            "augmented": augmented,
            "instructions": prog.predict.signature.instructions,
        }
        mitigation = Demos(demos=tuple(demos), k=len(demos))
        cand = Candidate(
            f"dspy-{optimizer}: candidate {rank}", mitigation, f"dspy-{optimizer}", list(key), info
        )
        if await s.evaluate(cand, precheck=False) is None:  # its dev run was cut short by the budget
            stopped = "budget"
            meta.setdefault("dropped", []).append(list(key))
    meta["instructions"] = compiled.predict.signature.instructions
    return stopped, meta


def _example(item: Item, s: Session) -> Any:
    """A ``dspy.Example`` of an item, labelled with its human score on the prompt's scale."""
    human = item.human[s.criterion]
    if s.split.scale is not None and s.split.scale != s.prompt_scale:
        p = s.prompt_scale
        human = p.min + s.split.scale.normalise(human) * (p.max - p.min)
    return dspy.Example(item_id=item.id, text=item.output, score=float(human)).with_inputs("item_id", "text")


def _metric(objective: Objective, s: Session) -> Any:
    """DSPy's per-example metric from the objective (closeness, + λ·consistent); a bool under a trace."""
    scale = s.prompt_scale
    half_step = scale.step / 2

    def metric(example: Any, prediction: Any, trace: Any = None) -> float | bool:
        score = prediction.get("score") if hasattr(prediction, "get") else None
        if trace is not None:
            return score is not None and abs(float(score) - float(example.score)) <= half_step + 1e-9
        return objective.item_metric(score, float(example.score), scale, prediction.get("consistent"))

    return metric


def _compile(
    optimizer: str,
    program: JudgeProgram,
    trainset: list[Any],
    devset: list[Any],
    k: int,
    s: Session,
    engine: Any,
) -> tuple[Any, dict[str, Any]]:
    """Run the optimizer; returns the compiled program and the settings it ran with."""
    metric, seed, concurrency = _metric(s.objective, s), s.seed, s.concurrency
    per_eval = max(1, len(devset))
    left = s.budget.remaining or 0
    num_candidates: int | None = getattr(engine, "num_candidates", None)
    if optimizer == "labeled":
        shuffled = list(trainset)
        _random.Random(seed).shuffle(shuffled)
        return LabeledFewShot(k=k).compile(program, trainset=shuffled, sample=True), {}
    if optimizer == "bootstrap-rs":
        # seeds -3..-1 are DSPy's fixed programs (zero-shot, labelled, unshuffled bootstrap)
        n = num_candidates if num_candidates is not None else max(1, left // (per_eval + len(trainset)) - 3)
        opt = BootstrapFewShotWithRandomSearch(
            metric=metric,
            max_bootstrapped_demos=k,
            max_labeled_demos=k,
            num_candidate_programs=n,
            num_threads=concurrency,
        )
        return opt.compile(program, trainset=trainset, valset=devset), {"num_candidate_programs": n}
    cands = num_candidates if num_candidates is not None else 3
    trials = engine.num_trials if engine.num_trials is not None else max(1, left // per_eval - 2)
    opt = MIPROv2(
        metric=metric,
        prompt_model=engine.prompt_model,
        task_model=engine.prompt_model,
        max_bootstrapped_demos=k,
        max_labeled_demos=k,
        auto=None,
        num_candidates=cands,
        num_threads=concurrency,
        seed=seed,
        verbose=False,
    )
    compiled = opt.compile(program, trainset=trainset, valset=devset, num_trials=trials, minibatch=False)
    return compiled, {"num_candidates": cands, "num_trials": trials}


@contextlib.contextmanager
def _silenced() -> Any:
    """Swallow DSPy's prints and progress bars (used when ``progress=False``)."""
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        yield
