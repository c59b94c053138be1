"""The shared building blocks every layer may use: errors, environment parsing, the Redis client,
rate limits, rendering, metric counters, the write-rules form base and iframe framing; and the
shared machinery: background threads that survive a fork (`threads`), riding out Redis outages
(`outages`), the process beacon (`beacon`) and the TTL cache (`ttlcache`): docs/ARCHITECTURE.md.

The kernel imports no project package (checked by import-linter in `make lint`, .importlinter).
"""
