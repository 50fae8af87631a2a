"""How a published judge template is written: chat markup, placeholder syntax and Jinja.

:func:`read_template` turns a template into canonical messages (slots as ``{{name}}``) and remembers how to
write it back exactly (:meth:`TemplateSource.restore`). Chat markup (ChatML, Llama-3, ``Human:`` turns)
becomes messages; ``{{name}}``, ``{{{name}}}`` and ``{name}`` are slots (a template using ``{{name}}``
keeps its single braces literal, warning about an unquoted ``{Name}``); Jinja is rendered once in the
sandbox with the ``constants`` given, a plain ``{{ name }}`` staying a slot and a name nobody gave being
false where tested (with a :class:`~mitigate.errors.TemplateReadWarning`) and refused elsewhere; constants
fill slots once.
"""

from __future__ import annotations

import re
import string
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from mitigate.errors import TemplateError, TemplateReadWarning
from mitigate.prompt._parts import SLOT_RE

Role = Literal["system", "user", "assistant"]
SlotSyntax = Literal["double", "single", "format", "jinja"]

_TRIPLE_RE = re.compile(r"\{\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}\}")
_SINGLE_RE = re.compile(r"(?<!\{)\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}(?!\})")
_JINJA_RE = re.compile(
    r"\{%-?\s*[A-Za-z_]\w*\b.*?%\}|\{#.*?#\}"
    r"|\{\{-?\s*[A-Za-z_][\w]*\s*(?:\[|\.|\||\(|\+|~)[^{}]*\}\}",
    re.S,
)
_JINJA_EXPR_RE = re.compile(  # an expression that is no slot: Jinja, unless the braces are a format string's
    r"\{\{-?\s*(?:[(\[\"'\d-]|not\s).*?\}\}"
    r"|\{\{-?\s*[A-Za-z_]\w*\s*(?:\*|-|/|%|==|!=|<|>|\bif\b|\bis\b|\band\b|\bor\b|\bin\b)[^{}]*\}\}",
    re.S,
)
_MARK = "\x00{}\x00"
_MARK_RE = re.compile(r"\x00(\d+)\x00")


