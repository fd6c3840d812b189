"""Hyperparameter search for PyTorch image models on Ray (see README.md)."""


def load_model(path):
    """Restore an exported model (`python -m search export`): an eval-mode module taking float images in [0, 1]."""
    from search.results.export import load_model as _load_model

    return _load_model(path)
