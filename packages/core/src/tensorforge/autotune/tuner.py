"""Tuners: which configs of a task to measure next.

Every tuner proposes unmeasured config indices (``next_batch``) and learns from results
(``update``); ``load_history`` feeds it the records of an earlier (killed) run so a resumed
run neither repeats nor forgets them.

* :class:`RandomTuner`, :class:`GridTuner` (index order);
* :class:`GATuner`: a genetic algorithm over knob positions (elitism, crossover, mutation);
* :class:`ModelBasedTuner`: a cost model (``xgboost`` from its plugin, or core's ``ridge``)
  is refitted on the measurements after each batch; simulated annealing (or, on small spaces,
  exhaustive scoring) finds the configs it predicts fastest; the batch is chosen from them
  for score and diversity (knob values not yet in the batch), with an ``epsilon`` share of
  random picks. ``pretrain`` fits the model on records of other tasks (transfer learning:
  the features mean the same across tasks).
"""

from __future__ import annotations

import random
import warnings
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from .cost_model import CostModel, CostModelUnavailable, LookupByNameError, create_cost_model
from .features import features_of
from .sa import simulated_annealing
from .task import Task

__all__ = ["BUILTIN_TUNERS", "CostModelFallbackWarning", "GATuner", "GridTuner",
           "ModelBasedTuner", "RandomTuner", "Tuner", "UnknownTunerError", "create_tuner"]


