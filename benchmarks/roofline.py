"""Where a step's time goes, against what this machine can do: its measured matmul rate (fp32, bf16), the FLOPs of the
main job's trainer step worked out from the tokens it actually runs (each group's prompt once, with the shared prompt
pass; every row's prompt again without it, as TRL's step runs them) and the fraction of the matmul rate each achieves;
the searcher's tokens per second against a plain `generate` of the same batch; and TRL's step split into its
generation and its training pass, with the same accounting. One process, everything measured side by side.

    python benchmarks/roofline.py [--config configs/quickstart.yaml] [--repeats 3] [--name roofline]

FLOPs (forward; a training pass is 3x: the backward costs twice the forward): per token 2 x the weights of the
transformer's linear layers, 2 x d x ctx x 2 per layer for attention over `ctx` keys, and 2 x d x vocab for the
logits of the positions whose log-probabilities are taken. The embedding lookup is free.
"""
import argparse, json, statistics, sys, time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / 'benchmarks'))
from evidence import provenance  # noqa: E402


def matmul_gflops(dtype, max_n:int=2048, reps:int=5) -> float:
    "Median GFLOP/s of an n x n x n matmul in `dtype` with the current torch threads; n doubles from 256 until one takes 0.2 s (an emulated bf16 is slow)"
    n = 256
    while True:
        a, b = torch.randn(n, n, dtype=dtype), torch.randn(n, n, dtype=dtype)
        t = time.perf_counter(); a @ b; t = time.perf_counter() - t
        if t >= 0.2 or n >= max_n: break
        n *= 2
    ts = []
    for _ in range(reps):
        t = time.perf_counter(); a @ b; ts.append(time.perf_counter() - t)
    return 2 * n ** 3 / statistics.median(ts) / 1e9


