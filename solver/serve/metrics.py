"""The service's counters in the Prometheus text exposition format (version 0.0.4), kept by hand: a handful of
counters, gauges and one histogram do not need a client library."""
from __future__ import annotations

import bisect
from collections import Counter

__all__ = ["BUCKETS", "Metrics"]

#: Upper bounds (seconds) of the latency histogram's buckets; ``+Inf`` is added.
BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


class Metrics:
    """Requests by route and status, a latency histogram by route, in-flight requests (event-loop state only:
    the service updates it from one thread)."""

    def __init__(self) -> None:
        self.requests: Counter[tuple[str, int]] = Counter()
        self.buckets: dict[str, list[int]] = {}
        self.sums: Counter[str] = Counter()
        self.counts: Counter[str] = Counter()
        self.in_flight = 0

    def observe(self, route: str, status: int, seconds: float) -> None:
        """Count one finished request. O(log buckets)."""
        self.requests[(route, status)] += 1
        counts = self.buckets.setdefault(route, [0] * (len(BUCKETS) + 1))
        counts[bisect.bisect_left(BUCKETS, seconds)] += 1
        self.sums[route] += seconds
        self.counts[route] += 1

    def render(self, gauges: dict[str, tuple[str, float]]) -> bytes:
        """The exposition text: the request counter, the histogram (cumulative buckets), ``in_flight`` and the
        given ``gauges`` (name -> (help, value))."""
        out = ["# HELP lyra_requests_total HTTP requests answered, by route and status.",
               "# TYPE lyra_requests_total counter"]
        for (route, status), n in sorted(self.requests.items()):
            out.append(f'lyra_requests_total{{route="{_label(route)}",status="{status}"}} {n}')
        out += ["# HELP lyra_request_duration_seconds Time from the request's arrival to its answer, by route.",
                "# TYPE lyra_request_duration_seconds histogram"]
        for route in sorted(self.buckets):
            running = 0
            r = _label(route)
            for bound, n in zip((*BUCKETS, float("inf")), self.buckets[route], strict=True):
                running += n
                le = "+Inf" if bound == float("inf") else repr(bound)
                out.append(f'lyra_request_duration_seconds_bucket{{route="{r}",le="{le}"}} {running}')
            out.append(f'lyra_request_duration_seconds_sum{{route="{r}"}} {self.sums[route]!r}')
            out.append(f'lyra_request_duration_seconds_count{{route="{r}"}} {self.counts[route]}')
        out += ["# HELP lyra_requests_in_flight Requests received and not yet answered (queued ones included).",
                "# TYPE lyra_requests_in_flight gauge", f"lyra_requests_in_flight {self.in_flight}"]
        for name, (help_, value) in gauges.items():
            kind = "counter" if name.endswith("_total") else "gauge"
            out += [f"# HELP {name} {help_}", f"# TYPE {name} {kind}", f"{name} {value:g}"]
        return ("\n".join(out) + "\n").encode()
