"""ASHA's rungs, met live and rebuilt from the study (`rungs`), and the two schedulers on Tune's public
`FIFOScheduler` that decide by them: `StudyASHA` (one objective) and `ParetoASHA` (several)."""
