"""The sweep verb: the schedule, a run's life (runlife), cooling, the live view, distributed and fleet runs."""
