"""Search over a knob space: the default first, random samples, then an evolutionary search
(tournament-selected parents from the best measured, mutated one or two knobs at a time, or
crossed over), never proposing a configuration twice."""

from __future__ import annotations

import json
import random

from ..schedule.knobs import Space


def config_key(knobs: dict) -> str:
    return json.dumps(knobs, sort_keys=True, separators=(",", ":"))


class EvolutionarySearch:
    """Proposes candidates for one space given what has been measured (``tell``).

    ``init_random``: random samples measured before evolving; ``eps``: chance a proposal is a
    fresh random sample; ``top_k``: the parents are drawn from this many best.
    """

    def __init__(self, space: Space, seed: int = 0, init_random: int = 4, eps: float = 0.2,
                 top_k: int = 4):
        self.space = space
        self.rng = random.Random(seed)
        self.init_random, self.eps, self.top_k = init_random, eps, top_k
        self.measured: dict[str, float] = {}  # config key -> cost (inf: failed)
        self.configs: dict[str, dict] = {}
        self.seeds: list[dict] = []  # proposed right after the default (the built-in entry)

    def tell(self, knobs: dict, cost: float) -> None:
        k = config_key(knobs)
        self.configs[k] = dict(knobs)
        self.measured[k] = min(cost, self.measured.get(k, float("inf")))

    def exhausted(self) -> bool:
        return len(self.measured) >= self.space.size()

    def best(self) -> tuple[dict, float] | None:
        ok = [(c, k) for k, c in self.measured.items() if c != float("inf")]
        if not ok:
            return None
        cost, k = min(ok)
        return self.configs[k], cost

    def _random(self) -> dict:
        return {name: self.rng.choice(vals) for name, vals in self.space.knobs}

    def _mutate(self, parent: dict) -> dict:
        child = dict(parent)
        names = [n for n, v in self.space.knobs if len(v) > 1]
        for name in self.rng.sample(names, min(len(names), self.rng.choice((1, 1, 2)))):
            vals = self.space.values(name)
            i = vals.index(child[name]) if child[name] in vals else 0
            if self.rng.random() < 0.6:  # a neighbouring value (the values are ordered)
                j = min(len(vals) - 1, max(0, i + self.rng.choice((-1, 1))))
                child[name] = vals[j] if j != i else self.rng.choice(vals)
            else:
                child[name] = self.rng.choice(vals)
        return child

    def _crossover(self, a: dict, b: dict) -> dict:
        return {n: (a if self.rng.random() < 0.5 else b)[n] for n, _ in self.space.knobs}

    def _parent(self) -> dict:
        ranked = sorted((c, k) for k, c in self.measured.items() if c != float("inf"))
        pool = [self.configs[k] for _, k in ranked[:self.top_k]]
        return self.rng.choice(pool)

    def propose(self, n: int) -> list[dict]:
        """Up to ``n`` new candidates (fewer when the space runs out)."""
        out: list[dict] = []
        seen = set(self.measured)
        default = self.space.default()
        for first in [default, *self.seeds]:
            if config_key(first) not in seen and len(out) < n:
                out.append(dict(first))
                seen.add(config_key(first))
        ok = sum(1 for c in self.measured.values() if c != float("inf"))
        tries = 0
        while len(out) < n and len(seen) < self.space.size() and tries < 200 * n:
            tries += 1
            if ok < self.init_random or self.rng.random() < self.eps:
                cand = self._random()
            elif self.rng.random() < 0.2 and ok >= 2:
                cand = self._crossover(self._parent(), self._parent())
            else:
                cand = self._mutate(self._parent())
            k = config_key(cand)
            if k not in seen:
                seen.add(k)
                out.append(cand)
        return out[:n]


class RandomSearch(EvolutionarySearch):
    """Uniform random sampling without repetition (after the default)."""

    def __init__(self, space: Space, seed: int = 0):
        super().__init__(space, seed, init_random=1 << 30, eps=1.0)
