"""Cost of the diversity metrics on one search's worth of completions (32, the quickstart's batch), with and without
the sentence-embedding diversity, 2 threads, median of 7 after loading the encoder. Compare with the trainer's step
(`train/step_seconds` in a run's metrics; the quickstart's is about 11.5 s). Writes benchmarks/results/diversity_cost.json.

    python benchmarks/diversity_cost.py
"""
import json, random, statistics, sys, time
from pathlib import Path

import torch

from tba_kit.metrics import default_embedder, diversity_metrics

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / 'benchmarks'))
from evidence import provenance  # noqa: E402


def main():
    torch.set_num_threads(2); random.seed(0)
    default_embedder()  # loaded once per process, as in a run
    heads = ['The answer is', 'The final answer to this problem is', 'I think it is', 'So the result is']
    texts = [f"{random.choice(heads)} {random.randint(-9, 20)}." for _ in range(32)]
    prompt_ids, rewards = [i // 8 for i in range(32)], [float(random.random() < 0.15) for _ in texts]
    with_emb, without = [], []
    for _ in range(7):
        t = time.perf_counter(); diversity_metrics(prompt_ids, texts, rewards); with_emb.append(time.perf_counter() - t)
        t = time.perf_counter(); diversity_metrics(prompt_ids, texts, rewards, embedder=False); without.append(time.perf_counter() - t)
    res = {'completions': 32, 'with_embedding_seconds_median': statistics.median(with_emb),
           'without_embedding_seconds_median': statistics.median(without)}
    for k, v in res.items(): print(f"{k}: {v:.4f}" if isinstance(v, float) else f"{k}: {v}")
    out = Path(__file__).parent / 'results' / 'diversity_cost.json'
    out.parent.mkdir(exist_ok=True); out.write_text(json.dumps({**provenance(), **res}, indent=1))


def claims(rec:dict) -> list:
    "The results ledger's rows (tools/make_results.py): seconds of the diversity metrics on one search's completions, with and without the embedding diversity"
    return [{'claim': f"diversity metrics on {rec['completions']} completions, with the sentence-embedding diversity (2 threads, median of 7)", 'value': f"{rec['with_embedding_seconds_median']:.3f} s"},
            {'claim': f"diversity metrics on {rec['completions']} completions, without the embedding diversity (2 threads, median of 7)", 'value': f"{rec['without_embedding_seconds_median']:.3f} s"}]


if __name__ == '__main__':
    main()
