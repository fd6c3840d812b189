"""ASHA's rungs, met live and rebuilt from the study (`rungs`), and the two schedulers on Tune's public
`FIFOScheduler` that decide by them: `study_asha` (one objective) and `pareto_asha` (several)."""
