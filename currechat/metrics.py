"""Metrics for operators, in Prometheus' text format at `/metrics`.

Off unless METRICS_TOKEN is set; a scrape must send it (`Authorization: Bearer <token>`), since
the figures describe the deployment. Labels stay low-cardinality: routes are URL patterns
(`api/v1/chats/<int:chat_id>/messages`), never paths; no user, chat or prompt ids; models are the
few configured names.

Counters live in each web process (prometheus_client's default registry): scrape every process,
or sum them in Prometheus. The queue and worker gauges are read from Redis at scrape time, so
any process reports the whole deployment's.
"""

from __future__ import annotations

import hmac
import time
from collections.abc import Iterator

import redis
from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

REQUESTS = Counter("currechat_http_requests", "HTTP requests by route pattern.", ["route", "method", "status"])
LATENCY = Histogram(
    "currechat_http_request_seconds",
    "Time to the response (a streamed answer: to its first byte), by route pattern.",
    ["route"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
)


class _QueueCollector(Collector):
    """Ingestion queue lengths and background workers, read from Redis when scraped."""

    def collect(self) -> Iterator[GaugeMetricFamily]:
        import django_rq

        from currechat.health import check_workers

        queued = GaugeMetricFamily("currechat_queue_jobs", "Jobs waiting in each task queue.", labels=["queue"])
        workers = GaugeMetricFamily("currechat_workers", "Background workers with a live heartbeat.")
        try:
            for name in settings.TASK_QUEUES:
                queued.add_metric([name], django_rq.get_queue(name).count)
        except redis.RedisError:
            return  # no figures rather than wrong ones; the health check says Redis is down
        live = check_workers().count  # the count the status badge shows (dead registrations left out)
        if live is None:
            return
        workers.add_metric([], live)
        yield queued
        yield workers


REGISTRY.register(_QueueCollector())


# HTTP's standard methods (RFC 9110 and PATCH). Django passes any token a client sends as the method,
# so anything else is counted as "other": visitors must not grow the series without bound.
STANDARD_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"})


def _method(request: HttpRequest) -> str:
    return request.method if request.method in STANDARD_METHODS else "other"


def _route(request: HttpRequest) -> str:
    match = getattr(request, "resolver_match", None)
    return match.route if match is not None and match.route else "unmatched"


class MetricsMiddleware:
    """Counts every request by route pattern, method and status, and times it."""

    sync_capable = async_capable = True

    def __init__(self, get_response):
        self.get_response = get_response
        if iscoroutinefunction(get_response):
            markcoroutinefunction(self)

    def __call__(self, request):
        if iscoroutinefunction(self.get_response):
            return self._acall(request)
        started = time.perf_counter()
        response = self.get_response(request)
        self._record(request, response, started)
        return response

    async def _acall(self, request):
        started = time.perf_counter()
        response = await self.get_response(request)
        self._record(request, response, started)
        return response

    @staticmethod
    def _record(request, response, started: float) -> None:
        route = _route(request)
        if route == "metrics":
            return
        REQUESTS.labels(route=route, method=_method(request), status=str(response.status_code)).inc()
        LATENCY.labels(route=route).observe(time.perf_counter() - started)


def metrics_view(request: HttpRequest) -> HttpResponse:
    """`GET /metrics`: 404 while METRICS_TOKEN is unset, 401 without the right token."""
    token = settings.METRICS_TOKEN
    if not token:
        raise Http404
    sent = request.headers.get("Authorization", "").removeprefix("Bearer ").strip()
    if not hmac.compare_digest(sent.encode(), token.encode()):
        response = HttpResponse("A metrics token is required.\n", status=401, content_type="text/plain")
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    return HttpResponse(generate_latest(REGISTRY), content_type=CONTENT_TYPE_LATEST)
