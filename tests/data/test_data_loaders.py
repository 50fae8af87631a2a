"""Benchmark loaders: the generic JSONL format, SummEval, USS, WebNLG, TMU-GFM and the registry.

Parsing and error paths run on tiny files written to tmp_path; the real-data tests read the
shared data folder and skip when it is absent.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mitigate.data import (
    Benchmark,
    Item,
    benchmark_names,
    load,
    load_jsonl,
    load_summeval,
    open_benchmark,
    save_jsonl,
)
from mitigate.data._summeval import LLM_SUMMEVAL_SYSTEMS, annotation_files
from mitigate.data._tmu_gfm import load_tmu_gfm
from mitigate.data._uss import load_uss, majority_label
from mitigate.data._webnlg import load_webnlg, triples_text
from mitigate.errors import ConfigError, DataError
from mitigate.paths import data_dir

# ----------------------------------------------------------------------------- helpers


def write_lines(path: Path, rows: list[object | str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n", encoding="utf-8"
    )
    return path


def good_row(i: int = 1, **extra: object) -> dict[str, object]:
    row: dict[str, object] = {
        "id": f"x{i}",
        "system": "S1",
        "doc_id": f"d{i}",
        "inputs": {"source": "src text"},
        "output": "out text",
        "reference": "ref",
        "human": {"coherence": 3.5},
        "annotators": {"coherence": [3, 4]},
    }
    row.update(extra)
    return row


def real_root() -> Path:
    root = data_dir()
    if root is None:
        pytest.skip("no shared data folder (set MITIGATE_DATA_DIR)")
    return root


def needs(*relpaths: str) -> Path:
    root = real_root()
    for rel in relpaths:
        if not (root / rel).exists():
            pytest.skip(f"shared data file absent: {rel}")
    return root


# ----------------------------------------------------------------------------- generic JSONL


def test_jsonl_round_trips_every_item_field(tmp_path):
    items = (
        Item(
            id="a",
            output="o1",
            inputs={"source": "s"},
            system="S",
            doc_id="d",
            reference="r",
            human={"fluency": 2.5},
            annotators={"fluency": (2.0, None, 3.0)},
            meta={"k": [1, 2]},
        ),
        Item(id="b", output="o2", output_b="o3"),
    )
    bench = Benchmark(name="t", items=items, criteria=("fluency",))
    path = save_jsonl(bench, tmp_path / "sub" / "b.jsonl")
    loaded = load_jsonl(path, name="t")
    assert loaded.items == items
    assert loaded.criteria == ("fluency",)
    assert loaded.name == "t"


def test_jsonl_name_defaults_to_stem_and_criteria_follow_first_appearance(tmp_path):
    path = write_lines(
        tmp_path / "mybench.jsonl", [good_row(1, human={"b": 2}), "", good_row(2, human={"a": 1, "b": 3})]
    )
    bench = load_jsonl(path)
    assert bench.name == "mybench"
    assert bench.criteria == ("b", "coherence", "a")
    assert len(bench) == 2


@pytest.mark.parametrize(
    ("line2", "needle"),
    [
        ("{not json", "invalid JSON"),
        ('["a list"]', "expected a JSON object; got list"),
        (json.dumps({"output": "o"}), "expected a non-empty string 'id'; got no 'id'"),
        (json.dumps({"id": "", "output": "o"}), "expected a non-empty string 'id'"),
        (json.dumps({"id": "z"}), "expected an 'output' text in row 'z'; got no 'output'"),
        (json.dumps({"id": "z", "output": 5}), "expected a string for 'output'"),
        (
            json.dumps({"id": "z", "output": "o", "human": {"coherence": "high"}}),
            "expected a number for human score 'coherence'; got str",
        ),
        (json.dumps({"id": "z", "output": "o", "human": {"coherence": True}}), "expected a number"),
        (json.dumps({"id": "z", "output": "o", "human": {"coherence": 9}}), "within the human scale 1 to 5"),
        (
            json.dumps({"id": "z", "output": "o", "annotators": {"coherence": [3, "x"]}}),
            "annotator score 'coherence'",
        ),
        (json.dumps({"id": "z", "output": "o", "annotators": {"coherence": 3}}), "expected a list of scores"),
        (
            json.dumps({"id": "z", "output": "o", "inputs": {"source": 3}}),
            "expected 'inputs' to be an object of named texts",
        ),
        (json.dumps({"id": "z", "ouput": "o"}), "unknown key(s) ['ouput']"),
        (json.dumps({"id": "x1", "output": "o"}), "expected a unique 'id'; got 'x1', already used on line 1"),
    ],
)
def test_jsonl_bad_row_names_file_line_and_expectation(tmp_path, line2, needle):
    path = write_lines(tmp_path / "bad.jsonl", [good_row(1), line2])
    with pytest.raises(DataError) as info:
        load_jsonl(path)
    message = str(info.value)
    assert message.startswith(f"{path}:2:")
    assert needle in message
    assert info.value.context["line"] == 2


def test_jsonl_lone_surrogate_escape_is_a_file_line_error_at_load(tmp_path):
    # json.loads accepts "\ud800", but no UTF-8 text can hold it: it used to crash the run much later
    path = write_lines(
        tmp_path / "sur.jsonl", [good_row(1), '{"id": "z", "output": "half a pair \\ud800 here"}']
    )
    with pytest.raises(DataError) as info:
        load_jsonl(path)
    assert str(info.value).startswith(f"{path}:2:") and "\\ud800" in str(info.value)
    assert info.value.context["line"] == 2


def test_jsonl_keeps_escaped_surrogate_pairs_and_other_escapes(tmp_path):
    path = write_lines(tmp_path / "ok.jsonl", ['{"id": "z", "output": "\\ud83d\\ude00 caf\\u00e9"}'])
    assert load_jsonl(path).items[0].output == "\U0001f600 caf\u00e9"


def test_jsonl_opening_with_a_byte_order_mark_is_read_loaded_and_streamed(tmp_path):
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + "".join(json.dumps(good_row(i)) + "\n" for i in range(3)).encode())
    assert [it.id for it in load_jsonl(path).items] == [good_row(i)["id"] for i in range(3)]
    streamed = open_benchmark(f"jsonl:{path}")
    assert [it.id for it in streamed.items] == [good_row(i)["id"] for i in range(3)]


def test_jsonl_line_that_is_not_utf8_names_file_line_and_byte(tmp_path):
    path = tmp_path / "latin.jsonl"
    path.write_bytes(json.dumps(good_row(1)).encode() + b'\n{"id": "z", "output": "caf\xe9"}\n')
    with pytest.raises(DataError) as info:
        load_jsonl(path)
    assert (
        str(info.value).startswith(f"{path}:2:") and "0xe9" in str(info.value) and "UTF-8" in str(info.value)
    )


def test_jsonl_scale_argument_allows_other_ranges(tmp_path):
    path = write_lines(tmp_path / "wide.jsonl", [good_row(1, human={"q": 87.5}, annotators={})])
    bench = load_jsonl(path, scale=(0, 100))
    assert bench.scale.max == 100
    assert bench.items[0].human == {"q": 87.5}


def test_jsonl_missing_file_and_empty_file_raise(tmp_path):
    with pytest.raises(DataError, match="no such file"):
        load_jsonl(tmp_path / "nope.jsonl")
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n", encoding="utf-8")
    with pytest.raises(DataError, match="expected at least one row"):
        load_jsonl(empty)


# ----------------------------------------------------------------------------- SummEval (synthetic)


def summeval_row(doc: str, system: str, expert: list[int], turker: list[int]) -> dict[str, object]:
    dims = ("coherence", "consistency", "fluency", "relevance")
    return {
        "id": doc,
        "model_id": system,
        "decoded": f"summary {system} {doc}",
        "text": f"article {doc}",
        "references": [f"ref1 {doc}", f"ref2 {doc}"],
        "filepath": "x",
        "expert_annotations": [{d: s for d in dims} for s in expert],
        "turker_annotations": [{d: s for d in dims} for s in turker],
    }


def make_llm_summeval(root: Path, docs: tuple[str, ...] = ("d1", "d2")) -> Path:
    for system, rel in zip(LLM_SUMMEVAL_SYSTEMS, annotation_files(), strict=True):
        write_lines(root / rel, [summeval_row(d, system, [1, 2, 3], [5, 5, 4, 4, 2]) for d in docs])
    return root


def test_summeval_items_use_system_doc_ids_and_expert_means(tmp_path):
    bench = load_summeval(root=make_llm_summeval(tmp_path))
    assert len(bench) == 12 * 2
    item = bench.items[0]
    assert item.id == "M8/d1" and item.system == "M8" and item.doc_id == "d1"
    assert item.inputs == {"source": "article d1"}
    assert item.reference == "ref1 d1"
    assert item.human["coherence"] == pytest.approx(2.0)
    assert item.annotators["fluency"] == (1.0, 2.0, 3.0)
    assert item.meta["turker"]["relevance"] == (5.0, 5.0, 4.0, 4.0, 2.0)
    assert bench.criteria == ("coherence", "consistency", "fluency", "relevance")
    assert "24 items, 12 systems, 2 documents" in bench.summary()


def test_summeval_turker_variant_uses_crowd_ratings(tmp_path):
    bench = load_summeval(annotators="turker", root=make_llm_summeval(tmp_path))
    assert bench.items[0].human["coherence"] == pytest.approx(4.0)
    assert len(bench.items[0].annotators["coherence"]) == 5
    assert bench.items[0].meta["expert"]["coherence"] == (1.0, 2.0, 3.0)


def test_summeval_missing_files_are_named_relative_to_data_dir_in_one_line(tmp_path):
    make_llm_summeval(tmp_path)
    (tmp_path / annotation_files()[3]).unlink()
    with pytest.raises(DataError) as info:
        load_summeval(root=tmp_path)
    assert "summeval_llm_summeval/model_output_annotations/M11_outputs_annotations.jsonl" in str(info.value)
    assert "1 of 12 are missing" in str(info.value) and "\n" not in str(info.value)
    for name in annotation_files()[:6]:
        (tmp_path / name).unlink(missing_ok=True)
    with pytest.raises(
        DataError, match=r"6 of 12 are missing \([^()]+ and 3 more\)\. They come from"
    ) as info:
        load_summeval(root=tmp_path)
    assert "\n" not in str(info.value)


def test_summeval_bad_rating_names_file_and_line(tmp_path):
    make_llm_summeval(tmp_path)
    path = tmp_path / annotation_files()[0]
    bad = summeval_row("d2", "M8", [1, 2, 3], [5, 5, 4, 4, 2])
    bad["expert_annotations"][1]["coherence"] = "three"  # type: ignore[index]
    write_lines(path, [summeval_row("d1", "M8", [1, 2, 3], [5, 5, 4, 4, 2]), bad])
    with pytest.raises(
        DataError,
        match=r"M8_outputs_annotations\.jsonl:2: expected a number for "
        r"'expert_annotations'\[1\]\.coherence",
    ):
        load_summeval(root=tmp_path)


def test_summeval_row_from_wrong_system_is_rejected(tmp_path):
    make_llm_summeval(tmp_path)
    write_lines(tmp_path / annotation_files()[0], [summeval_row("d1", "M9", [1, 2, 3], [5, 5, 4, 4, 2])])
    with pytest.raises(DataError, match="expected model_id 'M8'"):
        load_summeval(root=tmp_path)


def test_summeval_bartscore_copy_reads_flattened_rows_and_rejects_turker(tmp_path):
    rows = [
        {
            "doc_id": "d1",
            "model_id": m,
            "src": "a",
            "ref_summs": ["r1", "r2"],
            "sys_summ": f"s {m}",
            "coherence": 2.0,
            "consistency": 3.0,
            "fluency": 4.0,
            "relevance": 5.0,
        }
        for m in ("M11", "M2", "M0")
    ]
    write_lines(tmp_path / "summeval_bartscore" / "summeval_1600_expert_avg.jsonl", rows)
    bench = load_summeval("bartscore", root=tmp_path)
    assert [i.id for i in bench.items] == ["M0/d1", "M2/d1", "M11/d1"]
    assert bench.items[0].human["relevance"] == 5.0 and bench.items[0].annotators == {}
    with pytest.raises(ConfigError, match="expert means only"):
        load_summeval("bartscore", annotators="turker", root=tmp_path)


def test_summeval_unknown_source_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="'llm_summeval' or 'bartscore'"):
        load_summeval("cnn", root=tmp_path)  # type: ignore[arg-type]


def test_loader_without_data_folder_says_how_to_set_it(monkeypatch):
    monkeypatch.setattr("mitigate.data._jsonl.data_dir", lambda: None)
    with pytest.raises(DataError, match="MITIGATE_DATA_DIR"):
        load_summeval()


# ----------------------------------------------------------------------------- USS (synthetic)

USS_TEXT = (
    "\n"
    "USER\tHi, find me a flight.\tINFORM_INTENT\t3,3,3\n"
    "SYSTEM\tWhere to?\tREQUEST\t\n"
    "USER\tTo Paris.\tINFORM\t2,2,4\n"
    "SYSTEM\tFound one.\tOFFER\t\n"
    "SYSTEM\tShall I book it?\tOFFER_INTENT\t\n"
    "USER\tYes please.\tAFFIRM\t4,5,4,5\n"
    "USER\tOVERALL\t\t4,4,3\n"
    "\n"
    "SYSTEM\tHello, how can I help?\t\t\n"
    "USER\tMovies.\t\t3,2\n"
    "USER\tOVERALL\t\t2,3\n"
)


def write_uss(root: Path, text: str = USS_TEXT, name: str = "SGD") -> Path:
    path = root / "user_satisfaction_uss" / "dataset" / f"{name}.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_majority_label_breaks_ties_towards_the_lower_score():
    assert majority_label([4, 4, 3]) == 4
    assert majority_label([2, 3]) == 2
    assert majority_label([4, 5, 4, 5]) == 4
    assert majority_label([1, 3, 3, 5, 5]) == 3


def test_uss_dialogue_items_hold_transcript_and_overall_ratings(tmp_path):
    write_uss(tmp_path)
    bench = load_uss("sgd", root=tmp_path)
    assert len(bench) == 2
    first = bench.items[0]
    assert first.id == "sgd/0000"
    assert first.output.splitlines() == [
        "USER: Hi, find me a flight.",
        "SYSTEM: Where to?",
        "USER: To Paris.",
        "SYSTEM: Found one.",
        "SYSTEM: Shall I book it?",
        "USER: Yes please.",
    ]
    assert first.inputs["dialogue"] == first.output
    assert first.annotators["satisfaction"] == (4.0, 4.0, 3.0)
    assert first.human["satisfaction"] == pytest.approx(11 / 3)
    assert first.meta["label"] == 4
    assert bench.items[1].meta["label"] == 2
    assert bench.criteria == ("satisfaction",) and bench.scale.min == 1 and bench.scale.max == 5


def test_uss_turn_items_judge_system_responses_with_the_next_user_rating(tmp_path):
    write_uss(tmp_path)
    bench = load_uss("sgd", level="turn", root=tmp_path)
    assert [i.id for i in bench.items] == ["sgd/0000/t02", "sgd/0000/t05", "sgd/0001/t01"]
    second = bench.items[1]
    assert second.output == "Found one.\nShall I book it?"
    assert second.inputs["context"] == "USER: Hi, find me a flight.\nSYSTEM: Where to?\nUSER: To Paris."
    assert second.annotators["satisfaction"] == (4.0, 5.0, 4.0, 5.0)
    assert second.meta["label"] == 4
    assert second.doc_id == "sgd/0000"
    assert "Yes please" not in second.inputs["context"]


@pytest.mark.parametrize(
    ("text", "line", "needle"),
    [
        ("USER\thi\tX\t3,3\nUSER\tOVERALL\t\t\n", 2, "expected comma-separated integer ratings 1-5"),
        ("USER\thi\tX\t3,9\nUSER\tOVERALL\t\t3\n", 1, "got '3,9'"),
        ("USER\thi\tX\n", 1, "expected 4 tab-separated fields"),
        ("BOT\thi\t\t\n", 1, "expected role USER or SYSTEM; got 'BOT'"),
        ("USER\thi\tX\t3\nSYSTEM\tok\t\t\n", 1, "to end with a 'USER<TAB>OVERALL' line"),
        (
            "USER\thi\tX\t3\nUSER\tOVERALL\t\t3\nSYSTEM\tmore\t\t\n",
            3,
            "expected a blank line after the USER OVERALL line",
        ),
    ],
)
def test_uss_malformed_lines_name_file_and_line(tmp_path, text, line, needle):
    path = write_uss(tmp_path, text)
    with pytest.raises(DataError) as info:
        load_uss("sgd", root=tmp_path)
    assert str(info.value).startswith(f"{path}:{line}:")
    assert needle in str(info.value)


def test_uss_line_that_is_not_utf8_names_file_and_line(tmp_path):
    path = write_uss(tmp_path, "USER\thi\tX\t3\nUSER\tOVERALL\t\t3\n")
    path.write_bytes(path.read_bytes().replace(b"OVERALL", b"OVERALL\xff"))
    with pytest.raises(DataError) as info:
        load_uss("sgd", root=tmp_path)
    assert str(info.value).startswith(f"{path}:2:") and "UTF-8" in str(info.value)


def test_uss_rejects_unknown_corpus_and_names_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="must be one of"):
        load_uss("jddc", root=tmp_path)
    with pytest.raises(DataError, match="user_satisfaction_uss/dataset/MWOZ.txt"):
        load_uss("mwoz", root=tmp_path)


# ----------------------------------------------------------------------------- WebNLG (synthetic)

TABLE = (
    "<table><thead><tr><th><b>Subject</b></th><th>Predicate</th><th>Object</th></tr></thead><tbody>"
    '<tr><td class="a">Alan &amp; Co</td><td class="a">city</td><td class="a">"Paris, France"</td></tr>'
    "<tr>\n<td>Alan &amp; Co</td>\n<td>founded</td>\n<td>1999</td>\n</tr></tbody></table>"
)


def make_webnlg(root: Path, *, listed_mean: float | None = None) -> Path:
    base = root / "webnlg2020_human_eval"
    res = base / "evaluation/human-evaluation/results/en"
    crit = {"Correctness": 90, "DataCoverage": 80, "Fluency": 70, "Relevance": 60, "TextStructure": 50}
    rows = []
    for sub in ("SysA", "WebNLG-2020-reference"):
        rows.append(
            {
                "submission_id": sub,
                "size": "2",
                "sample_id": "2",
                "domain": "type1",
                "category": "City",
                **{k: (listed_mean if listed_mean is not None else v - 5) for k, v in crit.items()},
            }
        )
        raters = {"w1": crit, "w2": {k: v - 10 for k, v in crit.items()}}
        (res / sub).mkdir(parents=True, exist_ok=True)
        (res / sub / "primary.json").write_text(json.dumps({"2": raters}), encoding="utf-8")
    (res / "english_humeval_data_all_teams.json").write_text(json.dumps(rows), encoding="utf-8")
    tables = base / "evaluation/human-evaluation/amt-scripts/data/en/tables/tables_xml.json"
    tables.parent.mkdir(parents=True, exist_ok=True)
    tables.write_text(json.dumps({"2": TABLE}), encoding="utf-8")
    out = base / "submissions/rdf2text/en/SysA/primary.en"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("line for id 1\nAlan & Co is in Paris.\nline 3", encoding="utf-8")
    return root


def test_triples_text_reads_html_table_rows():
    assert triples_text(TABLE) == 'Alan & Co | city | "Paris, France"\nAlan & Co | founded | 1999'


def test_webnlg_items_join_ratings_outputs_and_triples(tmp_path):
    bench = load_webnlg(root=make_webnlg(tmp_path))
    assert len(bench) == 1
    item = bench.items[0]
    assert item.id == "SysA/2" and item.system == "SysA" and item.doc_id == "2"
    assert item.output == "Alan & Co is in Paris."
    assert item.inputs["triples"].startswith("Alan & Co | city")
    assert item.human["correctness"] == pytest.approx(85.0)
    assert item.annotators["text_structure"] == (50.0, 40.0)
    assert item.meta["raters"] == ("w1", "w2") and item.meta["size"] == 2
    assert bench.scale.min == 0 and bench.scale.max == 100


def test_webnlg_reference_rows_are_kept_only_on_request_and_marked(tmp_path):
    bench = load_webnlg(include_reference=True, root=make_webnlg(tmp_path))
    ref = bench.items[1]
    assert ref.system == "WebNLG-2020-reference"
    assert ref.output == "" and ref.meta["output_missing"] is True


def test_webnlg_listed_mean_disagreeing_with_raters_is_an_error(tmp_path):
    with pytest.raises(DataError, match="expected the listed Correctness mean to equal the raters' mean"):
        load_webnlg(root=make_webnlg(tmp_path, listed_mean=12.0))


def test_webnlg_missing_output_file_is_named(tmp_path):
    make_webnlg(tmp_path)
    (tmp_path / "webnlg2020_human_eval/submissions/rdf2text/en/SysA/primary.en").unlink()
    with pytest.raises(DataError, match="webnlg2020_human_eval/submissions/rdf2text/en/SysA/primary.en"):
        load_webnlg(root=tmp_path)


# ----------------------------------------------------------------------------- TMU-GFM (synthetic)

GFM_HEADER = "source,output,grammer,fluency,meaning,system,ave_g,ave_f,ave_m\n"


def write_gfm(root: Path, body: str) -> Path:
    path = root / "tmu_gfm" / "tmu-gfm-dataset.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(GFM_HEADER + body, encoding="utf-8")
    return path


def test_tmu_gfm_leaves_zero_ratings_out_of_the_mean_like_the_dataset(tmp_path):
    write_gfm(
        tmp_path,
        (
            'He go home.,He goes home.,"2,3,1,0,3","1,3,2,1,3","3,4,3,0,4","lstm,cnn",2.25,2.0,3.5\n'
            'He go home.,He went home.,"4,4,4,4,4","4,4,4,4,4","4,4,4,4,4",smt,4.0,4.0,4.0\n'
        ),
    )
    bench = load_tmu_gfm(root=tmp_path)
    first, second = bench.items
    assert first.id == "0000" and first.inputs == {"source": "He go home."}
    assert first.human["grammar"] == pytest.approx(2.25)
    assert first.annotators["grammar"] == (2.0, 3.0, 1.0, None, 3.0)
    assert first.meta["raw"]["meaning"] == (3, 4, 3, 0, 4)
    assert first.meta["systems"] == ("lstm", "cnn") and first.system == "lstm,cnn"
    assert first.doc_id == second.doc_id == "src0"
    assert bench.criteria == ("grammar", "fluency", "meaning")
    counted = load_tmu_gfm(zero_as_missing=False, root=tmp_path)
    assert counted.items[0].human["grammar"] == pytest.approx(1.8)


def test_tmu_gfm_bad_rating_names_file_and_csv_line(tmp_path):
    path = write_gfm(
        tmp_path,
        (
            'a,b,"1,2,3,4,4","1,2,3,4,4","1,2,3,4,4",smt,1,1,1\n'
            'a,c,"1,2,x,4,4","1,2,3,4,4","1,2,3,4,4",smt,1,1,1\n'
        ),
    )
    with pytest.raises(DataError) as info:
        load_tmu_gfm(root=tmp_path)
    assert str(info.value).startswith(f"{path}:3:")
    assert "expected comma-separated integer ratings 0-4 in column 'grammer'" in str(info.value)


def test_tmu_gfm_file_that_is_not_utf8_names_file_and_line(tmp_path):
    path = write_gfm(tmp_path, 'a,b,"1,2,3,4,4","1,2,3,4,4","1,2,3,4,4",smt,1,1,1\n')
    path.write_bytes(path.read_bytes() + b'a\xe9,c,"1,2,3,4,4","1,2,3,4,4","1,2,3,4,4",smt,1,1,1\n')
    with pytest.raises(DataError) as info:
        load_tmu_gfm(root=tmp_path)
    assert str(info.value).startswith(f"{path}:3:") and "0xe9" in str(info.value)


def test_tmu_gfm_missing_column_is_reported(tmp_path):
    path = tmp_path / "tmu_gfm" / "tmu-gfm-dataset.csv"
    path.parent.mkdir(parents=True)
    path.write_text("source,output,fluency\na,b,1\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"missing \['system', 'grammer', 'meaning'\]"):
        load_tmu_gfm(root=tmp_path)


# ----------------------------------------------------------------------------- registry


def test_registry_loads_by_name_and_passes_keywords(tmp_path):
    write_uss(tmp_path)
    assert len(load("uss-sgd", root=tmp_path)) == 2
    assert len(load("uss-sgd", level="turn", root=tmp_path)) == 3
    path = write_lines(tmp_path / "b.jsonl", [good_row(1)])
    assert load(f"jsonl:{path}").items[0].id == "x1"


def test_registry_unknown_name_lists_the_names():
    with pytest.raises(DataError) as info:
        load("summevall")
    for name in (
        "summeval",
        "summeval-bartscore",
        "uss-sgd",
        "uss-multiwoz",
        "webnlg",
        "tmu-gfm",
        "jsonl:<path>",
    ):
        assert name in str(info.value)
    assert set(benchmark_names()) >= {"summeval", "webnlg", "tmu-gfm"}
    with pytest.raises(DataError, match="expected a path after 'jsonl:'"):
        load("jsonl:")


# ----------------------------------------------------------------------------- real data


@pytest.mark.data
def test_real_summeval_llm_copy_has_1200_items_with_3_experts_and_5_turkers():
    root = needs("summeval_llm_summeval/model_output_annotations/M8_outputs_annotations.jsonl")
    bench = load_summeval(root=root)
    assert len(bench) == 1200
    assert len({i.system for i in bench.items}) == 12 and len({i.doc_id for i in bench.items}) == 100
    assert len({i.id for i in bench.items}) == 1200
    for item in bench.items:
        for criterion in bench.criteria:
            assert len(item.annotators[criterion]) == 3 and len(item.meta["turker"][criterion]) == 5
            assert 1 <= item.human[criterion] <= 5


@pytest.mark.data
def test_real_summeval_bartscore_copy_has_1600_items_and_agrees_with_llm_copy():
    root = needs(
        "summeval_bartscore/summeval_1600_expert_avg.jsonl",
        "summeval_llm_summeval/model_output_annotations/M8_outputs_annotations.jsonl",
    )
    wide = load_summeval("bartscore", root=root)
    assert len(wide) == 1600 and len({i.system for i in wide.items}) == 16
    narrow = {i.id: i for i in load_summeval(root=root).items}
    shared = [i for i in wide.items if i.id in narrow]
    assert len(shared) == 1200
    for item in shared:
        for criterion, value in item.human.items():
            assert value == pytest.approx(narrow[item.id].human[criterion])


@pytest.mark.data
@pytest.mark.parametrize(
    ("corpus", "dialogues"), [("sgd", 1000), ("multiwoz", 1000), ("redial", 1000), ("ccpe", 500)]
)
def test_real_uss_dialogue_counts_and_label_ranges(corpus, dialogues):
    root = needs("user_satisfaction_uss/dataset/SGD.txt")
    bench = load_uss(corpus, root=root)
    assert len(bench) == dialogues
    for item in bench.items:
        ratings = item.annotators["satisfaction"]
        assert 3 <= len(ratings) <= 7
        assert all(1 <= r <= 5 for r in ratings if r is not None)
        assert item.meta["label"] in ratings
    turns = load_uss(corpus, level="turn", root=root)
    assert len({i.doc_id for i in turns.items}) == dialogues
    assert all(i.output and 1 <= i.human["satisfaction"] <= 5 for i in turns.items)


@pytest.mark.data
def test_real_uss_sgd_turn_level_covers_every_rated_exchange():
    root = needs("user_satisfaction_uss/dataset/SGD.txt")
    # 13,833 rated user lines = 1,000 OVERALL + 1,000 opening turns + 11,833 exchanges
    assert len(load_uss("sgd", level="turn", root=root)) == 11833


@pytest.mark.data
def test_real_webnlg_has_3025_rated_outputs_2847_with_text():
    root = needs(
        "webnlg2020_human_eval/evaluation/human-evaluation/results/en/english_humeval_data_all_teams.json"
    )
    full = load_webnlg(include_reference=True, root=root)
    assert len(full) == 3025
    assert sum(len(i.meta["raters"]) for i in full.items) == 8453
    assert len({r for i in full.items for r in i.meta["raters"]}) == 88
    bench = load_webnlg(root=root)
    assert len(bench) == 2847 and len({i.system for i in bench.items}) == 16
    # one submission line is genuinely empty (Baseline-FORGE2017, test id 533, rated 0 for fluency)
    assert [i.id for i in bench.items if not i.output.strip()] == ["Baseline-FORGE2017/533"]
    for item in bench.items:
        assert len(item.inputs["triples"].splitlines()) == item.meta["size"]
        assert all(0 <= v <= 100 for v in item.human.values())


@pytest.mark.data
def test_real_tmu_gfm_has_4221_items_matching_the_dataset_averages():
    root = needs("tmu_gfm/tmu-gfm-dataset.csv")
    import csv

    bench = load_tmu_gfm(root=root)
    assert len(bench) == 4221
    with (root / "tmu_gfm/tmu-gfm-dataset.csv").open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    for item, row in zip(bench.items, rows, strict=True):
        assert item.human["grammar"] == pytest.approx(float(row["ave_g"]))
        assert item.human["fluency"] == pytest.approx(float(row["ave_f"]))
        assert item.human["meaning"] == pytest.approx(float(row["ave_m"]))
        assert all(len(v) == 5 for v in item.annotators.values())
