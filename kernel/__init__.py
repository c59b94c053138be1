"""The shared building blocks every layer may use: errors, environment parsing, the Redis client,
rate limits, rendering, metric counters, the write-rules form base and iframe framing.

The kernel imports no project package (checked by import-linter in `make lint`, .importlinter).
"""
