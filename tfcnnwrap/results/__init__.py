"""The data model and what is computed from it: records (runs, sweeps, shared bundles), the sweep directory
(store), the plan, aggregation, scaling, fleet rows, the closest reference row. Imports only the root and
cluster's pure plan."""
