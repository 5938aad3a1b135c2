"Properties of the objectives that hold for any input: row order and group placement do not matter, micro-batches along group boundaries add up."
import pytest
import torch

from tba_kit.core import Trajectory, collate
from tba_kit.objectives import PPO, TrajectoryBalance, VarGrad, group_advantages, vargrad_log_z


def make_batch(seed, sizes=(3, 5, 2, 4)):
    gen = torch.Generator().manual_seed(seed)
    groups = []
    for g, n in enumerate(sizes):
        prompt = torch.randint(0, 50, (3,), generator=gen)
        rows = []
        for _ in range(n):
            T = int(torch.randint(1, 5, (1,), generator=gen))
            rows.append(Trajectory(f'p{g}', prompt, torch.randint(0, 50, (T,), generator=gen), -torch.rand(T, generator=gen),
                                   reward=float(torch.rand(1, generator=gen)), ref_logprob=float(-3 * torch.rand(1, generator=gen))))
        groups.append(rows)
    batch = collate(groups)
    tok_lp = torch.where(batch.completion_mask, -torch.rand(batch.input_ids.shape, generator=gen), 0.)
    return batch, tok_lp


@pytest.mark.parametrize('seed', range(10))
def test_vargrad_log_z_ignores_row_order(seed):
    batch, tok = make_batch(seed)
    logp = (tok * batch.completion_mask).sum(-1)
    perm = torch.randperm(len(batch), generator=torch.Generator().manual_seed(seed))
    a = vargrad_log_z(logp, batch.ref_logprobs, batch.rewards, batch.group, 0.1)
    b = vargrad_log_z(logp[perm], batch.ref_logprobs[perm], batch.rewards[perm], batch.group[perm], 0.1)
    torch.testing.assert_close(a[perm], b)
    adv = group_advantages(batch.rewards, batch.group)
    torch.testing.assert_close(adv[perm], group_advantages(batch.rewards[perm], batch.group[perm]))


@pytest.mark.parametrize('seed', range(10))
def test_vargrad_gradients_add_up_over_group_aligned_micro_batches(seed):
    "Splitting a batch along group boundaries (never inside a group) gives the same gradient, weighted by rows"
    batch, tok = make_batch(seed)
    vg = VarGrad(beta=0.2)
    full = tok.clone().requires_grad_()
    vg(full, batch).loss.backward()
    parts = tok.clone().requires_grad_()
    for groups in ([0, 1], [2, 3]):
        rows = torch.isin(batch.group, torch.tensor(groups)).nonzero().squeeze(1)
        trajs = [batch.trajectories[i] for i in rows.tolist()]
        sub = collate([[t for t, g in zip(trajs, batch.group[rows].tolist()) if g == G] for G in groups])
        L = sub.input_ids.shape[1]
        out = vg(parts[rows][:, :L], sub)
        (out.loss * len(rows) / len(batch)).backward()
    torch.testing.assert_close(parts.grad, full.grad)


@pytest.mark.parametrize('objective', [TrajectoryBalance(beta=0.3), VarGrad(beta=0.3), PPO(), PPO(advantage='rloo'), PPO(advantage='dr_grpo', kl_coef=0.1)],
                         ids=lambda o: repr(o).split('(')[0] + getattr(o, 'advantage', ''))
def test_losses_are_finite_and_differentiable(objective):
    batch, tok = make_batch(0)
    tok = tok.requires_grad_()
    out = objective(tok, batch)
    out.loss.backward()
    assert torch.isfinite(out.loss) and torch.isfinite(tok.grad).all() and tok.grad.abs().sum() > 0
    assert set(out.terms) <= {'loss/tb', 'loss/ppo'} and all('/' in k for k in out.log())
    assert (tok.grad[~batch.completion_mask] == 0).all()  # padding and prompt tokens get no gradient
