"""The compare and references verbs: against references, sweep against sweeps, ranking."""