class TemplateSource(BaseModel):
    """How the template was written, to restore it exactly: ``layout`` is the original text with each
    message replaced by a mark, ``spellings`` each slot's original spelling, ``unset`` the names a Jinja
    condition tested that no constant gave (read as false)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    layout: str
    syntax: SlotSyntax = "double"
    spellings: dict[str, str] = {}
    markup: str | None = None
    rendered_jinja: bool = False
    constants: tuple[str, ...] = ()
    unset: tuple[str, ...] = ()

    def restore(self, messages: list[str]) -> str:
        """The whole template as written, from the current message texts (canonical ``{{slot}}`` form)."""
        texts = [self._spell(m) for m in messages]

        def fill(m: re.Match[str]) -> str:
            i = int(m.group(1))
            return texts[i] if i < len(texts) else ""

        return _MARK_RE.sub(fill, self.layout)

    def _spell(self, text: str) -> str:
        if self.syntax in ("double", "jinja") and not self.spellings:
            return text
        parts: list[str] = []
        last = 0
        for m in SLOT_RE.finditer(text):
            literal = text[last : m.start()]
            parts.append(_escape_format(literal) if self.syntax == "format" else literal)
            name = m.group(1).strip()
            parts.append(self.spellings.get(name, m.group(0)))
            last = m.end()
        tail = text[last:]
        parts.append(_escape_format(tail) if self.syntax == "format" else tail)
        return "".join(parts)


def _escape_format(text: str) -> str:
    return text.replace("{", "{{").replace("}", "}}")


@dataclass
class ReadTemplate:
    """The result of :func:`read_template`: canonical messages and how to write them back."""

    messages: list[tuple[Role, str]]
    source: TemplateSource


_CHATML = re.compile(
    r"<\|im_start\|>\s*(system|user|assistant)\s*\n(.*?)(?:<\|im_end\|>|(?=<\|im_start\|>)|\Z)", re.S
)
_LLAMA3 = re.compile(
    r"(?:<\|begin_of_text\|>)?<\|start_header_id\|>\s*(system|user|assistant)\s*<\|end_header_id\|>(.*?)"
    r"(?:<\|eot_id\|>|(?=<\|start_header_id\|>)|\Z)",
    re.S,
)
_CHAT_TOKENS = "<|im_start|> <|im_end|> <|start_header_id|> <|end_header_id|> <|eot_id|> <|begin_of_text|>"
_TURNS = re.compile(r"(?:^|\n)(?:###\s*)?(Human|Assistant)\s*:")


def split_markup(text: str) -> tuple[list[tuple[Role, str]], str, str | None]:
    """Messages found in chat markup (else one user message), the layout with message marks, and the
    markup's name; an empty message (a closing ``<|im_start|>assistant``) stays in the layout."""
    messages: list[tuple[Role, str]] = []
    layout: list[str] = []

    def add(role: Role, content: str) -> None:
        """A message's text as a mark in the layout; an empty one stays in the layout as it is."""
        if content.strip():
            layout.append(_MARK.format(len(messages)))
            messages.append((role, content))
        else:
            layout.append(content)

    for name, pattern in (("chatml", _CHATML), ("llama3", _LLAMA3)):
        matches = list(pattern.finditer(text))
        if not matches:
            continue
        messages.clear()
        layout.clear()
        last = 0
        for m in matches:
            layout.append(text[last : m.start(2)])
            add(m.group(1).lower(), m.group(2))  # type: ignore[arg-type]
            last = m.end(2)
        layout.append(text[last:])
        outside = _MARK_RE.sub("", "".join(layout))
        for token in (*_CHAT_TOKENS.split(), "system", "user", "assistant"):
            outside = outside.replace(token, "")
        if messages and not outside.strip():
            return messages, "".join(layout), name
    turns = list(_TURNS.finditer(text))
    if turns and turns[0].group(1).lower() == "human":
        messages.clear()
        layout.clear()
        add("system", text[: turns[0].start()])  # Guanaco's system line before "### Human:"
        for k, t in enumerate(turns):
            end = turns[k + 1].start() if k + 1 < len(turns) else len(text)
            layout.append(text[t.start() : t.end()])
            add("user" if t.group(1).lower() == "human" else "assistant", text[t.end() : end])
        if any(r == "user" for r, _ in messages) and messages[-1][0] != "assistant":
            return messages, "".join(layout), "turns"
    return [("user", text)], _MARK.format(0), None


