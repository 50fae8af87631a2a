"""The answer a judge prompt asks for: the format value, its constraints for backends, and its inference from
a template.

:mod:`.format` holds :class:`AnswerFormat` (the value: how a judge answers, how a demo shows an
answer, the sentence asking for it, and reading a reply through
:class:`~mitigate.parse.format_reader.FormatReader`); :mod:`.constraint` builds the grammar,
regular expression and JSON schema a backend enforces; :mod:`.infer` reads the format from a
template's text.
"""

from mitigate.prompt.answer.constraint import answer_constraint, json_schema, reasoning_budget
from mitigate.prompt.answer.format import DEFAULT_SCORE_LINE, VALUE, AnswerFormat, AnswerKind, Reasoning
from mitigate.prompt.answer.infer import closing_stub, infer_answer_format, reasoning_ban, stated_reasoning

__all__ = ["DEFAULT_SCORE_LINE", "VALUE", "AnswerFormat", "AnswerKind", "Reasoning", "answer_constraint",
           "closing_stub", "infer_answer_format", "json_schema", "reasoning_ban", "reasoning_budget",
           "stated_reasoning"]
