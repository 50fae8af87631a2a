"""Templates render in a sandbox: no template-injection payload runs, through any command, and valid templates
render byte for byte as Jinja renders them.

The payloads (:mod:`tests.support.hostile_templates`) each try to create a marker file, leave
the sandbox, or exhaust memory or time; every one must be refused by every command that reads a
template with one error line naming the template and what was refused (exit 2, no traceback, no
request to the server, no marker). Published Jinja templates (DeepEval's shipped prompt files
when deepeval is installed, the corpus' mirrors) render exactly as an unsandboxed Jinja
environment renders them with the same values.
"""

from __future__ import annotations

import importlib.util
import re
import warnings
from pathlib import Path
from typing import Any

import jinja2
import pytest
from jinja2 import meta
from typer.testing import CliRunner

from mitigate.cli import EXIT_REFUSED, app
from mitigate.errors import TemplateError, TemplateSandboxError
from mitigate.prompt import SLOT_RE, JudgePrompt
from mitigate.prompt.read._sandbox import (
    CALLS,
    FILTERS,
    MAX_BUILT_CHARS,
    MAX_OUTPUT_CHARS,
    TESTS,
    SandboxedTemplate,
    weigh,
)
from mitigate.prompt.read._syntax import _used_beyond_output
from mitigate.testing import StubOpenAIServer
from tests.support.bad_inputs import make_fixtures
from tests.support.hostile_templates import (
    PAYLOADS,
    SIZE_PAYLOADS,
    TEMPLATE_COMMANDS,
    Payload,
    hostile_template,
    template_command,
)

NAMES = [p.name for p in PAYLOADS]


