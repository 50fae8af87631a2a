"""Known template-injection payloads, and the command lines that read a template: every pair must be refused.

Shared by the test suite (``tests/prompt/test_template_sandbox.py``, in-process) and the reliability benchmark
(``benchmarks/bench_reliability.py``, one real process per case). Each :class:`Payload` is Jinja that a
downloaded template could hold (the groups of :data:`PAYLOADS` say which tricks); ``MARKER`` in it is replaced
by the path of a file the payload tries to create, so a test can see whether it ran. Every payload sits in a
template that would otherwise work (:func:`hostile_template`), so a refusal cannot come from something else;
``expect`` is a fragment the one error line must hold.

:data:`TEMPLATE_COMMANDS` are the command lines of every command that reads a template, with ``{prompt}`` (the
template file), ``{d}`` (a folder from :func:`tests.support.bad_inputs.make_fixtures`) and ``{url}`` (a
stub server that must receive no request) to fill.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Payload:
    """One template-injection payload (Jinja, with ``MARKER`` for a file it tries to create) and the refusal
    it gets."""

    name: str
    jinja: str
    expect: str


_ATTR = "reads the attribute"
_CALL = "makes a call"

PAYLOADS: tuple[Payload, ...] = (
    # walks from Jinja's globals to os
    Payload("cycler globals", '{{ cycler.__init__.__globals__.os.system("touch MARKER") }}', _ATTR),
    Payload("joiner globals", '{{ joiner.__init__.__globals__.os.popen("touch MARKER").read() }}', _ATTR),
    Payload("namespace globals", '{{ namespace.__init__.__globals__.os.system("touch MARKER") }}', _ATTR),
    Payload("lipsum globals", '{{ lipsum.__globals__["os"].popen("touch MARKER").read() }}', _ATTR),
    Payload("lipsum globals by index", '{{ lipsum["__globals__"]["os"].system("touch MARKER") }}', _CALL),
    Payload("range globals by built index", "{{ range[('_' * 2) ~ 'globals' ~ ('_' * 2)]['os'] }}", _ATTR),
    Payload(
        "self context",
        '{{ self._TemplateReference__context.cycler.__init__.__globals__.os.system("touch MARKER") }}',
        _ATTR,
    ),
    Payload(
        "self builtins import",
        '{{ self.__init__.__globals__.__builtins__.__import__("os").system("touch MARKER") }}',
        _ATTR,
    ),
    Payload(
        "flask config",
        "{{ config.__class__.__init__.__globals__['os'].popen('touch MARKER').read() }}",
        _ATTR,
    ),
    Payload("flask url_for", '{{ url_for.__globals__.os.system("touch MARKER") }}', _ATTR),
    Payload(
        "flask request application",
        "{{ request.application.__globals__.__builtins__.__import__('os').popen('touch MARKER').read() }}",
        _ATTR,
    ),
    Payload(
        "str class mro subclasses",
        "{% for c in ''.__class__.__mro__[1].__subclasses__() %}{% if c.__name__ "
        "== 'Popen' %}{{ c(['touch', 'MARKER']) }}{% endif %}{% endfor %}",
        _ATTR,
    ),
    Payload("tuple class base", "{{ ().__class__.__base__.__subclasses__() }}", _ATTR),
    Payload(
        "loop internals", "{% for i in [1] %}{{ loop.__class__.__init__.__globals__ }}{% endfor %}", _ATTR
    ),
    Payload(
        "set alias then walk",
        "{% set x = cycler %}{{ x.__init__.__globals__.os.system('touch MARKER') }}",
        _ATTR,
    ),
    Payload("range method self", "{{ range.__self__ }}", _ATTR),
    Payload("plain attribute of a function", "{{ range.func_globals }}", "of a function"),
    # filters that reach attributes or call
    Payload("attr filter", '{{ ()|attr("__class__")|attr("__base__")|attr("__subclasses__")() }}', "|attr"),
    Payload(
        "attr filter hex escapes",
        '{{ lipsum|attr("\\x5f\\x5fglobals\\x5f\\x5f")|attr("__getitem__")("os")'
        '|attr("popen")("touch MARKER")|attr("read")() }}',
        "|attr",
    ),
    Payload("map attribute", '{{ [range]|map(attribute="__globals__")|list }}', "|map"),
    Payload("filter block", "{% filter system %}touch MARKER{% endfilter %}", "|system"),
    Payload("select with a callable test", "{{ [range]|select('callable')|list }}", "|select"),
    # format strings
    Payload("str.format attribute walk", '{{ "{0.__init__.__globals__}".format(cycler) }}', _CALL),
    Payload("format_map", '{{ "{a.__class__}".format_map({"a": range}) }}', _CALL),
    Payload("format filter", '{{ "%999999999d"|format(1) }}', "|format"),
    Payload("percent formatting width", '{{ "%999999999d" % 1 }}', "formats a string"),
    Payload("string method call", '{{ "x".center(10 ** 9) }}', _CALL),
    # size and time bombs
    Payload("range of a billion", "{% for i in range(10 ** 9) %}x{% endfor %}", "range("),
    Payload("string times a billion", '{{ "x" * 10 ** 9 }}', "builds a value"),
    Payload("list times a billion", "{{ [1] * 10 ** 9 }}", "builds a value"),
    Payload(
        "string multiplication loop",
        '{% set s = "x" * 900000 %}{% for i in range(10000) %}{{ s }}{% endfor %}',
        "renders more than",
    ),
    Payload(
        "concatenation doubling",
        '{% set a = "xxxxxxxxxx" %}' + "{% set a = a ~ a %}" * 40 + "{{ a }}",
        "with '~'",
    ),
    Payload(
        "addition doubling", '{% set a = "xxxxxxxxxx" %}' + "{% set a = a + a %}" * 40 + "{{ a }}", "with '+'"
    ),
    Payload("power tower", "{{ 9 ** (9 ** 9) }}", "bits"),
    Payload("integer squaring", "{% set n = 10 %}" + "{% set n = n * n %}" * 40 + "{{ n }}", "bits"),
    Payload(
        "nested loops",
        "{% for a in range(10000) %}{% for b in range(10000) %}{% endfor %}{% endfor %}",
        "steps",
    ),
    Payload("join amplification", '{{ (["x"] * 10000) | join("y" * 100000) }}', "|join"),
    Payload("indent amplification", '{{ ("a\\n" * 100000) | indent(1000000) }}', "indents"),
    Payload("round to a billion digits", "{{ 5 | round(-1000000000) }}", "rounds"),
    # recursion and other files
    Payload("macro recursion", "{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}", "macro"),
    Payload("recursive loop", "{% for x in [[1]] recursive %}{{ loop(x) }}{% endfor %}", "recursive loop"),
    Payload("call block", "{% call range(3) %}x{% endcall %}", "macro"),
    Payload("include a file", '{% include "/etc/passwd" %}', "another template"),
    Payload(
        "import a template", '{% import "os" as os %}{{ os.system("touch MARKER") }}', "another template"
    ),
    Payload("extends", '{% extends "base.html" %}', "another template"),
    Payload("nesting too deep to parse", "{{ " + "(" * 5000 + "1" + ")" * 5000 + " }}", "nested too deep"),
    # sizes reached while building (issue 45): blocks, filters writing text, indentation
    Payload(
        "set block of a loop",
        '{% set s %}{% for i in range(10000) %}{{ "x" * 40000 }}{% endfor %}{% endset %}',
        "characters in all",
    ),
    Payload(
        "filter block of a loop",
        '{% filter upper %}{% for i in range(10000) %}{{ "x" * 40000 }}{% endfor %}{% endfilter %}',
        "characters in all",
    ),
    Payload("string of a shared list", '{% set l = ["x" * 100000] * 9 %}{{ ([l] * 1000)|string }}', "'*'"),
    Payload("tojson indented a billion", '{{ [[1, 2], {"a": [3]}]|tojson(indent=10**9) }}', "indents by"),
    Payload("join of doubled lists", '{% set a = ["x" * 1000] %}' + "{% set a = [a, a] %}" * 30, "literal"),
)
"""Each payload is refused by every command that reads a template (see the module docstring)."""

_VALUE = '{% set m = "x" * 300000 %}{% set v = [m, m, m] %}'
"""A list just under the sandbox's bound on one value (900,000 characters as text)."""
_BUILDERS = {
    **{f"|{f}": f"v|{f}" for f in "string tojson join upper lower title capitalize trim list sort".split()},
    "|indent": "v|indent(2)",
    "|truncate": "v|truncate(5)",
    "|wordcount": "v|wordcount",
    "~": 'v ~ ""',
    "+": "m + m",
    "literal": "[v, 1]",
    "slice": "v[1:]",
}
_REPEATS = {
    "in a loop": "{{% for i in range(100) %}}{{% set t = {e} %}}{{% endfor %}}",
    "in a set block": "{{% set s %}}{{% for i in range(100) %}}{{{{ {e} }}}}{{% endfor %}}{{% endset %}}",
    "in a filter block": "{{% filter lower %}}{{% for i in range(100) %}}{{{{ {e} }}}}{{% endfor %}}"
    "{{% endfilter %}}",
    "written in a set block": "{{% set s %}}{{{{ {e} }}}}{{% endset %}}{{% set t %}}"
    + "{{{{ s }}}}" * 6
    + "{{% endset %}}",
    "statement after statement": "{{% set t = {e} %}}" * 20,
}
SIZE_PAYLOADS: tuple[Payload, ...] = tuple(
    Payload(f"{name} {where}", _VALUE + repeat.format(e=expr), "characters")
    for name, expr in _BUILDERS.items()
    for where, repeat in _REPEATS.items()
    if not (where.startswith("written") and name in ("|wordcount", "|truncate"))  # a short text
)
"""Generated size bombs: every way a template builds a value (a filter writing text, ``~``, ``+``, a literal,
a slice), repeated every way (a loop, a ``{% set %}`` or ``{% filter %}`` block, statement after statement);
each builds gigabytes unless the sandbox bounds it while building (refused naming the characters)."""

