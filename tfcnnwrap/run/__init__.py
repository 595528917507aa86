"""One benchmark process: process groups, the runner, the log parser, GPU telemetry, stop requests, and the parse
verb."""