@pytest.fixture(scope="module")
def fixtures(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_fixtures(tmp_path_factory.mktemp("hostile"))


@pytest.fixture(scope="module")
def never_called():
    """A server every command could reach, but none may: a hostile template is refused before the first
    call."""
    with StubOpenAIServer(latency=0.0) as server:
        yield server


@pytest.mark.parametrize("payload", PAYLOADS, ids=NAMES)
def test_every_payload_is_refused_when_the_template_is_read(payload: Payload, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    with pytest.raises(TemplateError) as refused:
        JudgePrompt.from_template(hostile_template(payload, marker))
    assert payload.expect in str(refused.value)
    assert not marker.exists()


def test_the_corpus_covers_every_kind_of_attack() -> None:
    text = " ".join(p.jinja for p in PAYLOADS)
    for form in (
        "cycler",
        "joiner",
        "namespace",
        "lipsum",
        "self",
        "config",
        "url_for",
        "|attr(",
        "|map(",
        ".format(",
        "format_map",
        "range(10 ** 9)",
        "* 10 ** 9",
        " ~ ",
        "**",
        "recursive",
        "macro",
        "include",
        "import",
        "extends",
    ):
        assert form in text, form
    assert len(PAYLOADS) >= 40 and len(set(NAMES)) == len(NAMES)


@pytest.mark.parametrize("command", sorted(TEMPLATE_COMMANDS))
def test_every_command_that_reads_a_template_refuses_every_payload_in_one_line(
    command: str,
    fixtures: Path,
    never_called: StubOpenAIServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.delenv("MITIGATE_DEBUG", raising=False)
    marker = tmp_path / "pwned"
    for k, payload in enumerate(PAYLOADS):
        prompt = tmp_path / f"hostile{k}.txt"
        prompt.write_text(hostile_template(payload, marker), encoding="utf-8")
        before = never_called.request_count
        result = CliRunner().invoke(app, template_command(command, prompt, fixtures, never_called.base_url))
        lines = result.stderr.splitlines()
        where = f"{command} / {payload.name}: {result.stderr[:300]}"
        assert result.exit_code == EXIT_REFUSED, where
        named = f"{'FILE' if 'prompts' in command else '--prompt'} {prompt}"
        assert len(lines) == 1 and lines[0].startswith(f"error: template {named}: "), where
        assert payload.expect in lines[0], where
        assert "Traceback" not in result.output, where
        assert never_called.request_count == before, where
        assert not marker.exists(), where


def test_a_refusal_names_the_line_and_the_construct() -> None:
    text = "Rate from 1 to 5.\n{{ output }}\n{{ cycler.__init__.__globals__ }}\nScore:"
    with pytest.raises(
        TemplateSandboxError,
        match=r"line 3: \{\{ cycler\.__init__\.__globals__ \}\} was refused: it "
        r"reads the attribute '__globals__'",
    ):
        JudgePrompt.from_template(text)


def test_a_forbidden_construct_is_refused_even_in_a_branch_that_would_not_run() -> None:
    with pytest.raises(TemplateSandboxError, match="reads the attribute '__class__'"):
        JudgePrompt.from_template("{% if never %}{{ ''.__class__ }}{% endif %}Rate {{ output }} from 1 to 5.")


# --------------------------------------------------------------------------- what the sandbox allows


def test_the_allowed_filters_tests_and_calls_work_in_the_sandbox() -> None:
    text = (
        "{% for k, v in rubric.items() %}{{ loop.index }}. {{ k|upper }}: {{ v|default('-')|trim }}"
        "{{ loop.cycle(';', '.') }}\n{% endfor %}"
        "{% for i in range(lo, hi + 1) %}{{ i }}{% if not loop.last %}, {% endif %}{% endfor %}\n"
        "{{ steps|join(' / ') }} {{ steps|length }} {{ steps|first }} {{ steps|last|title }}\n"
        "{{ rubric|tojson }} {{ 3.5|round }} {{ '7'|int + 1 }} {{ [3, 1, 2]|sort|list }} {{ -4|abs }}\n"
        "{{ 'x' ~ lo }} {{ lo is number }} {{ missing is defined }} {{ (note or 'none')|indent(2) }}"
        "{{ ' and ' if lo > 0 }}{{ [1, 2]|max }}{{ 'long text'|truncate(4, true, '', 0) }}"
    )
    rendered = SandboxedTemplate(text, undefined=jinja2.Undefined).render(
        {
            "rubric": {"clear": "It is clear. ", "short": None},
            "lo": 1,
            "hi": 3,
            "steps": ["read", "judge"],
            "note": "",
        }
    )
    assert rendered == (
        "1. CLEAR: It is clear.;\n2. SHORT: None.\n1, 2, 3\nread / judge 2 read Judge\n"
        '{"clear": "It is clear. ", "short": null} 4.0 8 [1, 2, 3] 4\n'
        "x1 True False none and 2long"
    )


def test_the_allow_lists_are_short_and_named() -> None:
    assert "attr" not in FILTERS and "format" not in FILTERS and "map" not in FILTERS
    assert "callable" not in TESTS and len(CALLS) == 6


def test_a_render_longer_than_the_bound_is_refused() -> None:
    text = "{% for i in range(3) %}{{ chunk }}{% endfor %}"
    SandboxedTemplate(text).render({"chunk": "x" * (MAX_OUTPUT_CHARS // 3)})
    with pytest.raises(TemplateSandboxError, match="renders more than"):
        SandboxedTemplate(text).render({"chunk": "x" * (MAX_OUTPUT_CHARS // 3 + 1)})


@pytest.mark.parametrize("payload", SIZE_PAYLOADS, ids=[p.name for p in SIZE_PAYLOADS])
def test_every_generated_size_bomb_is_refused_while_it_is_built(payload: Payload) -> None:
    with pytest.raises(TemplateSandboxError) as refused:
        JudgePrompt.from_template(hostile_template(payload, "unused"))
    assert payload.expect in str(refused.value)


def test_text_kept_by_a_set_block_counts_toward_the_render_budget() -> None:
    text = "{% set s %}{% for i in range(100) %}{{ chunk }}{% endfor %}{% endset %}{{ s|length }}"
    assert SandboxedTemplate(text).render({"chunk": "x" * 1000}) == "100000"
    with pytest.raises(TemplateSandboxError, match=f"more than {MAX_BUILT_CHARS:,} characters in all"):
        SandboxedTemplate(text).render({"chunk": "x" * (MAX_BUILT_CHARS // 100)})


def test_weigh_reads_a_list_shared_many_times_without_building_its_text() -> None:
    shared: list[Any] = ["x" * 10]
    for _ in range(60):  # 2**60 copies of the string as text; a few dozen lists in memory
        shared = [shared, shared]
    assert weigh(shared, 10**6) > 10**6
    small = [["ab", 1], {"k": None}]
    assert len(str(small)) <= weigh(small, 10**6) <= 2 * len(str(small))
    assert weigh(small, 10**6, indent=4) >= len(__import__("json").dumps(small, indent=4))
    looped: list[Any] = [1]
    looped.append(looped)
    assert weigh(looped, 100) < 100  # a cycle is read once, as Python writes it ([...])


def test_a_render_over_the_time_bound_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    import mitigate.prompt.read._sandbox as sandbox

    monkeypatch.setattr(sandbox, "MAX_SECONDS", 0.0)
    with pytest.raises(TemplateSandboxError, match="took more than 0 s"):
        SandboxedTemplate("{% for i in range(3) %}{{ i }}{% endfor %}").render({})


def test_a_template_failing_on_its_own_is_one_template_error() -> None:
    with pytest.raises(TemplateError, match="failed while rendering: ZeroDivisionError"):
        JudgePrompt.from_template("{{ 1 // 0 }} Rate {{ output }} from 1 to 5.")


# --------------------------------------------------------------------------- published templates render
# unchanged


def _plain_jinja(text: str, constants: dict[str, Any]) -> str:
    """``text`` rendered by an unsandboxed Jinja environment with the values the reader gives it."""
    env = jinja2.Environment(keep_trailing_newline=True, autoescape=False)
    plain = {m.group(1).strip() for m in SLOT_RE.finditer(text)}
    names = meta.find_undeclared_variables(env.parse(text))
    context = {n: "{{" + n + "}}" for n in names if n in plain and not _used_beyond_output(text, n)}
    return env.from_string(text).render({**context, **constants})


def _published_jinja() -> list[tuple[str, str, dict[str, Any]]]:
    """(name, text, constants) of every Jinja template the suite can read: DeepEval's shipped prompts,
    ours."""
    out: list[tuple[str, str, dict[str, Any]]] = []
    spec = importlib.util.find_spec("deepeval")
    if spec is not None and spec.origin is not None:
        root = Path(spec.origin).parent
        for path in sorted(root.rglob("*.txt")):
            text = path.read_text(encoding="utf-8")
            if "{%" in text or "{{" in text:
                out.append((f"deepeval/{path.relative_to(root)}", text, {}))
                out.append(
                    (
                        f"deepeval/{path.relative_to(root)} with constants",
                        text,
                        {
                            "score_range": (0, 10),
                            "rubric": "1: poor. 10: excellent.",
                            "evaluation_steps": "1. Check.",
                            "multimodal": False,
                            "_fragments": {"multimodal_input_rules": "Images count."},
                        },
                    )
                )
    from tests.prompt.test_template_corpus import MIRRORS

    out += [
        (f"mirror/{name}", text, dict(hints.get("constants", {})))
        for name, (text, hints, _) in MIRRORS.items()
        if "{%" in text or re.search(r"\{\{ \w+\[", text)
    ]
    return out


def test_published_jinja_templates_render_byte_for_byte_as_unsandboxed_jinja_renders_them() -> None:
    from mitigate.prompt.read._syntax import _render_jinja

    rendered = from_deepeval = 0
    for name, text, constants in _published_jinja():
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ours, _ = _render_jinja(text, constants)
        except TemplateSandboxError as exc:  # a published template must never meet the sandbox's rules
            raise AssertionError(f"{name}: {exc}") from None
        except TemplateError:  # a value nobody gave, used beyond a test: refused before and after the sandbox
            continue
        assert ours == _plain_jinja(text, constants), name
        rendered += 1
        from_deepeval += name.startswith("deepeval/")
    assert rendered >= 1  # the mirrors at least (the README's test command installs no DeepEval)
    if importlib.util.find_spec("deepeval") is not None:
        assert from_deepeval >= 1  # DeepEval's shipped prompts when it is installed


def test_deepevals_shipped_g_eval_template_reads_with_its_optional_names_left_out() -> None:
    spec = importlib.util.find_spec("deepeval")
    if spec is None or spec.origin is None:
        pytest.skip("deepeval is not installed (pip install -e '.[deepeval]')")
    path = Path(spec.origin).parent / "metrics" / "g_eval" / "templates" / "generate_evaluation_results.txt"
    if not path.is_file():
        pytest.skip("this deepeval ships no g_eval/templates/generate_evaluation_results.txt")
    with pytest.warns(Warning, match="_additional_context"):
        prompt = JudgePrompt.from_template(
            path.read_text(encoding="utf-8"),
            constants={"score_range": (1, 10), "evaluation_steps": "1. Check."},
        )
    assert (prompt.scale.min, prompt.scale.max) == (1, 10) and prompt.format.json_key == "score"
    assert (
        "Additional Context" not in prompt.template_text()[0] and "Rubric:" not in prompt.template_text()[0]
    )


def test_an_item_with_a_field_a_jinja_test_read_as_false_is_refused_not_judged_without_it() -> None:
    from mitigate import Item

    with pytest.warns(Warning, match="tests 'rubric'"):
        prompt = JudgePrompt.from_template(
            "{% if rubric %}Rubric: {{ rubric }}\n{% endif %}Rate {{ output }} 1 to 5."
        )
    assert prompt.render(Item(id="a", output="X"))[0].content == "Rate X 1 to 5."
    with pytest.raises(
        TemplateError, match=r"tests 'rubric'.*item 'b' has a field 'rubric'.*--const rubric="
    ):
        prompt.render(Item(id="b", output="X", inputs={"rubric": "Be strict."}))


@pytest.mark.parametrize(
    "demo_template",
    ["{output.__class__.__init__}", "{inputs[0]}", "{score:>999999999}", "{output!r}", "{author}"],
)
def test_a_demo_template_fills_only_its_plain_named_fields(demo_template: str) -> None:
    prompt = JudgePrompt.from_template("Rate {{output}} from 1 to 5.")
    with pytest.raises(TemplateError, match="expected demo_template fields among"):
        JudgePrompt.model_validate({**prompt.model_dump(), "demo_template": demo_template})


def test_a_hostile_system_template_is_refused_naming_both_files(
    fixtures: Path, never_called: StubOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    marker = tmp_path / "pwned"
    system = tmp_path / "system.txt"
    system.write_text(
        "You grade. {{ cycler.__init__.__globals__.os.system('touch " + str(marker) + "') }}",
        encoding="utf-8",
    )
    args = [
        *template_command("judge --dry-run", fixtures / "prompt.txt", fixtures, never_called.base_url),
        "--system",
        str(system),
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == EXIT_REFUSED and not marker.exists()
    assert result.stderr.startswith(
        f"error: template --prompt {fixtures / 'prompt.txt'} (with "
        f"--system {system}): "
        "the template's Jinja at line 1"
    )
