"""What `predict` and `export` print and write, without a search: predictions on stdout and errors on stderr, the
latency with the digits it has, and the export's weights readable as its other files (pure logic and a tiny
network; the whole export and predict on a real search: test_export_e2e.py)."""

import json
import os
import stat

from safetensors.torch import load_file
from torch import nn

from search.results.export import META_FILE, WEIGHTS_FILE, latency_words, write_weights
from search.results.predict import Prediction, write_predictions

UMASK = os.umask(0o022)
os.umask(UMASK)  # read back: the mode a file written here gets
PREDICTIONS = [
    Prediction("a.png", 3, "3", 0.91),
    Prediction("notes.png", error="notes.png: not a readable image (UnidentifiedImageError)"),
    Prediction("b.png", 7, "7", 0.5),
]


def test_predictions_go_to_stdout_and_errors_to_stderr(capsys):
    assert write_predictions(PREDICTIONS) == 1
    out, err = capsys.readouterr()
    assert out.splitlines() == ["a.png: 3 (class 3, p=0.9100)", "b.png: 7 (class 7, p=0.5000)"]
    assert err.splitlines() == ["error: notes.png: not a readable image (UnidentifiedImageError)"]
    assert write_predictions(PREDICTIONS[:1]) == 0


def test_json_predictions_hold_the_errors_too(capsys):
    assert write_predictions(PREDICTIONS, as_json=True) == 1
    out, err = capsys.readouterr()
    assert [p.get("error") for p in json.loads(out)] == [None, PREDICTIONS[1].error, None] and not err


def test_the_latency_has_the_digits_its_spread_leaves_it():
    assert latency_words({"latency_ms": 11.0, "latency_iqr_ms": 4.055, "batch": 1, "device": "cpu"}) == (
        "11 ms (IQR 4, batch 1, cpu)"
    )
    assert latency_words({"latency_ms": 0.35, "latency_iqr_ms": 0.0123, "batch": 1, "device": "cpu"}) == (
        "0.35 ms (IQR 0.01, batch 1, cpu)"
    )
    assert latency_words({"latency_ms": 0.0241, "latency_iqr_ms": 0.0, "batch": 1, "device": "cpu"}) == (
        "0.0241 ms (IQR 0, batch 1, cpu)"
    )


def test_the_exported_weights_are_readable_as_the_other_files(tmp_path):
    write_weights(tmp_path, nn.Linear(16, 10), {"format": 1})
    modes = {name: stat.S_IMODE(os.stat(tmp_path / name).st_mode) for name in (WEIGHTS_FILE, META_FILE)}
    assert modes[WEIGHTS_FILE] == modes[META_FILE] == 0o666 & ~UMASK, {k: oct(v) for k, v in modes.items()}
    assert set(load_file(str(tmp_path / WEIGHTS_FILE))) == {"weight", "bias"}
