"""Names that changed keep working with a DeprecationWarning naming the new one; one definition per
concept."""

from __future__ import annotations

import math

import pytest

from mitigate.data.schema import Item
from mitigate.errors import ConfigError
from mitigate.judge import CompositeJudge, PromptJudge, judge_scale
from mitigate.lm.fake import FakeLM
from mitigate.measures import Measure, ReportedMeasure
from mitigate.measures.base import MeasureInfo
from mitigate.prompt import JudgePrompt
from mitigate.registry import lookup, register, registered
from mitigate.scale import Scale
from mitigate.testing.checks import example_judge

ITEMS = [Item(id="a", output="x", human={"q": 3.0}), Item(id="b", output="y", human={"q": math.nan}),
         Item(id="c", output="z")]


def test_every_registered_measure_name_is_kebab_case() -> None:
    assert registered("measure")
    assert [n for n in registered("measure") if n != n.lower() or "_" in n] == []


def test_importing_every_measure_warns_of_no_deprecated_name() -> None:
    import subprocess
    import sys

    code = "import mitigate.measures, mitigate.registry; mitigate.registry.registered('measure')"
    done = subprocess.run([sys.executable, "-W", "error::DeprecationWarning", "-c", code],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr.strip().splitlines()[-1:]


def test_a_snake_case_measure_name_is_found_with_a_warning_naming_the_new_one() -> None:
    with pytest.warns(DeprecationWarning, match="'spearman_item' is deprecated; use 'spearman-item'"):
        assert lookup("measure", "spearman_item") is lookup("measure", "spearman-item")
    with pytest.raises(ConfigError, match="unknown measure 'no_such_measure'"):
        lookup("measure", "no_such_measure")


def test_a_plugin_measure_registered_in_snake_case_is_registered_in_kebab_case_with_a_warning() -> None:
    with pytest.warns(DeprecationWarning, match="'old_style_share' is deprecated; use 'old-style-share'"):
        @register("measure", "old_style_share")
        class OldStyle(ReportedMeasure):
            info = MeasureInfo(label="old style", direction="higher", group="bias")

            def compute(self, entry: object) -> Measure:
                return Measure(name="old-style-share", value=0.0, n=0)

    assert "old-style-share" in registered("measure") and "old_style_share" not in registered("measure")


def test_results_written_with_snake_case_measure_keys_read_under_the_kebab_case_names() -> None:
    from mitigate.harness.results import EntryResult
    from mitigate.run.runner import summarise

    old = {"spearman_item": {"name": "spearman_item", "value": 0.5, "n": 10},
           "my_own": {"name": "my_own", "value": 1.0, "n": 1}}
    entry = EntryResult(name="e", kind="prompt", scale=Scale(min=1, max=5), summary=summarise([]),
                        judgments=(), measures=old,
                        per_system={"sys_a": {"name": "sys_a", "value": 1.0, "n": 1}})
    assert set(entry.measures) == {"spearman-item", "my_own"}
    assert (entry.measures["spearman-item"].name == "spearman-item"
            and entry.measures["spearman-item"].value == 0.5)
    assert set(entry.per_system) == {"sys_a"}  # system names, not measures: kept as they came


def test_labelled_has_one_definition_and_the_selectors_names_warn() -> None:
    from mitigate.data.split import labelled, labelled_items
    from mitigate.selectors import has_label
    from mitigate.selectors import labelled as old_labelled

    assert [labelled(it, "q") for it in ITEMS] == [True, False, False]
    assert labelled_items(ITEMS, "q") == ITEMS[:1]
    with pytest.warns(DeprecationWarning, match=r"mitigate.selectors.labelled is deprecated; use "
                                                r"mitigate.data.split.labelled_items"):
        assert old_labelled(ITEMS, "q") == ITEMS[:1]
    with pytest.warns(DeprecationWarning, match=r"use mitigate.data.split.labelled$"):
        assert has_label(ITEMS[0], "q") is True


def test_the_registry_run_sync_is_run_coroutine_with_a_warning() -> None:
    from mitigate.registry import run_coroutine, run_sync

    async def seven() -> int:
        return 7

    assert run_coroutine(seven(), what="f()", instead="af()") == 7
    with pytest.warns(DeprecationWarning, match="use mitigate.registry.run_coroutine"):
        assert run_sync(seven(), what="f()", instead="af()") == 7


async def test_the_runner_run_sync_refuses_inside_a_running_loop() -> None:
    from mitigate.run import run_sync

    with pytest.raises(ConfigError,
                       match=r"run_sync\(\) runs its own event loop .* `await run\(judge, items\)`"):
        run_sync(example_judge(("q",)), ITEMS[:1])


def test_the_cli_message_flattener_has_its_own_name() -> None:
    from mitigate.cli.errors import flat_message, one_line
    from mitigate.paths import one_line as escaped

    assert flat_message("a\nb  c") == "a ; b c"
    assert escaped("a\nb") == "a\\nb"
    with pytest.warns(DeprecationWarning, match="use mitigate.cli.errors.flat_message"):
        assert one_line("a\nb") == "a ; b"


def test_the_template_report_is_found_at_its_old_home_with_a_warning_naming_the_new_one() -> None:
    import mitigate.prompt as prompt_package
    from mitigate.prompt import judge_prompt

    for name in ("describe_template", "read_prompt"):
        new_home = r"mitigate.prompt \(defined in mitigate.prompt.read.evidence\)"
        with pytest.warns(DeprecationWarning, match=rf"judge_prompt.{name} moved: import it from {new_home}"):
            assert getattr(judge_prompt, name) is getattr(prompt_package, name)
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        judge_prompt.no_such_name  # noqa: B018


def test_renames_and_moves_are_one_module_and_its_old_path_still_answers() -> None:
    import mitigate.deprecation as deprecation

    assert {"moved", "renamed", "warn_renamed"} <= set(deprecation.__all__)
    with pytest.warns(DeprecationWarning, match=r"mitigate.deprecated.renamed moved: import it from "
                                                r"mitigate.deprecation$"):
        from mitigate.deprecated import renamed
    assert renamed is deprecation.renamed


def _prompt_judge(scale: tuple[float, float]) -> PromptJudge:
    template = "Rate the summary from {lo} to {hi}.\n\nSummary: {{output}}\n\nScore:"
    lo, hi = scale
    prompt = JudgePrompt.from_template(template.format(lo=int(lo), hi=int(hi)), scale=scale)
    return PromptJudge(prompt, FakeLM([]))


class _Both(CompositeJudge):
    async def judge(self, item: Item) -> object:
        raise NotImplementedError


def test_judge_scale_is_the_one_scale_the_inner_prompts_share_and_refuses_two() -> None:
    same = _Both({"a": _prompt_judge((1, 5)), "b": _prompt_judge((1, 5))})
    assert judge_scale(same) == Scale(min=1, max=5)
    mixed = _Both({"a": _prompt_judge((1, 5)), "b": _prompt_judge((1, 10))})
    with pytest.raises(ConfigError, match="expected one answer scale across the judge's prompts; got 2"):
        judge_scale(mixed)
