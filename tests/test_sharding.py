"The sharded trainer on two CPU ranks (gloo) equals one process: same loss, gradient norm, weights and log Z, step after step."
from datetime import timedelta

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from tba_kit.core import Trajectory, collate
from tba_kit.models import tiny_model
from tba_kit.objectives import PPO, ScalarLogZ, TrajectoryBalance, VarGrad
from tba_kit.ranks import free_port
from tba_kit.trainer import Trainer

pytestmark = [pytest.mark.process]

STEPS = 3
SIZES = [(3, 5, 2, 4), (6, 2, 2, 2), (4,)]  # rows per group at each step. With micro-batches of 4 rows on 2 ranks: 2 passes each;
# then 1 pass (6) against 2 (2 + 2, 2); then one group for 2 ranks, so rank 1 runs a pass of weight 0


def batch_of(seed, ref=True):
    "The prompt groups of step `seed` (`SIZES`); `ref`: with reference log-probs, else the trainer's reference computes them"
    gen, groups, sizes = torch.Generator().manual_seed(seed), [], SIZES[seed]
    for g, n in enumerate(sizes):
        prompt = torch.randint(3, 200, (4,), generator=gen)
        groups.append([Trajectory(f'p{g}', prompt, torch.randint(3, 200, (T,), generator=gen), -torch.rand(T, generator=gen),
                                  reward=float(torch.rand(1, generator=gen)), ref_logprob=float(-3 * torch.rand(1, generator=gen)) if ref else None)
                       for T in torch.randint(1, 6, (n,), generator=gen).tolist()])
    return collate(groups)


def make(cls, name):
    "tb_reset: TB whose reference is the trainer's copy of the policy, reset to it after every second step (TBA')"
    objective = {'tb': lambda: TrajectoryBalance(0.5, ScalarLogZ(0.3), 1e-2), 'tb_reset': lambda: TrajectoryBalance(0.5, ScalarLogZ(0.3), 1e-2),
                 'vargrad': lambda: VarGrad(0.5), 'grpo': lambda: PPO(loss_type='grpo')}[name]()
    ref = dict(ref_model='copy', ref_reset_every=2) if name == 'tb_reset' else {}
    return cls(tiny_model(seed=0)[0], objective, lr=1e-3, precision='fp32', micro_batch_rows=4, **ref)  # clipped at 1.0: the norms are far above


def batches(name): return [batch_of(s, ref=name != 'tb_reset') for s in range(STEPS)]


def state(t, weights):
    "What must agree: the weights, the objective's parameters and their AdamW moments (a log Z gradient off by a constant factor shows there, not in the weights)"
    z = [p.detach().clone() for p in t.objective.parameters()]
    moments = [t.optimizer.state[p]['exp_avg'].clone() for p in t.objective.parameters() if p in t.optimizer.state]
    return {'weights': weights, 'log_z': z, 'log_z_exp_avg': moments}


def rank_main(rank, world, port, name, out, parallel):
    from tba_kit.ranks import PARALLEL
    from tba_kit.sharding import full_state_dict
    torch.set_num_threads(1)
    dist.init_process_group('gloo', init_method=f'tcp://127.0.0.1:{port}', rank=rank, world_size=world, timeout=timedelta(seconds=60))
    try:
        t = make(PARALLEL[parallel], name)
        metrics = [t.step(b) for b in batches(name)]
        res = state(t, full_state_dict(t.model))
        if rank == 0: torch.save({'metrics': metrics, **res}, out)
    finally: dist.destroy_process_group()


