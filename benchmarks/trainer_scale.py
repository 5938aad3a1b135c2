"""The sharded trainer on the main job's model: step seconds and memory per rank for 1 and 2 ranks (FSDP2, gloo on this
CPU) and for 2 data-parallel ranks (ddp: the whole policy on each), beside the plain one-process Trainer, on one batch shaped like the main job's (4 prompts x 8 completions of its
task, VarGrad, fp32). Memory per rank is counted two ways: the bytes of the rank's training state (its shard of the
weights and AdamW's two moments, kept between steps, plus gradients of the weights' size, alive during a step) and the process's peak resident memory (which adds
activations, the gathered layer, the libraries). On 2 cores two ranks cannot be faster than one process; the point is
what each rank holds. Writes benchmarks/results/trainer_scale.json.

    python benchmarks/trainer_scale.py [--ranks 1 2] [--parallel fsdp ddp] [--steps 3] [--rows 32] [--new_tokens 4]
"""
import argparse, json, os, re, socket, statistics, sys, time
from datetime import timedelta
from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from tba_kit.config import Config
from tba_kit.core import Trajectory, collate
from tba_kit.models import load_model
from tba_kit.objectives import VarGrad
from tba_kit.tasks import encode_prompts, make_task
from tba_kit.trainer import Trainer

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / 'benchmarks'))
from evidence import provenance  # noqa: E402

KEY, NAME = {'fsdp': 'ranks_{}', 'ddp': 'ddp_ranks_{}'}, {'fsdp': 'ShardedTrainer (fsdp)', 'ddp': 'ReplicatedTrainer (ddp)'}


