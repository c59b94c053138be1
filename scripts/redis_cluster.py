"""An OSS Redis Cluster of the bundled Redis Stack on loopback: N primaries, each with R replicas.

Used by the cluster tests (tests/cluster.py) and bench/scale.py; for a development cluster:

    python -m scripts.redis_cluster --primaries 3 --replicas 1 --dir var/cluster

(it runs until interrupted). Every node is a `RedisStackServer` with `--cluster-enabled yes`
and the search module, tied to the process that started it (Linux's parent-death signal), so a
test or benchmark killed hard leaves no server behind. The cluster is formed here with CLUSTER
ADDSLOTSRANGE / MEET / REPLICATE (what `redis-cli --cluster create` does), so it needs no tool
but redis-py. Production clusters are made by their operators; docs/DEPLOY.md shows how.
"""

from __future__ import annotations

import argparse
import re
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

import redis

from scripts.redis_stack import RedisStackError, RedisStackServer, free_port

SLOTS = 16384


@dataclass
class RedisClusterNodes:
    base: Path
    primaries: int = 3
    replicas: int = 1
    # How long a primary may be silent before its replica takes over: short for tests.
    node_timeout_ms: int = 1000
    persistent: bool = False
    servers: list[RedisStackServer] = field(default_factory=list)

    @property
    def url(self) -> str:
        """REDIS_INDEX_URL for this cluster (any node; the client learns the others)."""
        return f"redis+cluster://127.0.0.1:{self.servers[0].port}/0"

    def start(self, timeout: float = 60.0) -> RedisClusterNodes:
        count = self.primaries * (1 + self.replicas)
        for number in range(count):
            server = RedisStackServer(
                port=free_port(),
                data_dir=self.base / f"node{number}",
                persistent=self.persistent,
                die_with_parent=signal.SIGKILL,
                cluster_node_timeout_ms=self.node_timeout_ms,
                cluster_bus_port=free_port(),
            )
            server.start()
            self.servers.append(server)
        self._form(timeout)
        return self

    def client(self, server: RedisStackServer) -> redis.Redis:
        return redis.Redis(host="127.0.0.1", port=server.port, socket_timeout=10)

    def _form(self, timeout: float) -> None:
        primaries, replicas = self.servers[: self.primaries], self.servers[self.primaries :]
        per = SLOTS // self.primaries
        for number, server in enumerate(primaries):
            last = SLOTS - 1 if number == self.primaries - 1 else (number + 1) * per - 1
            self.client(server).execute_command("CLUSTER ADDSLOTSRANGE", number * per, last)
        first = self.client(self.servers[0])
        for server in self.servers[1:]:
            first.execute_command("CLUSTER MEET", "127.0.0.1", server.port, server.cluster_bus_port)
        self._wait(
            lambda: all(len(self._nodes(s)) == len(self.servers) for s in self.servers), timeout, "the nodes to meet"
        )
        for number, server in enumerate(replicas):
            primary = primaries[number % self.primaries]
            node_id = self.client(primary).execute_command("CLUSTER MYID")
            self.client(server).execute_command("CLUSTER REPLICATE", node_id)
        self._wait(self.is_ok, timeout, "the cluster to be ready")
        # Replicas must hold their primary's data before a test kills one (a full sync first).
        self._wait(lambda: all(self._synced(s) for s in replicas), timeout, "the replicas to sync")

    def _nodes(self, server: RedisStackServer) -> dict:
        """CLUSTER NODES as `server` sees it, parsed by redis-py: address -> node."""
        return self.client(server).execute_command("CLUSTER NODES")

    def _synced(self, server: RedisStackServer) -> bool:
        info = self.client(server).info("replication")
        return info.get("role") == "slave" and info.get("master_link_status") == "up"

    def is_ok(self) -> bool:
        """Every node that runs sees the cluster as whole (all slots served)."""
        for server in self.running():
            try:
                if self.client(server).cluster("info").get("cluster_state") != "ok":
                    return False
            except redis.RedisError:
                return False
        return True

    def running(self) -> list[RedisStackServer]:
        return [s for s in self.servers if s.process is not None and s.process.poll() is None]

    def owner_of(self, slot: int) -> RedisStackServer:
        """The primary that serves `slot` now (as that node itself says)."""
        for server in self.primaries_now():
            if self._serves(server, slot):
                return server
        raise RedisStackError(f"No running primary serves slot {slot}.")

    def _serves(self, server: RedisStackServer, slot: int) -> bool:
        me = next(node for node in self._nodes(server).values() if "myself" in node["flags"])
        return _holds(me, slot)

    def primaries_now(self) -> list[RedisStackServer]:
        return [s for s in self.running() if self.client(s).info("replication").get("role") == "master"]

    def move_slot(self, slot: int, target: RedisStackServer, batch: int = 100) -> None:
        """Move `slot` and its keys to `target`, as `redis-cli --cluster reshard` does: IMPORTING
        and MIGRATING, MIGRATE in batches, then the new owner announced to every primary."""
        source = self.owner_of(slot)
        src, dst = self.client(source), self.client(target)
        src_id, dst_id = src.execute_command("CLUSTER MYID"), dst.execute_command("CLUSTER MYID")
        dst.execute_command("CLUSTER SETSLOT", slot, "IMPORTING", src_id)
        src.execute_command("CLUSTER SETSLOT", slot, "MIGRATING", dst_id)
        while keys := src.execute_command("CLUSTER GETKEYSINSLOT", slot, batch):
            src.execute_command("MIGRATE", "127.0.0.1", target.port, "", 0, 10000, "KEYS", *keys)
        for server in (target, source, *[s for s in self.primaries_now() if s not in (source, target)]):
            self.client(server).execute_command("CLUSTER SETSLOT", slot, "NODE", dst_id)

    def describe(self, slot: int) -> str:
        """What each node says, for a failing test's message: its role, the cluster's state, who
        serves `slot` in its view, and the last lines of its log about failures and failovers."""
        lines = []
        for server in self.servers:
            if server not in self.running():
                lines.append(f"node {server.port}: not running")
                continue
            try:
                client = self.client(server)
                role = client.info("replication").get("role")
                state = client.cluster("info").get("cluster_state")
                owners = [a for a, node in self._nodes(server).items() if _holds(node, slot)]
                lines.append(f"node {server.port}: {role}, cluster {state}, slot {slot} on {owners}")
            except redis.RedisError as exc:
                lines.append(f"node {server.port}: {exc}")
            log = server.data_dir / "redis.log"
            told = log.read_text(errors="replace").splitlines() if log.exists() else []
            lines += [f"    {line}" for line in told if _FAILOVER_WORDS.search(line)][-6:]
        return "\n".join(lines)

    def kill(self, server: RedisStackServer) -> None:
        """SIGKILL one node, as a crash would."""
        assert server.process is not None
        server.process.kill()
        server.process.wait()

    def stop(self) -> None:
        for server in self.servers:
            server.stop()

    @staticmethod
    def _wait(condition, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if condition():
                    return
            except redis.RedisError:
                pass
            time.sleep(0.05)
        raise RedisStackError(f"Timed out waiting for {what}.")


def _holds(node: dict, slot: int) -> bool:
    """Whether a node of CLUSTER NODES (as redis-py parses it) serves `slot`."""
    return any(int(r[0]) <= slot <= int(r[-1]) for r in node["slots"])


# Redis's own words for a failure seen, a failover and its election (not its start-up warnings).
_FAILOVER_WORDS = re.compile(r"FAIL message|[Ff]ailover|as failing|[Ee]lection|promot|allowed|epoch|Cluster state")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--primaries", type=int, default=3)
    parser.add_argument("--replicas", type=int, default=1)
    parser.add_argument("--dir", type=Path, default=Path("var/cluster"))
    args = parser.parse_args(argv)
    nodes = RedisClusterNodes(args.dir, args.primaries, args.replicas, node_timeout_ms=5000, persistent=True).start()
    print(f"REDIS_INDEX_URL={nodes.url}", flush=True)
    try:
        signal.pause()
    except KeyboardInterrupt:
        pass
    finally:
        nodes.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
