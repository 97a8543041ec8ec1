"""The simulated clusters' state: training servers, inference servers and the GPUs jobs hold on each.

:class:`Cluster` is the only mutable state of the hardware side: which inference servers serve, are idle or
are lent to training, how many servers the load needs, and how many GPUs of each pool the running jobs hold.
A server id is looked up in a table built once (:attr:`Cluster.where`: id -> (pool, index)), never decoded from
its text. The servers a snapshot shows are kept as one tuple, built again only when an inference server changes
state, and the servers in each state are counted as they change. Running time: O(1) per lookup and count, O(S)
per load change for S inference servers and per snapshot's servers after a change.
"""
from __future__ import annotations

from lyra_solver.types import Server

TRAINING, INFERENCE = "training", "inference"


class Cluster:
    """A training cluster of ``training`` servers and an inference cluster of ``inference`` servers of ``gpus``
    GPUs each. Inference servers are ``serving``, ``idle`` or ``loaned``; all start idle."""

    def __init__(self, training: int, inference: int, gpus: int) -> None:
        self.G = gpus
        self.n_training, self.n_inference = training, inference
        self.training = [Server(id=f"t{i}", pool=TRAINING, gpus=gpus) for i in range(training)]
        self.state = ["idle"] * inference  # change it through set_state / set_need only (counts and shown servers)
        self._count = {"serving": 0, "idle": inference, "loaned": 0}
        self._servers: dict[bool, tuple[Server, ...]] = {}  # shown(loan), until an inference server changes state
        # the Server record an inference server is shown as in each state a snapshot may show it in
        self._shown = {(i, st): Server(id=f"i{i}", pool=INFERENCE, gpus=gpus, state=st)
                       for i in range(inference) for st in ("idle", "loaned")}
        self.where: dict[str, tuple[str, int]] = {s.id: (TRAINING, i) for i, s in enumerate(self.training)}
        self.where.update({f"i{i}": (INFERENCE, i) for i in range(inference)})
        self.need = 0  # inference servers the load needs now
        self.used_train = 0  # GPUs of training servers held by jobs
        self.used_inf = 0  # GPUs of (loaned) inference servers held by jobs

    # ------------------------------------------------------------------------------------------ inference side
    def count(self, state: str) -> int:
        return self._count[state]

    def _set(self, i: int, state: str) -> None:
        old = self.state[i]
        if old != state:
            self._count[old] -= 1
            self._count[state] += 1
            self.state[i] = state
            self._servers.clear()

    def serving_gpus(self) -> int:
        return self.count("serving") * self.G

    def set_need(self, need: int) -> None:
        """Follow the servers the load needs: idle servers start serving first (lowest index first); serving
        servers beyond the need go idle (highest index first)."""
        n = self.n_inference
        if n == 0:
            return
        self.need = min(n, need)
        serving = self.count("serving")
        if serving > self.need:
            for i in range(n - 1, -1, -1):
                if serving == self.need:
                    break
                if self.state[i] == "serving":
                    self._set(i, "idle")
                    serving -= 1
        elif serving < self.need:
            for i in range(n):
                if serving == self.need:
                    break
                if self.state[i] == "idle":
                    self._set(i, "serving")
                    serving += 1

    def reclaim_wanted(self) -> int:
        """Loaned servers the inference side asks back: what the load needs beyond serving and idle ones."""
        short = self.need - self.count("serving") - self.count("idle")
        return max(0, min(short, self.count("loaned")))

    def lendable(self) -> list[Server]:
        """The inference servers a loaning policy's snapshot shows (idle or loaned), in index order."""
        return [self._shown[(i, st)] for i, st in enumerate(self.state) if st != "serving"]

    def shown(self, loan: bool) -> tuple[Server, ...]:
        """The servers a snapshot shows: the training servers, then (``loan``) the :meth:`lendable` ones; the same
        tuple until an inference server changes state."""
        got = self._servers.get(loan)
        if got is None:
            got = self._servers[loan] = tuple(self.training) + (tuple(self.lendable()) if loan else ())
        return got

    def set_state(self, server_id: str, state: str) -> None:
        """Mark an inference server ``serving`` (returned) or ``loaned`` (lent), by its id."""
        pool, i = self.where[server_id]
        if pool != INFERENCE:
            raise ValueError(f"{server_id} is not an inference server")
        if state not in self._count:
            raise ValueError(f"{state!r} is not a state of an inference server")
        self._set(i, state)

    # ------------------------------------------------------------------------------------------ GPUs held
    def free_gpus(self, loan: bool) -> int:
        """GPUs no job holds on the servers a policy may use (training, and idle or loaned inference ones when
        it loans)."""
        free = self.n_training * self.G - self.used_train
        if loan:
            free += (self.count("idle") + self.count("loaned")) * self.G - self.used_inf
        return free

    def split(self, placement: dict[str, int]) -> tuple[int, int]:
        """(training GPUs, inference GPUs) of a placement ``{server id: workers}``, one GPU per worker."""
        train = sum(n for s, n in placement.items() if self.where[s][0] == TRAINING)
        return train, sum(placement.values()) - train

    def hold(self, train: int, inf: int) -> None:
        self.used_train += train
        self.used_inf += inf

    def release(self, train: int, inf: int) -> None:
        self.used_train -= train
        self.used_inf -= inf
