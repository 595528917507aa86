"""tfcnnwrap: run tf_cnn_benchmarks sweeps and compare them with published GPU numbers."""

__version__ = "0.1.0"
