"""`python -m search`, with Tune's default `reuse_actors=False` in place of the search's own choice: a trial's
process ends with the trial. Only for benchmarks/warm_start.py's comparison."""

from search.__main__ import main
from search.running import tuner

if __name__ == "__main__":
    tuner.REUSE_ACTORS = False
    main()
