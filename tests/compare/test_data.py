import json

import pytest

from peagle_nb.files import paths
from peagle_nb.compare.data import load_results, measured_groups, runs_of, select
from peagle_nb.files.results import ResultsFormatError, write_results
from tests.compare import synthetic


def test_loads_a_folder_and_user_files(tmp_path):
    write_results(tmp_path / "engine_cpu.json", synthetic.doc())
    write_results(tmp_path / "mine.json", synthetic.doc(prompt_set="code"))
    docs = load_results(directory=tmp_path)
    assert [d["_path"].endswith(n) for d, n in zip(docs, ("engine_cpu.json", "mine.json"))] == [True, True]
    runs = runs_of(docs)
    assert {r["file"] for r in runs} == {"engine_cpu.json", "mine.json"} and runs[0]["device"] == "cpu"
    assert set(measured_groups(docs)) == {"engine_cpu.json · prose", "mine.json · code"}
    assert len(select(runs, method="peagle", k=3)) == 2
    assert len(load_results([tmp_path / "mine.json"])) == 1


@pytest.mark.parametrize("content, expected", [
    ("{not json", "not valid JSON"),
    (json.dumps({"schema": "other", "source": "engine", "runs": [{}]}), "'schema' must be"),
    (json.dumps({"schema": "peagle-nb/results/v1", "source": "engine", "runs": [{"k": 1}]}), "machine"),
    (json.dumps([1, 2]), "not a results document"),
])
def test_bad_files_get_a_clear_error(tmp_path, content, expected):
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    with pytest.raises(ResultsFormatError, match=expected) as info:
        load_results([bad])
    assert "bad.json" in str(info.value)
    if expected != "not a results document":
        assert "data/results/README.md" in str(info.value)


def test_a_gzip_results_file_round_trips_byte_for_byte_and_a_fake_one_is_named(tmp_path):
    doc = synthetic.doc()
    a, b = write_results(tmp_path / "a.json.gz", doc), write_results(tmp_path / "b.json.gz", doc)
    assert a.read_bytes() == b.read_bytes() and a.read_bytes()[:2] == b"\x1f\x8b"  # gzip, no timestamp in it
    assert {d["_path"].rsplit("/", 1)[-1] for d in load_results(directory=tmp_path)} == {"a.json.gz", "b.json.gz"}
    assert load_results([a])[0]["runs"] == doc["runs"]
    fake = tmp_path / "fake.json.gz"
    fake.write_text(json.dumps(doc))
    with pytest.raises(ResultsFormatError, match="fake.json.gz: named .gz but not gzip"):
        load_results([fake])
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(a.read_bytes()[:-20])
    with pytest.raises(ResultsFormatError, match="cut.json.gz: the gzip stream ends early"):
        load_results([cut])


def test_missing_file_and_folder(tmp_path):
    with pytest.raises(ResultsFormatError, match="no such results file"):
        load_results([tmp_path / "nope.json"])
    with pytest.raises(ResultsFormatError, match="results folder not found"):
        load_results(directory=tmp_path / "nope")


def test_shipped_results_files_are_valid_and_published_numbers_cite_sources():
    docs = load_results()
    published = [d for d in docs if d["source"] == "published"]
    assert len(published) == 1
    for run in published[0]["runs"]:
        assert run.get("source_ref"), run
    for doc in docs:  # every file in data/results/ is documented in its README
        name = doc["_path"].rsplit("/", 1)[-1]
        assert f"`{name}`" in (paths.results_dir() / "README.md").read_text(), f"{name} missing from README"


def test_record_names_drop_the_json_and_gzip_suffixes():
    from peagle_nb.compare.scenario import slug

    assert slug("engine_cpu.json · prose") == "engine_cpu.prose" == slug("engine_cpu.json.gz · prose")
