"""A simulated engine, the orchestration benchmark's stand-in for a model: an `Engine` of its own (`SimEngine`,
`engine: benchmarks.sim_engine:SimEngine`) that runs under every placement, in the run's process or in workers.

In workers (processes, Ray actors) it installs each published snapshot for real (`handle.receive()`: mapping shared memory, or fetching from Ray's object
store), sleeps S seconds per batch of P prompts (`TBA_SIM_S`, `TBA_SIM_P` in its environment) and returns fake
completions as the compact records a real worker sends."""
import asyncio, os, time

import torch

from tba_kit.searchers import Completion, Engine, SearcherBase, pack_group


def fake_completion() -> Completion: return Completion(torch.randint(3, 250, (4,)), torch.full((4,), -1.), -4., 'aeiou', [1, 2, 3])


class SleepGenerator:
    "Built by the worker from its spec (`ProcessSearcher(..., generator='benchmarks.sim_engine:SleepGenerator')`)"
    def __init__(self, spec:dict): self.S, self.P, self.version = float(os.environ['TBA_SIM_S']), int(os.environ['TBA_SIM_P']), 0

    def run_packed(self, prompts, k, loads, seed=None):
        t = time.perf_counter()
        for handle, _ in loads: handle.receive(); self.version = handle.version
        load_s = time.perf_counter() - t if loads else None
        time.sleep(self.S * len(prompts) / self.P)
        group = [fake_completion() for _ in range(k)]
        return self.version, [pack_group(group) for _ in prompts], load_s


class SleepSearcher(SearcherBase):
    "A simulated engine: sleeps S seconds per batch of prompts, installs published weights by version"
    def __init__(self, task, i:int):
        self.name, self.reward, self.pending, self.current = f'sleep{i}', task.reward, None, None
        self.S, self.P = float(os.environ['TBA_SIM_S']), int(os.environ['TBA_SIM_P'])

    async def load_weights(self, handle, reset_ref:bool=False):
        handle.hold()
        if self.pending is not None: self.pending.release()
        self.pending = handle

    async def _generate(self, prompts, k):
        if self.pending is not None:  # installed before the search, as a real searcher does
            if self.current is not None: self.current.release()
            self.current, self.pending, self.version = self.pending, None, self.pending.version
        version = self.version
        await asyncio.sleep(self.S * len(prompts) / self.P)
        return version, [[fake_completion() for _ in range(k)] for _ in prompts], None

    async def aclose(self):
        for h in (self.pending, self.current):
            if h is not None: h.release()
        self.pending = self.current = None


class SimEngine(Engine):
    "The simulated engine: a `SleepSearcher` in the run's process (placement inline), a `SleepGenerator` in a worker process or Ray actor"
    worker = 'benchmarks.sim_engine:SleepGenerator'
    def searcher(self, task, policy, tokenizer, i:int): return SleepSearcher(task, i)