_TEMPLATE = (
    "Rate the fluency of the summary from 1 to 5.\n\n{payload}\n\nArticle: {{{{source}}}}\n"
    "Summary: {{{{summary}}}}\n\nScore:"
)


def hostile_template(payload: Payload, marker: Path | str) -> str:
    """A working judge template (fluency, 1 to 5, ``{{source}}`` and ``{{summary}}``) carrying ``payload``."""
    return _TEMPLATE.format(payload=payload.jinja.replace("MARKER", str(marker)))


_COMMON = (
    "-b jsonl:{d}/bench.jsonl -c fluency --prompt {prompt} --backend openai:stub-model --base-url {url} "
    "--no-progress --no-cache"
)
TEMPLATE_COMMANDS: dict[str, tuple[str, ...]] = {
    name: tuple(line.split())
    for name, line in {
        "prompts inspect": "prompts inspect {prompt}",
        "prompts render": "prompts render {prompt} -b jsonl:{d}/bench.jsonl -c fluency",
        "judge --dry-run": f"judge {_COMMON} --dry-run",
        "judge": f"judge {_COMMON} --run-dir {{d}}/hostile-judge",
        "compare": f"compare {_COMMON} -p baseline --out {{d}}/hostile-compare",
        "search": f"search {_COMMON} --out {{d}}/hostile-search/pipeline.json --budget 2 --no-plot",
        "probe": f"probe {_COMMON} --probes verbosity --out {{d}}/hostile-probe.jsonl",
    }.items()
}
"""Every command that reads a template, as a command line (see the module docstring)."""


def template_command(command: str, prompt: Path | str, folder: Path | str, url: str) -> list[str]:
    """The arguments of ``command`` (a key of :data:`TEMPLATE_COMMANDS`) with its placeholders filled."""
    return [
        a.replace("{prompt}", str(prompt)).replace("{d}", str(folder)).replace("{url}", url)
        for a in TEMPLATE_COMMANDS[command]
    ]