def _throughput(task: Task, result: Any) -> float:
    """Higher is better: FLOP/s (or 1/s when the template declares no FLOPs); 0 on error."""
    costs = getattr(result, "costs", None) or []
    if getattr(result, "error_class", None) is not None or not costs:
        return 0.0
    cost = sorted(costs)[len(costs) // 2]
    return (task.flop or 1.0) / max(cost, 1e-12)


class Tuner:
    """Base: bookkeeping of visited configs and the best result."""

    name = "tuner"

    def __init__(self, task: Task, seed: int | None = None):
        self.task = task
        self.space = task.config_space
        self.rng = random.Random(seed)
        self.visited: set[int] = set()
        self.best_index: int | None = None
        self.best_score = 0.0

    def has_next(self) -> bool:
        return len(self.visited) < len(self.space)

    def next_batch(self, n: int) -> list[int]:
        raise NotImplementedError

    def update(self, indices: Sequence[int], results: Sequence[Any]) -> None:
        for i, r in zip(indices, results):
            self.visited.add(i)
            sc = _throughput(self.task, r)
            if sc > self.best_score:
                self.best_index, self.best_score = i, sc

    def load_history(self, records: Iterable[Any]) -> None:
        """Records of this task measured before (``Database.records(task.key)``)."""
        recs = list(records)
        self.update([r.config_index for r in recs], recs)

    def _random_unvisited(self, n: int, exclude: set[int] = frozenset()) -> list[int]:  # type: ignore[assignment]
        out: list[int] = []
        size = len(self.space)
        left = size - len(self.visited) - len(exclude)
        if left <= 4 * n:  # nearly exhausted: enumerate what is left
            rest = [i for i in range(size) if i not in self.visited and i not in exclude]
            self.rng.shuffle(rest)
            return rest[:n]
        while len(out) < n:
            i = self.rng.randrange(size)
            if i not in self.visited and i not in exclude and i not in out:
                out.append(i)
        return out


class RandomTuner(Tuner):
    name = "random"

    def next_batch(self, n: int) -> list[int]:
        return self._random_unvisited(n)


class GridTuner(Tuner):
    name = "grid"

    def __init__(self, task: Task, seed: int | None = None):
        super().__init__(task, seed)
        self._next = 0

    def next_batch(self, n: int) -> list[int]:
        out: list[int] = []
        while len(out) < n and self._next < len(self.space):
            if self._next not in self.visited:
                out.append(self._next)
            self._next += 1
        return out


class GATuner(Tuner):
    """Genetic search over knob positions: the ``elite`` fittest survive, children mix two
    parents (each knob from either) and mutate each knob with ``mutation_prob``."""

    name = "ga"

    def __init__(self, task: Task, seed: int | None = None, pop_size: int = 32,
                 elite: int = 8, mutation_prob: float = 0.1):
        super().__init__(task, seed)
        self.pop_size, self.elite, self.mutation_prob = pop_size, elite, mutation_prob
        self.scores: dict[int, float] = {}
        self.generation: list[int] = self._random_unvisited(min(pop_size, len(self.space)))

    def update(self, indices: Sequence[int], results: Sequence[Any]) -> None:
        super().update(indices, results)
        for i, r in zip(indices, results):
            self.scores[i] = _throughput(self.task, r)

    def _child(self, a: int, b: int) -> int:
        pa, pb = self.space.positions(a), self.space.positions(b)
        child = [x if self.rng.random() < 0.5 else y for x, y in zip(pa, pb)]
        for k, d in enumerate(self.space.dims):
            if d > 1 and self.rng.random() < self.mutation_prob:
                child[k] = self.rng.randrange(d)
        return self.space.index_of_positions(child)

    def _next_generation(self) -> list[int]:
        ranked = sorted(self.scores, key=lambda i: -self.scores[i])
        parents = ranked[: max(2, self.pop_size)]
        weights = np.asarray([self.scores[i] for i in parents]) + 1e-9
        weights = weights / weights.sum()
        gen: list[int] = []
        tries = 0
        while len(gen) < self.pop_size and tries < 50 * self.pop_size:
            tries += 1
            a, b = (parents[int(self.rng.choices(range(len(parents)), weights)[0])]
                    for _ in range(2))
            c = self._child(a, b)
            if c not in self.visited and c not in gen:
                gen.append(c)
        if len(gen) < self.pop_size:
            gen += self._random_unvisited(self.pop_size - len(gen), set(gen))
        return gen

    def next_batch(self, n: int) -> list[int]:
        out: list[int] = []
        while len(out) < n and self.has_next():
            self.generation = [i for i in self.generation if i not in self.visited
                               and i not in out]
            if not self.generation:
                if len(self.scores) < 2:
                    self.generation = self._random_unvisited(self.pop_size, set(out))
                else:
                    self.generation = [i for i in self._next_generation() if i not in out]
                if not self.generation:
                    break
            out.append(self.generation.pop(0))
        return out


class ModelBasedTuner(Tuner):
    """Cost model + simulated annealing + diverse batch selection (see the module doc)."""

    name = "model"

    def __init__(self, task: Task, seed: int | None = None,
                 cost_model: str | CostModel = "xgboost", plan_size: int = 16,
                 epsilon: float = 0.05, diversity: float = 0.5, exhaustive_below: int = 512,
                 sa_chains: int = 16, sa_steps: int = 40, fallback: str | None = None,
                 **model_options: Any):
        super().__init__(task, seed)
        try:
            self.model = (create_cost_model(cost_model, **model_options)
                          if isinstance(cost_model, str) else cost_model)
        except CostModelUnavailable as exc:
            if fallback is None:
                raise
            _say_fallback_once(exc, fallback)
            self.model = create_cost_model(fallback)
        self.plan_size, self.epsilon, self.diversity = plan_size, epsilon, diversity
        self.exhaustive_below = exhaustive_below
        self.sa_chains, self.sa_steps = sa_chains, sa_steps
        self.xs: list[np.ndarray] = []
        self.ys: list[float] = []
        self.idx: list[int] = []
        self.transfer: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self._feat: dict[int, np.ndarray | None] = {}
        self._plan: list[int] = []
        self._chains: list[int] = []
        self._dirty = False

    # features and scores -------------------------------------------------------------------
    def features(self, index: int) -> np.ndarray | None:
        if index not in self._feat:
            self._feat[index] = features_of(self.task, index)
        return self._feat[index]

    def score(self, indices: Sequence[int]) -> np.ndarray:
        feats = [self.features(i) for i in indices]
        ok = [k for k, f in enumerate(feats) if f is not None]
        out = np.full(len(indices), -np.inf)
        if ok:
            out[ok] = self.model.predict(np.stack([feats[k] for k in ok]))
        return out

    # learning ------------------------------------------------------------------------------
    def update(self, indices: Sequence[int], results: Sequence[Any]) -> None:
        super().update(indices, results)
        for i, r in zip(indices, results):
            f = self.features(i)
            if f is not None:
                self.xs.append(f)
                self.ys.append(_throughput(self.task, r))
                self.idx.append(i)
        self._dirty = True

    def pretrain(self, X: np.ndarray, y: np.ndarray, groups: np.ndarray) -> None:
        """Fit on records of other tasks (``y`` normalized per group); kept as extra data."""
        if len(X) == 0:
            return
        self.transfer = (np.asarray(X), np.asarray(y), np.asarray(groups) + 1)
        self.model.fit(*self.transfer)
        self._plan = []

    def set_transfer(self, X: np.ndarray, y: np.ndarray, groups: np.ndarray) -> None:
        """Replace the other tasks' data (a task scheduler refreshes it as they are measured):
        used with this task's own at the next refit, or fitted now when it has none yet."""
        if len(self.ys) < 2:
            self.pretrain(X, y, groups)
        elif len(X):
            self.transfer = (np.asarray(X), np.asarray(y), np.asarray(groups) + 1)
            self._dirty = True

    def _refit(self) -> None:
        ys = np.asarray(self.ys)
        if len(ys) < 2 or ys.max() <= 0:
            return
        X, y = np.stack(self.xs), ys / ys.max()
        g = np.zeros(len(y), dtype=np.int64)
        if self.transfer is not None:
            X = np.vstack([X, self.transfer[0]])
            y = np.concatenate([y, self.transfer[1]])
            g = np.concatenate([g, self.transfer[2]])
        self.model.fit(X, y, g)

    # proposing -----------------------------------------------------------------------------
    def _candidates(self, k: int) -> list[int]:
        size = len(self.space)
        if size <= self.exhaustive_below:
            rest = [i for i in range(size) if i not in self.visited]
            sc = self.score(rest)
            order = np.argsort(-sc, kind="stable")
            return [rest[j] for j in order[:k] if np.isfinite(sc[j])]
        by_score = sorted(zip(self.ys, self.idx), reverse=True)
        init = [i for _, i in by_score[: self.sa_chains // 2]]
        init += self._chains[: self.sa_chains - len(init)]
        best, self._chains = simulated_annealing(
            self.space, self.score, k, self.visited, self.sa_chains, self.sa_steps,
            init=init, rng=self.rng)
        return best

    def _select(self, ranked: list[int], n: int) -> list[int]:
        """Greedy: score rank plus ``diversity`` x the share of knob values new to the batch."""
        chosen: list[int] = []
        seen: set[tuple[int, int]] = set()
        pos = {i: list(enumerate(self.space.positions(i))) for i in ranked}
        rank = {i: 1.0 - r / max(1, len(ranked)) for r, i in enumerate(ranked)}
        nk = max(1, len(self.space.knobs))
        left = list(ranked)
        while left and len(chosen) < n:
            best = max(left, key=lambda i: rank[i] + self.diversity * sum(
                p not in seen for p in pos[i]) / nk)
            chosen.append(best)
            seen.update(pos[best])
            left.remove(best)
        return chosen

    def next_batch(self, n: int) -> list[int]:
        if self._dirty and len(self.ys) >= 2:
            self._refit()
            self._plan = []
        self._dirty = False
        if not self.model.fitted:
            return self._random_unvisited(n)
        out: list[int] = []
        while len(out) < n:
            if not self._plan:
                ranked = self._candidates(4 * max(self.plan_size, n))
                self._plan = [i for i in self._select(ranked, max(self.plan_size, n))
                              if i not in out]
                if not self._plan:
                    break
            if self.rng.random() < self.epsilon:
                got = self._random_unvisited(1, set(out))
                i = got[0] if got else self._plan.pop(0)
            else:
                i = self._plan.pop(0)
            if i not in self.visited and i not in out:
                out.append(i)
        if len(out) < n:
            out += self._random_unvisited(n - len(out), set(out))
        return out


class UnknownTunerError(LookupByNameError):
    """No tuner of that name (core's or a plugin's)."""


class CostModelFallbackWarning(UserWarning):
    """The default tuner runs on the built-in ridge model: the xgboost one is unavailable."""


_fallbacks_said: set[str] = set()


def _say_fallback_once(exc: Exception, fallback: str) -> None:
    """Warn once per process that the model-based tuner uses ``fallback`` instead."""
    if fallback in _fallbacks_said:
        return
    _fallbacks_said.add(fallback)
    warnings.warn(f"{exc}; the xgb tuner uses the built-in {fallback} cost model instead "
                  "(a little less sample-efficient)", CostModelFallbackWarning, stacklevel=4)


BUILTIN_TUNERS: dict[str, Any] = {
    "random": RandomTuner,
    "grid": GridTuner,
    "ga": GATuner,
    # the default: xgboost from its plugin, else (said once) core's ridge model
    "xgb": lambda task, **kw: ModelBasedTuner(task, cost_model="xgboost", fallback="ridge",
                                              **kw),
    "ridge": lambda task, **kw: ModelBasedTuner(task, cost_model="ridge", **kw),
    "model": ModelBasedTuner,
}


def create_tuner(name: str, task: Task, **options: Any) -> Tuner:
    """A tuner by name: a core one (random, grid, ga, xgb, ridge, model) or a plugin's."""
    if name in BUILTIN_TUNERS:
        return BUILTIN_TUNERS[name](task, **options)
    from ..plugins import get_registry

    reg = get_registry().tuners
    if name not in reg:
        known = ", ".join(sorted({*BUILTIN_TUNERS, *reg}))
        raise UnknownTunerError(f"no tuner {name!r}; available: {known}")
    return reg[name].load_factory()(task, **options)

