"""The figures of benchmarks/README.md and README.md agree with the results JSON they come from
(benchmarks/readme_figures.py), and benchmarks/README.md stays short. Pure file reading, no Ray."""

import json

from benchmarks import readme_figures
from benchmarks.readme_figures import DOCUMENTS, ROOT, disagreements, lookup, render, rewritten


def test_every_marked_figure_is_its_jsons():
    texts = {name: (ROOT / name).read_text() for name in DOCUMENTS if (ROOT / name).exists()}
    marked = sum(len(readme_figures.MARKER.findall(text)) for text in texts.values())
    assert marked >= 30  # the current figures are marked, not a handful
    assert len(readme_figures.BLOCK.findall(texts["benchmarks/README.md"])) >= 2  # the arms and stop-rule tables
    assert [f"{name}: {line}" for name, text in texts.items() for line in disagreements(text)] == []


def test_a_figure_edited_by_hand_is_named_and_rewritten_from_its_json(tmp_path, monkeypatch):
    (tmp_path / "r.json").write_text(json.dumps({"a/b": [{"p": 0.00002}, {"x": 0.12345}]}))
    monkeypatch.setattr(readme_figures, "ROOT", tmp_path)
    readme_figures._load.cache_clear()
    text = "x <!-- fig:r.json#/a~1b/1/x;.3f -->0.124<!-- /fig --> p <!-- fig:r.json#/a~1b/0/p;p -->2e-5<!-- /fig -->"
    assert disagreements(text) == ['r.json#/a~1b/1/x: text "0.124", JSON "0.123"']
    assert disagreements(rewritten(text)) == [] and "-->0.123<!--" in rewritten(text)
    assert disagreements("<!-- fig:r.json#/nothing;.1f -->1<!-- /fig -->")[0].startswith("r.json#/nothing: unreadable")
    assert disagreements("<!-- fig:r.json#/a~1b/1/x / /a~1b/0/p;.0f -->6172<!-- /fig -->") == []  # a ratio
    assert disagreements("<!-- fig:r.json#/a~1b/1/x * 4;.2f -->0.49<!-- /fig -->") == []  # times a number
    readme_figures._load.cache_clear()


def test_pointers_and_formats():
    assert lookup({"k": [1, {"a b": 2}]}, "/k/1/a b") == 2 and lookup(3, "") == 3
    assert lookup({"search|tpe=optuna>search": 1}, "/search\\|tpe=optuna>search") == 1  # a | escaped for tables
    assert render(0.0331, "p") == "0.033" and render(2.4e-6, "p") == "2.4e-6" and render(0.123, ".0%") == "12%"


def test_the_benchmarks_readme_is_short():
    assert len((ROOT / "benchmarks/README.md").read_text().splitlines()) <= 300


def test_a_generated_table_is_checked_and_rewritten_whole(tmp_path, monkeypatch):
    pair = {"regret_iqm_pt": {"a": 0.5, "b": 0.75}, "median_epochs": {"a": 24, "b": 24}}
    result = {"space": "mlp_mnist", "seed_set": "fresh", "first_seed": 5000, "seeds": 300}
    pairs = {"results": {"x": {**result, "pairs": {"a>b": {**pair, "p_first_lower": 0.01, "p_first_higher": 0.99}}}}}
    (tmp_path / "p.json").write_text(json.dumps(pairs))
    monkeypatch.setattr(readme_figures, "ROOT", tmp_path)
    readme_figures._load.cache_clear()
    stale = "<!-- block:pairs p.json -->\n| old |\n<!-- /block -->"
    assert disagreements(stale) == ["p.json (pairs table): the text is not the table its JSON gives"]
    fresh = rewritten(stale)
    assert "| table, seeds | a against b |" in fresh and disagreements(fresh) == []
    assert "| `mlp_mnist`, fresh 5000-5299 | 0.500 / 0.750, p 0.01 (0.99), 24 / 24 epochs |" in fresh
    readme_figures._load.cache_clear()


def test_the_arms_table_puts_each_arms_figures_in_its_columns():
    from benchmarks.readme_figures import arms_table

    table = {
        "normalised_iqm": {"search": 0.5, "random_asha": 0.75},
        "p_search_lower_holm": {"random_asha": 0.01},
        "p_search_higher_holm": {"random_asha": 0.9},
        "effect_vs_search": {"random_asha": {"rank_biserial": 0.3}},
    }
    stats = {
        "concurrency": {
            "2": {"tables": {"mlp_mnist": table}, "by_table": {"mean_rank": {"search": 1.0, "random_asha": 2.0}}}
        }
    }
    lines = arms_table(stats).splitlines()
    assert lines[0] == "| arm | `mlp_mnist`: normalised, p lower (higher), r | mean rank over tables |"
    assert lines[2:] == ["| `search` | 0.50 | 1.00 |", "| `random_asha` | 0.75, 0.01 (0.9), +0.30 | 2.00 |"]
    assert disagreements("<!-- block:arms x.json -->\n| no closing marker |") == [
        "a `<!-- block:KIND FILE -->` opening without its table and `<!-- /block -->`, or misspelt"
    ]