def dims(model) -> dict:
    c = model.config
    d, kv = c.hidden_size, c.num_key_value_heads * (c.hidden_size // c.num_attention_heads)
    return {'layers': c.num_hidden_layers, 'd': d, 'vocab': c.vocab_size, 'linear': c.num_hidden_layers * (2 * d * d + 2 * d * kv + 3 * d * c.intermediate_size)}


def forward_flops(m:dict, queries:int, keys:float, logits:int) -> float:
    "Forward FLOPs of `queries` tokens attending to `keys` keys on average, with logits at `logits` positions"
    return 2 * m['linear'] * queries + 4 * m['layers'] * m['d'] * queries * keys + 2 * m['d'] * m['vocab'] * logits


def step_flops(m:dict, prompt_lens:list, completion_lens:list, k:int, shared:bool) -> float:
    "Training-pass FLOPs of one batch: groups of k rows sharing a prompt; `shared`: each group's prompt is run once"
    total = 0.
    for g, p in enumerate(prompt_lens):
        cs = completion_lens[g * k:(g + 1) * k]
        if shared:  # the prompt once (one logit: the first completion token), then each completion against its cached keys
            total += forward_flops(m, p, (p + 1) / 2, 1) + sum(forward_flops(m, c, p + (c + 1) / 2, c) for c in cs)
        else:  # every row runs prompt and completion; logits for the completion tokens
            total += sum(forward_flops(m, p + c, (p + c + 1) / 2, c) for c in cs)
    return 3 * total


def timed(fn, reps:int) -> float:
    fn()  # warm-up
    ts = []
    for _ in range(reps):
        t = time.perf_counter(); fn(); ts.append(time.perf_counter() - t)
    return statistics.median(ts)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--config', default='configs/quickstart.yaml')
    ap.add_argument('--repeats', type=int, default=3)
    ap.add_argument('--name', default='roofline')
    ap.add_argument('--results', default=str(ROOT / 'benchmarks' / 'results'))
    ap.add_argument('--trl', action=argparse.BooleanOptionalAction, default=True, help="time TRL's step too (needs trl)")
    a, extra = ap.parse_known_args(argv)
    from tba_kit.build import make_objective, make_policy
    from tba_kit.config import Config
    from tba_kit.core import Trajectory, collate
    from tba_kit.generation import generate_completions
    from tba_kit.tasks import encode_prompts, make_task
    from tba_kit.trainer import Trainer
    cfg = Config.load(ROOT / a.config, ['--precision=fp32', *extra])
    torch.manual_seed(cfg.seed); torch.set_num_threads(cfg.trainer_threads)
    res = {'threads': torch.get_num_threads(), 'cpu_capability': torch.backends.cpu.get_cpu_capability(),
           'matmul_gflops': {'fp32': matmul_gflops(torch.float32), 'bf16': matmul_gflops(torch.bfloat16)}}
    rate = res['matmul_gflops']['fp32'] * 1e9
    task, (model, tok) = make_task(cfg.task, **cfg.task_args), make_policy(cfg)
    m = dims(model)
    prompts = task.prompts('train')[:cfg.prompts_per_step]
    pids = encode_prompts(tok, [p.messages for p in prompts])
    gen = dict(max_new_tokens=cfg.max_new_tokens, temperature=cfg.temperature, top_p=cfg.top_p)
    # the searcher's generation against a plain generate of the same rows (left-padded prompts, K samples each)
    model.eval()
    groups = []
    t_search = timed(lambda: groups.__setitem__(slice(None), generate_completions(model, tok, pids, k=cfg.k, **gen)), a.repeats)
    new_tokens = sum(len(c) for g in groups for c, _ in g)
    enc = tok.pad({'input_ids': pids}, padding_side='left', return_tensors='pt')
    with torch.inference_mode():
        t_plain = timed(lambda: model.generate(**enc, do_sample=True, num_return_sequences=cfg.k, max_new_tokens=cfg.max_new_tokens,
                                               temperature=cfg.temperature, top_p=cfg.top_p, pad_token_id=tok.pad_token_id), a.repeats)
    res['search'] = {'rows': len(pids) * cfg.k, 'new_tokens': new_tokens, 'tokens_per_s': new_tokens / t_search,
                     'plain_generate_tokens_per_s': new_tokens / t_plain, 'ratio_to_plain_generate': t_plain / t_search}
    # the trainer's step on that batch, with and without the shared prompt pass
    trajs = [Trajectory(p.id, pid, c, lp, float(i % 2), version=0, ref_logprob=float(lp.sum()))
             for p, pid, g in zip(prompts, pids, groups) for i, (c, lp) in enumerate(g)]
    batch = collate([trajs[i:i + cfg.k] for i in range(0, len(trajs), cfg.k)], tok.pad_token_id)
    plens, clens = [len(p) for p in pids], [len(c) for g in groups for c, _ in g]
    res['trainer'] = {}
    for shared in (True, False):
        trainer = Trainer(model, make_objective(cfg), lr=1e-7, precision='fp32', pad_id=tok.pad_token_id, share_prompts=shared)
        s = timed(lambda: trainer.step(batch), a.repeats)
        f = step_flops(m, plens, clens, cfg.k, shared)
        res['trainer']['shared' if shared else 'unshared'] = {'seconds': s, 'gflop': f / 1e9, 'fraction_of_fp32_matmul': f / s / rate}
    res['prompt_tokens'], res['completion_tokens'] = plens, clens
    if a.trl:
        res['trl'] = trl_step(cfg, task, tok, model, m, rate, a.repeats)
    print(f"matmul, {res['threads']} threads ({res['cpu_capability']}): fp32 {res['matmul_gflops']['fp32']:.0f} GFLOP/s, bf16 {res['matmul_gflops']['bf16']:.0f}")
    s = res['search']
    print(f"search: {s['tokens_per_s']:.0f} new tokens/s ({s['rows']} rows), plain generate {s['plain_generate_tokens_per_s']:.0f}: {s['ratio_to_plain_generate']:.2f}x")
    for k, v in res['trainer'].items():
        print(f"tba_kit trainer step, {k} prompt pass: {v['seconds']:.2f} s, {v['gflop']:.0f} GFLOP, {v['fraction_of_fp32_matmul']:.0%} of the fp32 matmul rate")
    if 'trl' in res:
        t = res['trl']
        print(f"TRL step: {t['step_seconds']:.2f} s = generation {t['generate_seconds']:.2f} s + training pass {t['train_seconds']:.2f} s "
              f"({t['train_gflop']:.0f} GFLOP, {t['train_fraction_of_fp32_matmul']:.0%} of the fp32 matmul rate)")
    out = Path(a.results) / f'{a.name}.json'
    out.write_text(json.dumps({**provenance(), 'config': a.config, 'overrides': extra, **res}, indent=1))
    return res


def trl_step(cfg, task, tok, model, m:dict, rate:float, repeats:int) -> dict:
    "TRL's GRPOTrainer on the same job: seconds of a whole step, of its generation and of its training pass (timed around its own methods)"
    import tempfile
    from peer_trl import trl_trainer
    trainer = trl_trainer(cfg, task, model, tok, Path(tempfile.mkdtemp()), learning_rate=1e-7, lr_scheduler_type='constant', max_steps=repeats + 1)
    spans = {'generate': [], 'step': [], 'lens': []}
    gen, step = trainer._generate_and_score_completions, trainer.training_step
    def timed_gen(*a, **kw):
        t = time.perf_counter(); out = gen(*a, **kw); spans['generate'].append(time.perf_counter() - t)
        spans['lens'].append((out['prompt_mask'].sum(1).tolist(), out['completion_mask'].sum(1).tolist()))
        return out
    def timed_step(*a, **kw):
        t = time.perf_counter(); out = step(*a, **kw); spans['step'].append(time.perf_counter() - t); return out
    trainer._generate_and_score_completions, trainer.training_step = timed_gen, timed_step
    trainer.train()
    s, g = statistics.median(spans['step'][1:]), statistics.median(spans['generate'][1:])  # the first: warm-up
    plens, clens = spans['lens'][-1]
    f = 3 * sum(forward_flops(m, p + c, (p + c + 1) / 2, c) for p, c in zip(plens, clens))
    return {'step_seconds': s, 'generate_seconds': g, 'train_seconds': s - g, 'train_gflop': f / 1e9, 'train_fraction_of_fp32_matmul': f / (s - g) / rate}


def claims(rec:dict) -> list:
    "The results ledger's rows (tools/make_results.py): the searcher's and the trainer's speed against plain generate and TRL"
    sh, un = rec['trainer']['shared'], rec['trainer']['unshared']
    out = [{'claim': f"searcher: new tokens/s against a plain `generate` of the same rows ({rec['search']['rows']} rows)",
            'value': f"{rec['search']['tokens_per_s']:.0f} vs {rec['search']['plain_generate_tokens_per_s']:.0f} ({rec['search']['ratio_to_plain_generate']:.2f}x)"},
           {'claim': 'trainer step with the shared prompt pass against without it (seconds)', 'value': f"{sh['seconds']:.2f} vs {un['seconds']:.2f} ({un['seconds'] / sh['seconds']:.2f}x)"},
           {'claim': "trainer step's share of the fp32 matmul rate (shared prompt pass)", 'value': f"{sh['fraction_of_fp32_matmul']:.0%}"}]
    if 'trl' in rec:
        t = rec['trl']['train_seconds']
        out.append({'claim': "TRL's training pass (its step without generation) against tba_kit's trainer step (seconds)", 'value': f"{t:.2f} vs {sh['seconds']:.2f} ({t / sh['seconds']:.1f}x)"})
    return out


if __name__ == '__main__': main()