def _is_format_string(text: str) -> bool:
    """Whether ``text`` is a valid ``str.format`` template whose fields are plain names."""
    try:
        fields = [f for _, f, _, _ in string.Formatter().parse(text) if f is not None]
    except ValueError:
        return False
    return bool(fields) and all(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", f) for f in fields)


def detect_syntax(texts: list[str]) -> SlotSyntax:
    """The placeholder notation of a template's texts (see the module docstring)."""
    joined = "\n".join(texts)
    if _JINJA_RE.search(joined):
        return "jinja"
    if _JINJA_EXPR_RE.search(joined) and not any(_is_format_string(t) for t in texts):
        return "jinja"  # never left as literal text: the sandbox reads it (and refuses what it must)
    if SLOT_RE.search(joined) or _TRIPLE_RE.search(joined):
        return "double"
    if (
        all(_is_format_string(t) or not _SINGLE_RE.search(t) for t in texts)
        and any(_is_format_string(t) for t in texts)
        and ("{{" in joined or "}}" in joined)
    ):
        return "format"
    if _SINGLE_RE.search(joined):
        return "single"
    return "double"


class _Slot(str):
    """A Jinja value standing for a slot: renders as ``{{name}}`` and refuses everything else."""

    def __new__(cls, name: str) -> _Slot:
        obj = super().__new__(cls, "{{" + name + "}}")
        obj.slot = name  # type: ignore[attr-defined]
        return obj


def _render_jinja(text: str, constants: Mapping[str, Any]) -> tuple[str, list[str]]:
    """``text`` rendered once in the sandbox, each name it uses a constant, a plain slot or unset (see the
    module docstring); and the unset names a condition tested."""
    try:
        import jinja2
        from jinja2.utils import missing

        from mitigate.prompt.read._sandbox import SandboxedTemplate
    except ImportError as exc:  # pragma: no cover - jinja2 ships with llama-cpp-python and dspy
        raise TemplateError(
            "this template uses Jinja ({% ... %} or {{ expr }}); expected jinja2 to be installed to render "
            "it (pip install jinja2)"
        ) from exc

    tested: list[str] = []

    class Unset(jinja2.StrictUndefined):
        """A name nobody gave: false when a condition tests it; any other use is refused."""

        # jinja2 types StrictUndefined.__bool__ as its always-raising error helper (NoReturn); here a
        # condition on an unset name is false on purpose
        def __bool__(self) -> bool:  # type: ignore[override]
            if self._undefined_obj is missing and self._undefined_name not in tested:
                tested.append(str(self._undefined_name))
            return False

        @property
        def _undefined_message(self) -> str:
            if self._undefined_obj is missing and self._undefined_name is not None:
                return _jinja_refusal(text, self._undefined_name)
            return (
                f"the template's Jinja needs a value nobody gave: {super()._undefined_message}; pass it "
                "in constants={...}"
            )

    template = SandboxedTemplate(text, undefined=Unset)
    plain = {m.group(1).strip() for m in SLOT_RE.finditer(text)}
    context: dict[str, Any] = {}
    for name in sorted(template.names):
        if name in constants:
            context[name] = constants[name]
        elif name in plain and not _used_beyond_output(text, name):
            context[name] = _Slot(name)
        # any other name stays unset: Unset above
    rendered = template.render(context)
    if tested:
        warnings.warn(
            f"the template's Jinja tests {', '.join(repr(n) for n in tested)}, which no constant gives: read "
            "as Jinja reads a name nobody gave (false), so what the test guards is left out; pass --const "
            "NAME=VALUE (constants={...}) to set it",
            TemplateReadWarning,
            stacklevel=5,
        )
    return rendered, tested


def _used_beyond_output(text: str, name: str) -> bool:
    """Whether Jinja uses ``name`` in a construct other than a plain ``{{ name }}`` output."""
    esc = re.escape(name)
    for m in re.finditer(r"\{%(.*?)%\}|\{\{(.*?)\}\}", text, re.S):
        body = m.group(1) if m.group(1) is not None else m.group(2)
        if re.search(rf"(?<![\w.]){esc}(?!\w)", body) and not (
            m.group(2) is not None and body.strip() == name
        ):
            return True
    return False


def _jinja_refusal(text: str, name: str) -> str:
    """The refusal of a name nobody gave, showing the first construct that uses it other than a test."""
    esc = re.escape(name)
    uses = [
        m.group(0)
        for m in re.finditer(r"\{%.*?%\}|\{\{.*?\}\}", text, re.S)
        if re.search(rf"(?<![\w.]){esc}(?!\w)", m.group(0))
    ]
    tests = re.compile(rf"\{{%-?\s*(?:el)?if\s+(?:not\s+)?{esc}\s*-?%\}}")
    shown = next((u for u in uses if not tests.fullmatch(u)), uses[0] if uses else name)
    return (
        f"the template's Jinja construct {shown} needs a value for {name!r}, which is neither a constant nor "
        f"a plain slot; expected constants={{{name!r}: ...}} (--const {name}=...; Jinja is rendered once, "
        "before judging, so it cannot use a judged item's fields)"
    )


def read_template(
    text: str, system: str | None = None, constants: Mapping[str, Any] | None = None
) -> ReadTemplate:
    """Split chat markup, render Jinja, fill constants and normalise slots to ``{{name}}``."""
    constants = dict(constants or {})
    if system is not None:
        messages: list[tuple[Role, str]] = [("system", system), ("user", text)]
        layout, markup = _MARK.format(0) + "\n\n" + _MARK.format(1), None
    else:
        messages, layout, markup = split_markup(text)
    syntax = detect_syntax([t for _, t in messages])
    spellings: dict[str, str] = {}
    out: list[tuple[Role, str]] = []
    unset: list[str] = []
    for role, t in messages:
        if syntax == "jinja":
            t, tested = _render_jinja(t, constants)
            unset += [n for n in tested if n not in unset]
        elif syntax in ("single", "format"):
            for m in _SINGLE_RE.finditer(t):
                spellings.setdefault(m.group(1), m.group(0))
            if syntax == "format":
                t = _format_to_double(t)
            else:
                t = _SINGLE_RE.sub(lambda m: "{{" + m.group(1) + "}}", t)
        else:
            for m in _TRIPLE_RE.finditer(t):
                spellings.setdefault(m.group(1), m.group(0))
            t = _TRIPLE_RE.sub(lambda m: "{{" + m.group(1) + "}}", t)
            for m in SLOT_RE.finditer(t):
                spellings.setdefault(m.group(1).strip(), m.group(0))
        for name, value in constants.items() if syntax != "jinja" else ():
            # the value as written (re.sub reads escapes in a replacement: backslashes doubled)
            t = re.sub(r"\{\{\s*" + re.escape(name) + r"\s*\}\}", str(value).replace("\\", "\\\\"), t)
        out.append((role, t))
    if syntax == "double":  # "{{ x }}" spellings stay in the canonical text; only "{{{x}}}" needs restoring
        spellings = {k: v for k, v in spellings.items() if v.startswith("{{{")}
        _warn_single_braces([t for _, t in out])
    source = TemplateSource(
        layout=layout,
        syntax=syntax,
        spellings=spellings,
        markup=markup,
        rendered_jinja=syntax == "jinja",
        constants=tuple(sorted(constants)),
        unset=tuple(unset),
    )
    return ReadTemplate(messages=out, source=source)


def _warn_single_braces(texts: list[str]) -> None:
    """Warn about ``{Name}`` fields in a ``{{slot}}`` template (sent literally), quoted ones aside."""
    names: list[str] = []
    for text in texts:
        for m in _SINGLE_RE.finditer(text):
            before = text[text.rfind("\n", 0, m.start()) + 1 : m.start()]
            if not any(before.count(q) % 2 for q in '"`“') and m.group(1) not in names:
                names.append(m.group(1))
    if names:
        shown = ", ".join("{" + n + "}" for n in names)
        fix = ", ".join("{{" + n + "}}" for n in names)
        warnings.warn(
            f"the template fills {{{{slot}}}} fields but also has {shown} in single braces, which is sent to "
            f"the judge literally; write {fix} to fill it from the item",
            TemplateReadWarning,
            stacklevel=4,
        )


def _format_to_double(text: str) -> str:
    """A ``str.format`` template in canonical form: ``{{``/``}}`` literal braces, fields slots."""
    parsed = string.Formatter().parse(text)
    return "".join(literal + ("" if name is None else "{{" + name + "}}") for literal, name, _, _ in parsed)


def placeholder_hint(text: str) -> str:
    """What placeholder-like spans a text holds, for an error naming what was seen."""
    seen = re.findall(r"\{\{[^{}]{0,40}\}\}|\{[^{}\n]{0,40}\}|\$\{?\w+\}?|<\w+>|\[\w+\]", text)
    spans = sorted(set(seen))[:8]
    return ", ".join(spans) if spans else "none"