def main_job_batch(cfg, tok, rows:int, new_tokens:int):
    "Prompts of the main job's task, each with k completions of `new_tokens` random tokens (the content does not change the cost)"
    task = make_task(cfg.task, **cfg.task_args)
    prompts = task.prompts('train')[:rows // cfg.k]
    gen = torch.Generator().manual_seed(0)
    groups = [[Trajectory(p.id, ids, torch.randint(100, 20000, (new_tokens,), generator=gen), -torch.rand(new_tokens, generator=gen),
                          float(j % 2), ref_logprob=-5.) for j in range(cfg.k)]
              for p, ids in zip(prompts, encode_prompts(tok, [p.messages for p in prompts]))]
    return collate(groups, tok.pad_token_id)


def held_bytes(trainer) -> dict:
    "Bytes of this process's training state: its (shard of the) weights and AdamW's moments, plus the gradients of the weights' size a step holds"
    local = lambda t: t.to_local() if hasattr(t, 'to_local') else t
    w = sum(local(p).numel() * local(p).element_size() for p in trainer.params)
    opt = sum(local(v).numel() * local(v).element_size() for s in trainer.optimizer.state.values() for v in s.values() if torch.is_tensor(v) and v.ndim)
    return {'weights_mb': w / 2**20, 'grads_mb': w / 2**20, 'adam_mb': opt / 2**20, 'total_mb': (2 * w + opt) / 2**20}


def measure(trainer, batch, steps:int) -> dict:
    secs = []
    for _ in range(steps):
        t = time.perf_counter(); trainer.step(batch); secs.append(time.perf_counter() - t)
    return {'step_seconds': secs, 'step_seconds_median': statistics.median(secs[1:] or secs), **held_bytes(trainer),
            'peak_rss_mb': peak_rss_mb()}


def peak_rss_mb() -> float:
    "This process's peak resident memory (VmHWM: its own address space's high-water mark; `ru_maxrss` of a spawned rank would start at its parent's)"
    return next(int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmHWM:')) / 1024


def build(cls, a):
    cfg = Config.load(a.config)
    model, tok = load_model(cfg.model, dtype='float32')
    return cls(model, VarGrad(cfg.beta), lr=cfg.lr, precision='fp32', micro_batch_rows=cfg.micro_batch_rows, pad_id=tok.pad_token_id), \
        main_job_batch(cfg, tok, a.rows, a.new_tokens)


def rank_main(rank, world, port, a, out, parallel):
    from tba_kit.ranks import PARALLEL
    torch.set_num_threads(max(1, a.threads // world))
    dist.init_process_group('gloo', init_method=f'tcp://127.0.0.1:{port}', rank=rank, world_size=world, timeout=timedelta(seconds=600))
    try:
        trainer, batch = build(PARALLEL[parallel], a)
        res = measure(trainer, batch, a.steps)
        got = [None] * world; dist.all_gather_object(got, res)
        if rank == 0: Path(out).write_text(json.dumps(got))
    finally: dist.destroy_process_group()


def sharded(world:int, a, parallel:str) -> list:
    with socket.socket() as s: s.bind(('127.0.0.1', 0)); port = s.getsockname()[1]
    out, ctx = ROOT / 'runs' / f'trainer_scale_{parallel}_{world}.json', mp.get_context('spawn')
    out.parent.mkdir(exist_ok=True)
    procs = [ctx.Process(target=rank_main, args=(r, world, port, a, str(out), parallel)) for r in range(world)]
    for p in procs: p.start()
    for p in procs: p.join()
    if any(p.exitcode for p in procs): raise SystemExit(f"a rank failed: exit codes {[p.exitcode for p in procs]}")
    return json.loads(out.read_text())


def main(a):
    torch.set_num_threads(a.threads)
    trainer, batch = build(Trainer, a)
    res = {'config': a.config, 'rows': len(batch), 'tokens': int(batch.attention_mask.sum()), 'threads': a.threads,
           'cpu_capability': torch.backends.cpu.get_cpu_capability(), 'one_process': measure(trainer, batch, a.steps)}
    del trainer
    runs = [(p, w) for p in a.parallel for w in a.ranks if p == 'fsdp' or w > 1]  # ddp on one rank is the plain trainer
    for p, world in runs: res[KEY[p].format(world)] = sharded(world, a, p)
    print("| trainer | ranks | step seconds (median) | training state per rank: weights + grads + AdamW (MB) | peak RSS per rank (MB) |\n|---|---|---|---|---|")
    one = res['one_process']
    print(f"| Trainer | 1 process | {one['step_seconds_median']:.2f} | {one['total_mb']:.0f} | {one['peak_rss_mb']:.0f} |")
    for p, world in runs:
        rs = res[KEY[p].format(world)]
        per = lambda key: ' / '.join(f"{r[key]:.0f}" for r in rs)
        print(f"| {NAME[p]} | {world} | {max(r['step_seconds_median'] for r in rs):.2f} | {per('total_mb')} | {per('peak_rss_mb')} |")
    Path(a.out).write_text(json.dumps({**provenance(), **res}, indent=1))
    print(f"wrote {a.out}")


def claims(rec:dict) -> list:
    "The results ledger's rows (tools/make_results.py): step seconds and training state per rank of the plain, sharded and replicated trainers on the main job's model"
    one, setting = rec['one_process'], f"main job's model, {rec['rows']} rows, fp32, {rec['threads']} threads in all"
    out = [{'claim': f"Trainer, 1 process ({setting}): step seconds; training state (weights + grads + AdamW); peak RSS",
            'value': f"{one['step_seconds_median']:.2f} s; {one['total_mb']:.0f} MB; {one['peak_rss_mb']:.0f} MB"}]
    for p, rs in [(p, rs) for p in KEY for k, rs in rec.items() if re.fullmatch(KEY[p].format(r'\d+'), k)]:
        per = lambda k: ' / '.join(f"{r[k]:.0f}" for r in rs)
        out.append({'claim': f"{NAME[p]}, {len(rs)} rank{'s' * (len(rs) > 1)}: step seconds (slowest rank); training state per rank; peak RSS per rank",
                    'value': f"{max(r['step_seconds_median'] for r in rs):.2f} s; {per('total_mb')} MB; {per('peak_rss_mb')} MB"})
    return out


if __name__ == '__main__':
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--config', default=str(ROOT / 'configs' / 'quickstart.yaml'))
    ap.add_argument('--ranks', type=int, nargs='+', default=[1, 2])
    ap.add_argument('--parallel', nargs='+', default=['fsdp', 'ddp'], choices=['fsdp', 'ddp'])
    ap.add_argument('--steps', type=int, default=3)
    ap.add_argument('--rows', type=int, default=32)
    ap.add_argument('--new_tokens', type=int, default=4)
    ap.add_argument('--threads', type=int, default=os.cpu_count() or 2, help='threads in all (split over the ranks)')
    ap.add_argument('--out', default=str(ROOT / 'benchmarks' / 'results' / 'trainer_scale.json'))
    main(ap.parse_args())
