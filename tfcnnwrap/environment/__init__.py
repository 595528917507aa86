"""The TensorFlow install and tf_cnn_benchmarks checkout a sweep runs against: probe (and _probe.py, run inside the
target's Python), versions and branches, checkout and setup, environment, doctor."""
