"""The measurement engine: devices and backends, timing, workloads, the results record, errors.

No Jupyter here, and nothing above it (introspection, deck, topics) is imported: this layer
runs on a bare GPU box with only torch, numpy and matplotlib.
"""
