"""Speed of the default model per dtype on this machine: searcher tokens/s (transformers `generate`, K completions per
prompt of the default task) and trainer step seconds (forward, backward, AdamW on one batch of prompt groups), fp32 vs
bf16, side by side in one run, with what `precision: auto` chooses here. Prints a table and writes
benchmarks/results/precision.json (or --out).

    python benchmarks/precision.py [--threads 2] [--new_tokens 32] [--rows 32] [--repeats 3]
    ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 python benchmarks/precision.py   # a CPU without native bf16
"""
import argparse, json, statistics, sys, time
from pathlib import Path

import torch

from tba_kit.config import Config
from tba_kit.core import Trajectory, collate
from tba_kit.models import fast_dtype, load_model
from tba_kit.objectives import VarGrad
from tba_kit.generation import generate_completions
from tba_kit.tasks import encode_prompts
from tba_kit.tasks import make_task
from tba_kit.trainer import Trainer

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / 'benchmarks'))
from evidence import provenance  # noqa: E402


def main(a):
    torch.set_num_threads(a.threads)
    cfg = Config.load(a.config)
    task = make_task(cfg.task, **cfg.task_args)
    prompts = task.prompts('train')[:a.rows // cfg.k]
    res = {'cpu_capability': torch.backends.cpu.get_cpu_capability(), 'threads': a.threads, 'config': a.config,
           'auto': fast_dtype('cpu'), 'k': cfg.k, 'prompts': len(prompts), 'new_tokens': a.new_tokens, 'rows': len(prompts) * cfg.k}
    for dtype, precision in (('float32', 'fp32'), ('bfloat16', 'bf16-mixed')):
        gen_model, tok = load_model(cfg.model, dtype=dtype)
        pids = encode_prompts(tok, [p.messages for p in prompts])
        tps, groups = [], None
        for _ in range(a.repeats):
            t = time.perf_counter()
            groups = generate_completions(gen_model, tok, pids, k=cfg.k, max_new_tokens=a.new_tokens)
            tps.append(sum(len(c) for g in groups for c, _ in g) / (time.perf_counter() - t))
        del gen_model
        trajs = [Trajectory(p.id, pid, c, lp, float(i % 2), version=0, ref_logprob=float(lp.sum()))
                 for p, pid, g in zip(prompts, pids, groups) for i, (c, lp) in enumerate(g)]
        batch = collate([trajs[i:i + cfg.k] for i in range(0, len(trajs), cfg.k)], tok.pad_token_id)
        model, _ = load_model(cfg.model, dtype='float32')
        trainer = Trainer(model, VarGrad(cfg.beta), lr=1e-6, precision=precision, pad_id=tok.pad_token_id)
        trainer.step(batch)  # warm-up
        steps = [trainer.step(batch)['train/step_seconds'] for _ in range(a.repeats)]
        res[dtype] = {'search_tokens_per_s': statistics.median(tps), 'train_step_seconds': statistics.median(steps),
                      'batch_tokens': int(batch.attention_mask.sum()), 'search_tokens_per_s_all': tps, 'train_step_seconds_all': steps}
        del model, trainer
    print(f"CPU {res['cpu_capability']}, {a.threads} threads; auto chooses {res['auto'][0]} ({res['auto'][1]})")
    print(f"{'dtype':10} {'search tok/s':>13} {'train step s':>13}   ({res['rows']} rows, {a.new_tokens} new tokens)")
    for dtype in ('float32', 'bfloat16'):
        print(f"{dtype:10} {res[dtype]['search_tokens_per_s']:13.1f} {res[dtype]['train_step_seconds']:13.2f}")
    out = Path(a.out or Path(__file__).parent / 'results' / 'precision.json')
    out.parent.mkdir(exist_ok=True); out.write_text(json.dumps({**provenance(), **res}, indent=1))


def claims(rec:dict) -> list:
    "The results ledger's rows (tools/make_results.py): searcher tokens/s and trainer step seconds, fp32 against bf16, and what `precision: auto` chooses"
    f, b, setting = rec['float32'], rec['bfloat16'], f"CPU {rec['cpu_capability']}, {rec['threads']} threads"
    return [{'claim': f"searcher new tokens/s, fp32 vs bf16 ({setting}; {rec['rows']} rows, {rec['new_tokens']} new tokens)",
             'value': f"{f['search_tokens_per_s']:.1f} vs {b['search_tokens_per_s']:.1f}"},
            {'claim': f"trainer step seconds, fp32 vs bf16-mixed ({setting}; {rec['rows']} rows)", 'value': f"{f['train_step_seconds']:.2f} vs {b['train_step_seconds']:.2f}"},
            {'claim': f"`precision: auto` chooses ({setting})", 'value': rec['auto'][0]}]


if __name__ == '__main__':
    ap = argparse.ArgumentParser()
    ap.add_argument('--config', default='configs/quickstart.yaml')
    ap.add_argument('--threads', type=int, default=2)
    ap.add_argument('--new_tokens', type=int, default=32)
    ap.add_argument('--rows', type=int, default=32)
    ap.add_argument('--repeats', type=int, default=3)
    ap.add_argument('--out')
    main(ap.parse_args())
