import json
import math

import numpy as np
import pytest
import torch

from peagle_nb.lab.notebooks.authoring import code, notebook, params
from peagle_nb.notebook.record import RECORD_MIME, read_records, record, recorded, to_jsonable


def test_to_jsonable_converts_numpy_and_torch():
    assert to_jsonable(np.float32(1.5)) == 1.5
    assert to_jsonable(np.int64(3)) == 3
    assert to_jsonable(torch.tensor([1, 2])) == [1, 2]
    assert to_jsonable({"a": (1, 2.0)}) == {"a": [1, 2.0]}
    json.dumps(to_jsonable({"x": np.arange(3)}))


@pytest.mark.parametrize("bad", [math.nan, math.inf, float("-inf")])
def test_record_rejects_non_finite(bad):
    with pytest.raises(ValueError, match="not a finite number"):
        record("x", bad)


def test_record_rejects_bad_name_and_type():
    with pytest.raises(ValueError, match="name"):
        record("has space", 1)
    with pytest.raises(TypeError, match="cannot store"):
        record("obj", object())


def test_record_outside_jupyter_keeps_value(capsys):
    assert record("t.tau", np.float64(3.25)) == 3.25
    assert recorded()["t.tau"] == 3.25
    assert "t.tau = 3.25" in capsys.readouterr().out


def test_read_records_last_value_wins():
    nb = notebook([params("SMOKE = True"), code("x")])
    nb["cells"][1]["outputs"] = [
        {"output_type": "display_data", "data": {RECORD_MIME: {"name": "a", "value": 1}}, "metadata": {}},
        {"output_type": "display_data", "data": {RECORD_MIME: {"name": "a", "value": 2}}, "metadata": {}},
        {"output_type": "stream", "name": "stdout", "text": "hi"},
    ]
    assert read_records(nb) == {"a": 2}
