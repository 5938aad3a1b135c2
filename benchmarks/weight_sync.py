"""Weight sync from the trainer to a searcher process for SmolLM2-135M (bf16 on the wire), per weight channel, side by
side: `publish` on the trainer's side (fp32 master weights -> a snapshot in shared memory), then the worker installs it
before its next search (`sync/load_seconds`). `file`: a safetensors file on /dev/shm, read and copied into the model;
`shm`: a flat shared buffer the trainer converts into and the worker binds its parameters to (no copy). Prints medians
and writes benchmarks/results/weight_sync.json.

    python benchmarks/weight_sync.py [--repeats 7] [--threads 1]
"""
import argparse, asyncio, json, statistics, time
from pathlib import Path

import torch

from tba_kit.models import load_model
from tba_kit.searchers import FileChannel, ProcessSearcher, ShmChannel
from tba_kit.tasks import PromptTask


async def measure(channel, model, repeats:int) -> dict:
    task = PromptTask(['Say hi'], lambda prompts, completions, **kw: [0.] * len(completions))
    searcher = await ProcessSearcher('smollm2-135m-instruct', reward=task.reward, threads=1, max_new_tokens=1).start()
    publish, load = [], []
    try:
        for v in range(1, repeats + 1):
            with torch.no_grad(): next(model.parameters()).add_(1e-3)  # new weights each time
            t = time.perf_counter()
            handle = channel.publish(model, v, dtype=torch.bfloat16)
            publish.append(time.perf_counter() - t)
            await searcher.load_weights(handle)
            res = await searcher.search(task.prompts(), k=1)  # the worker installs the snapshot first and times it
            assert searcher.version == v
            load.append(res.metrics['sync/load_seconds'])
    finally:
        await searcher.aclose(); channel.close()
    return {'publish_seconds_median': statistics.median(publish), 'load_seconds_median': statistics.median(load),
            'end_to_end_seconds_median': statistics.median(a + b for a, b in zip(publish, load)),
            'publish_seconds': publish, 'load_seconds': load}


async def main(repeats:int, threads:int):
    torch.set_num_threads(threads)
    model, _ = load_model(dtype='float32')  # the trainer's fp32 master weights
    res = {'model': 'smollm2-135m-instruct', 'bytes': sum(p.numel() * 2 for p in model.parameters()), 'repeats': repeats,
           'trainer_threads': threads, 'channels': {}}
    for name, channel in [('file', FileChannel()), ('shm', ShmChannel())]:
        r = res['channels'][name] = await measure(channel, model, repeats)
        print(f"{name}: publish {r['publish_seconds_median']:.3f} s + install {r['load_seconds_median']:.3f} s = "
              f"{r['end_to_end_seconds_median']:.3f} s (medians of {repeats})", flush=True)
    out = Path(__file__).parent / 'results' / 'weight_sync.json'
    out.parent.mkdir(exist_ok=True); out.write_text(json.dumps(res, indent=1))


if __name__ == '__main__':
    ap = argparse.ArgumentParser(); ap.add_argument('--repeats', type=int, default=7); ap.add_argument('--threads', type=int, default=1)
    a = ap.parse_args()
    asyncio.run(main(a.repeats, a.threads))
