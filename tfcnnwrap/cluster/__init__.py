"""A distributed tf_cnn_benchmarks job: its plan (pure), the local and Slurm backends, the node task."""
