"""CurreChat settings for how a web process serves its chats (chat/turn/runner.py). Every value
comes from an environment variable (README)."""

from __future__ import annotations

from kernel.env import env_float, env_int

# Threads that run chat turns in each web process (each turn waits on the model server).
CHAT_WORKER_THREADS = env_int("CHAT_WORKER_THREADS", 256, minimum=1)
# On SIGTERM a web process lets running answers finish for this long (kernel/draining.py);
# the process manager's stop timeout must be longer (deploy/systemd: TimeoutStopSec).
CHAT_DRAIN_SECONDS = env_float("CHAT_DRAIN_SECONDS", 60.0, minimum=0)
# While at least LOOP_TICK_STREAMS answers stream in a web process, its event loop wakes at most
# once every LOOP_TICK_MS milliseconds and finds the tokens of many answers waiting together, not
# one token per wake-up (kernel/ticks.py; docs/BENCHMARKS.md, "The event loop's tick"); at 40 answers
# it saved little, at 200 a tenth to a fifth of the CPU per token. 0: off.
LOOP_TICK_MS = env_float("LOOP_TICK_MS", 5.0, minimum=0)
LOOP_TICK_STREAMS = env_int("LOOP_TICK_STREAMS", 20, minimum=1)