@pytest.mark.parametrize('parallel', ['fsdp', 'ddp'])
@pytest.mark.parametrize('name', ['tb', 'vargrad', 'grpo', 'tb_reset'])
def test_two_ranks_equal_one_process(name, parallel, tmp_path):
    "fsdp: the policy sharded; ddp: every rank holds it whole, its gradients averaged after the last pass"
    one = make(Trainer, name)
    ref = [one.step(b) for b in batches(name)]
    spawn(rank_main, 2, name, out := tmp_path / 'rank0.pt', parallel)
    got = torch.load(out)
    for a, b, sizes in zip(ref, got['metrics'], SIZES):
        assert b['train/rows'] == a['train/rows'] == sum(sizes)
        for k in a:
            if k.startswith(('loss/', 'train/grad_norm', 'ref/', name)) or k in ('train/lr',):
                torch.testing.assert_close(b[k], a[k], rtol=1e-5, atol=1e-5, msg=lambda m: f"{k}: {m}")
    mine = state(one, one.model.state_dict())
    for k, v in mine['weights'].items(): torch.testing.assert_close(got['weights'][k], v, rtol=1e-5, atol=1e-5, msg=lambda m: f"weight {k}: {m}")
    torch.testing.assert_close(got['log_z'], mine['log_z'], rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(got['log_z_exp_avg'], mine['log_z_exp_avg'], rtol=1e-5, atol=1e-7)
    if name.startswith('tb'): assert float(mine['log_z'][0]) != 0.3 and len(mine['log_z_exp_avg']) == 1  # log Z was trained and compared
    if name == 'tb_reset': assert [m.get('ref/reset') for m in got['metrics']] == [None, 1, None]  # the third step scored with the reset reference


def rank_resume(rank, world, port, name, load, save, steps):
    "Train `steps` (batch seeds) on `world` ranks, starting from the checkpoint `load` (or fresh), then save to `save`"
    from tba_kit.sharding import ShardedTrainer, full_state_dict, load_full_state_dict
    torch.set_num_threads(1)
    dist.init_process_group('gloo', init_method=f'tcp://127.0.0.1:{port}', rank=rank, world_size=world, timeout=timedelta(seconds=60))
    try:
        t = make(ShardedTrainer, name)
        if load:
            ck = torch.load(load, weights_only=False)
            load_full_state_dict(t.model, ck['weights'] if rank == 0 else {}); t.load_state_dict(ck['trainer'])
        for s in steps: t.step(batch_of(s))
        ck = {'weights': full_state_dict(t.model), 'trainer': t.state_dict()}
        if rank == 0: torch.save(ck, save)
    finally: dist.destroy_process_group()


def spawn(target, world, *args):
    ctx, port = mp.get_context('spawn'), free_port()
    procs = [ctx.Process(target=target, args=(r, world, port, *args)) for r in range(world)]
    for p in procs: p.start()
    for p in procs: p.join(240)
    for p in procs:
        if p.is_alive(): p.kill()
    assert [p.exitcode for p in procs] == [0] * world, f"a rank failed or hung: exit codes {[p.exitcode for p in procs]}"


@pytest.mark.parametrize('before,after', [(2, 1), (1, 2), (0, 2)])
def test_a_checkpoint_resumes_on_another_number_of_ranks(before, after, tmp_path):
    "Two steps on `before` ranks (0: a one-process Trainer, its AdamW state keyed by position), saved gathered, one more on `after` ranks: the weights, log Z and AdamW's moments of one process's three steps"
    one = make(Trainer, 'tb')
    for s in range(STEPS): one.step(batch_of(s))
    if before: spawn(rank_resume, before, 'tb', None, tmp_path / 'a.pt', range(STEPS - 1))
    else:
        plain = make(Trainer, 'tb')
        for s in range(STEPS - 1): plain.step(batch_of(s))
        torch.save({'weights': plain.model.state_dict(), 'trainer': plain.state_dict()}, tmp_path / 'a.pt')
    spawn(rank_resume, after, 'tb', tmp_path / 'a.pt', tmp_path / 'b.pt', range(STEPS - 1, STEPS))
    got = torch.load(tmp_path / 'b.pt', weights_only=False)
    for k, v in one.model.state_dict().items(): torch.testing.assert_close(got['weights'][k], v, rtol=1e-5, atol=1e-5, msg=lambda m: f"weight {k}: {m}")
    test = got['trainer']
    assert test['step'] == STEPS and test['optimizer']['state']['objective.log_z.value']['step'] == STEPS
    torch.testing.assert_close(test['objective']['log_z.value'], one.objective.log_z.value.detach(), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(test['optimizer']['state']['objective.log_z.value']['exp_avg'], one.optimizer.state[one.objective.log_z.value]['exp_avg'])
    emb = next(k for k in test['optimizer']['state'] if k.startswith('policy.') and 'embed' in k)
    torch.testing.assert_close(test['optimizer']['state'][emb]['exp_avg_sq'], one.optimizer.state[one.model.model.embed_tokens.weight]['exp_avg_sq'], rtol=1e-4, atol=1e-12)
