"""The ground both sides of a search stand on: the settings (`config`), a space's definition (`space`), where a
search's files live (`storage`, `trial_files`), a trial's shape (`resources`, `scheduling`) and the errors a user
sees (`errors`).

The driver side (`search/`) and the trial side (the rest of `trainables/`) import this package; it imports neither,
nor Ray, nor torch.
"""
