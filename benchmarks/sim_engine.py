"""A simulated engine for searcher workers (processes, Ray actors): the orchestration benchmark's stand-in for a model.

It installs each published snapshot for real (`handle.receive()`: mapping shared memory, or fetching from Ray's object
store), sleeps S seconds per batch of P prompts (`TBA_SIM_S`, `TBA_SIM_P` in its environment) and returns fake
completions as the compact records a real worker sends."""
import os, time

import torch

from tba_kit.searchers import Completion, pack_group


class SleepGenerator:
    "Built by the worker from its spec (`ProcessSearcher(..., generator='benchmarks.sim_engine:SleepGenerator')`)"
    def __init__(self, spec:dict): self.S, self.P, self.version = float(os.environ['TBA_SIM_S']), int(os.environ['TBA_SIM_P']), 0

    def run_packed(self, prompts, k, loads, seed=None):
        t = time.perf_counter()
        for handle, _ in loads: handle.receive(); self.version = handle.version
        load_s = time.perf_counter() - t if loads else None
        time.sleep(self.S * len(prompts) / self.P)
        group = [Completion(torch.randint(3, 250, (4,)), torch.full((4,), -1.), -4., 'aeiou', [1, 2, 3]) for _ in range(k)]
        return self.version, [pack_group(group) for _ in prompts], load_s
