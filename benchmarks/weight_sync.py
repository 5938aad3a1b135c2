"""Weight sync from the trainer to a searcher process for SmolLM2-135M (bf16 on the wire): the trainer writes a
safetensors file to /dev/shm (`publish`), the worker reads it and copies it into its model before its next search
(`sync/load_seconds`). Prints medians and writes benchmarks/results/weight_sync.json.

    python benchmarks/weight_sync.py [--repeats 7]
"""
import argparse, asyncio, json, statistics, time
from pathlib import Path

import torch

from tba_kit.models import load_model
from tba_kit.searchers import ProcessSearcher, FileChannel
from tba_kit.tasks import PromptTask


async def main(repeats:int):
    torch.set_num_threads(1)
    model, tok = load_model(dtype='float32')  # the trainer's fp32 master weights
    task = PromptTask(['Say hi'], lambda prompts, completions, **kw: [0.] * len(completions))
    searcher = await ProcessSearcher('smollm2-135m-instruct', reward=task.reward, threads=1, max_new_tokens=1).start()
    channel = FileChannel()
    publish, load = [], []
    try:
        for v in range(1, repeats + 1):
            with torch.no_grad(): next(model.parameters()).add_(1e-3)  # new weights each time
            t = time.perf_counter()
            handle = channel.publish(model, v, dtype=torch.bfloat16)
            publish.append(time.perf_counter() - t)
            await searcher.load_weights(handle)
            await searcher.search(task.prompts(), k=1)  # the worker installs the file first and times it
            assert searcher.version == v
            load.append(searcher.metrics['sync/load_seconds'])
    finally:
        await searcher.aclose(); channel.close()
    res = {'model': 'smollm2-135m-instruct', 'bytes': sum(p.numel() * 2 for p in model.parameters()), 'repeats': repeats,
           'publish_seconds_median': statistics.median(publish), 'load_seconds_median': statistics.median(load),
           'end_to_end_seconds_median': statistics.median(a + b for a, b in zip(publish, load)),
           'publish_seconds': publish, 'load_seconds': load}
    for k, v in res.items():
        if 'median' in k: print(f"{k}: {v:.3f}")
    out = Path(__file__).parent / 'results' / 'weight_sync.json'
    out.parent.mkdir(exist_ok=True); out.write_text(json.dumps(res, indent=1))


if __name__ == '__main__':
    ap = argparse.ArgumentParser(); ap.add_argument('--repeats', type=int, default=7)
    asyncio.run(main(ap.parse_args().repeats))
