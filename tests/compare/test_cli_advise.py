import json

from peagle_nb.cli import main
from peagle_nb.files.results import write_results
from tests.compare import synthetic


def test_advise_on_a_users_file_and_published(tmp_path, capsys):
    path = write_results(tmp_path / "mine.json", synthetic.doc(batches=(1, 2)))
    assert main(["advise", "--results", str(path), "--concurrency", "1", "2", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["concurrency"] for r in rows] == [1, 2] and rows[0]["scenario"] == "mine.json · prose"
    assert rows[0]["recommendation"].split()[0] in {"peagle", "eagle3"}
    assert main(["advise", "--published"]) == 0
    out = capsys.readouterr().out
    assert "GPT-OSS-20B · B200 · MT-Bench (published)" in out and "peagle K=" in out


def test_advise_says_what_is_wrong(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    assert main(["advise", "--results", str(bad)]) == 2
    assert "not valid JSON" in capsys.readouterr().out
    only_kernels = write_results(tmp_path / "k.json", synthetic.make_results(
        "kernels", [{"kernel": "greedy_verify", "ms": 0.1}], machine=synthetic.MACHINE))
    assert main(["advise", "--results", str(only_kernels)]) == 2
    assert "nothing to advise on" in capsys.readouterr().out
