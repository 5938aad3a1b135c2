"""The GRPO family computed by TRL's own loss code (GRPOTrainer / RLOOTrainer._compute_loss) and by tba_kit, on the same tensors.

TRL has no loss function of its own: `_compute_loss` is a method, called here with a stand-in `self` that has the attributes it
reads and a `_get_per_token_logps_and_entropies` returning our log-probs instead of running a model. Skipped without `trl`."""
import math, types
from collections import defaultdict

import pytest
import torch

trl = pytest.importorskip('trl')
from trl.trainer.grpo_trainer import GRPOTrainer  # noqa: E402
from trl.trainer.rloo_trainer import RLOOTrainer  # noqa: E402

from tba_kit.core import Trajectory, collate  # noqa: E402
from tba_kit.objectives import LOSS_TYPES, PPO, group_advantages, is_weights  # noqa: E402


class OneProcess:  # TRL's accelerator on one process: gather and reduce change nothing
    num_processes, process_index, sync_gradients = 1, 0, True
    def gather(self, x): return x.reshape(-1) if x.dim() == 0 else x
    def gather_for_metrics(self, x): return self.gather(x)
    def reduce(self, x, reduction='sum'): return x


def trl_self(logps, cls=GRPOTrainer, **kw):
    "A stand-in for the trainer: the attributes `_compute_loss` reads (TRL's defaults), and our log-probs for its model's"
    ns = types.SimpleNamespace(
        accelerator=OneProcess(), model=types.SimpleNamespace(training=True), _metrics={'train': defaultdict(list), 'eval': defaultdict(list)},
        args=types.SimpleNamespace(delta=None, use_bias_correction_kl=True, steps_per_generation=1, sapo_temperature_pos=1.0,
                                   sapo_temperature_neg=1.05, vespo_k_pos=2.0, vespo_lambda_pos=3.0, vespo_k_neg=3.0, vespo_lambda_neg=2.0),
        loss_type='dapo', epsilon_low=0.2, epsilon_high=0.2, beta=0.0, importance_sampling_level='token', use_vllm=False,
        vllm_importance_sampling_correction=False, off_policy_mask_threshold=None, top_entropy_quantile=1.0,
        _entropy_bonus_enabled=False, aux_loss_enabled=False, current_gradient_accumulation_steps=1, max_completion_length=logps.shape[1],
        get_off_policy_mask=getattr(cls, 'get_off_policy_mask', None), get_gamma_weights=getattr(cls, 'get_gamma_weights', None))
    ns._get_per_token_logps_and_entropies = lambda *a, **k: (logps, torch.zeros_like(logps), None)
    for k, v in kw.items(): setattr(ns, k, v)
    return ns


def trl_is_ratio(old, sampling, mask, mode, cap):
    "TRL's vLLM importance-sampling ratio (grpo_trainer.py, mode `*_truncate` / `*_mask`, clip_max = cap, no clip_min), written out"
    d = torch.nan_to_num((old - sampling) * mask, nan=0.)
    rho = d.exp() if mode.startswith('token') else d.sum(-1, keepdim=True).exp()
    return rho.clamp(max=cap) if mode.endswith('truncate') else rho.masked_fill(rho > cap, 0.)


@pytest.fixture
def case():
    "Two prompts x 3 completions of 2-5 tokens; policy, searcher and reference log-probs that differ; rewards with ties"
    g = torch.Generator().manual_seed(0)
    lens, rewards = [5, 3, 2, 4, 5, 1], [1., 0., 1., 0.5, 2., 0.]
    groups = [[Trajectory(p, [0], torch.randint(1, 9, (n,), generator=g), -torch.rand(n, generator=g), reward=r, ref_logprob=0.)
               for n, r in zip(lens[3 * i:3 * i + 3], rewards[3 * i:3 * i + 3])] for i, p in enumerate('ab')]
    batch = collate(groups)
    m = batch.completion_mask[:, 1:]  # [B, T]: TRL's completion tensors start after the one-token prompt
    logps = torch.where(m, -torch.rand(m.shape, generator=g) - 0.2, 0.)  # [B, T] the policy's
    ref = torch.where(m, logps + 0.3 * torch.randn(m.shape, generator=g), 0.)
    batch.ref_logprobs = ref.sum(-1)
    batch.ref_token_logprobs = torch.cat([torch.zeros(len(m), 1), ref], 1)
    return batch, m, logps, ref


def ours(objective, batch, logps):
    lp = torch.cat([torch.zeros(len(logps), 1), logps], 1).requires_grad_()
    loss = objective(lp, batch).loss
    return loss, torch.autograd.grad(loss, lp)[0][:, 1:]


@pytest.mark.parametrize('loss_type', [t for t in LOSS_TYPES if t != 'rloo'])
@pytest.mark.parametrize('kl_coef', [0., 0.04])
@pytest.mark.parametrize('is_mode', ['none', 'token_truncate', 'token_mask', 'sequence_truncate', 'sequence_mask'])
@pytest.mark.parametrize('level', ['token', 'sequence'])
@pytest.mark.parametrize('stale', [False, True])
def test_grpo_family_equals_trl(case, loss_type, kl_coef, is_mode, level, stale):
    """Every loss type, with the KL in the loss or not, each importance-sampling correction, the ratio per token or per sequence
    (GSPO), and the ratio to the policy itself (one update a batch) or to an older one (a later update of num_iterations: clips,
    gates and VESPO's weights at work)"""
    if loss_type == 'vespo' and (level == 'sequence' or is_mode.startswith('sequence')):
        pytest.skip("vespo takes token-level ratios only (TRL refuses sequence-level IS modes for it; tba_kit refuses both)")
    batch, m, logps, ref = case
    obj = PPO(loss_type, kl_coef=kl_coef, kl_in='loss', max_tokens=7, is_correction=is_mode, is_cap=1.3, ratio_level=level)
    adv = group_advantages(batch.rewards, batch.group, obj.advantage)
    old = torch.where(m, logps + 0.3 * torch.randn(m.shape, generator=torch.Generator().manual_seed(1)), 0.) if stale else logps
    if stale: batch.old_token_logprobs = torch.cat([torch.zeros(len(m), 1), old], 1)
    inputs = dict(prompt_ids=torch.zeros(len(m), 1, dtype=torch.long), prompt_mask=torch.ones(len(m), 1, dtype=torch.long),
                  completion_ids=batch.input_ids[:, 1:], completion_mask=m.long(), advantages=adv, num_items_in_batch=m.sum(),
                  ref_per_token_logps=ref)
    if stale: inputs['old_per_token_logps'] = old
    use_is = is_mode != 'none'
    if use_is: inputs['importance_sampling_ratio'] = trl_is_ratio(old, batch.behaviour_logprobs[:, 1:], m, is_mode, 1.3)
    trl_logps = logps.clone().requires_grad_()
    s = trl_self(trl_logps, loss_type=loss_type, beta=kl_coef, epsilon_high=obj.clip_high, max_completion_length=7,
                 use_vllm=use_is, vllm_importance_sampling_correction=use_is, importance_sampling_level=level)
    want = GRPOTrainer._compute_loss(s, None, inputs)
    want_grad, = torch.autograd.grad(want, trl_logps)
    got, got_grad = ours(obj, batch, logps)
    torch.testing.assert_close(got, want, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(got_grad, want_grad, atol=1e-6, rtol=1e-5)
    if use_is:  # and the weights themselves are TRL's
        w, _ = is_weights(old, batch.behaviour_logprobs[:, 1:], m, is_mode, 1.3)
        torch.testing.assert_close(torch.where(m, w.expand_as(m), 0.), torch.where(m, inputs['importance_sampling_ratio'].expand_as(m), 0.))


def test_grpo_advantages_are_trls(case):
    "TRL: (r - group mean) / (unbiased group std + 1e-4); Dr. GRPO: not divided; RLOO: r minus the mean of the others"
    batch, *_ = case
    r = batch.rewards.view(2, 3)
    torch.testing.assert_close(group_advantages(batch.rewards, batch.group), ((r - r.mean(1, keepdim=True)) / (r.std(1, keepdim=True) + 1e-4)).flatten())
    torch.testing.assert_close(group_advantages(batch.rewards, batch.group, 'dr_grpo'), (r - r.mean(1, keepdim=True)).flatten())
    torch.testing.assert_close(group_advantages(batch.rewards, batch.group, 'rloo'), (r - (r.sum(1, keepdim=True) - r) / 2).flatten())


@pytest.mark.parametrize('kl_coef', [0., 0.05])
@pytest.mark.parametrize('stale', [False, True])
def test_rloo_equals_trl(case, kl_coef, stale):
    "TRL's RLOOTrainer: one ratio per sequence (product of the token ratios), the KL (k1, summed) off the reward, leave-one-out advantages"
    batch, m, logps, ref = case
    old = torch.where(m, logps + 0.3 * torch.randn(m.shape, generator=torch.Generator().manual_seed(1)), 0.) if stale else logps
    if stale: batch.old_token_logprobs = torch.cat([torch.zeros(len(m), 1), old], 1)
    kl = (old - ref).sum(-1)  # TRL: beta * sum_t(old - ref), subtracted from the reward
    r = (batch.rewards - kl_coef * kl).view(2, 3)
    adv = (r - (r.sum(1, keepdim=True) - r) / 2).flatten()
    trl_logps = logps.clone().requires_grad_()
    s = trl_self(trl_logps, cls=RLOOTrainer, loss_type=None)
    inputs = dict(prompt_ids=torch.zeros(len(m), 1, dtype=torch.long), prompt_mask=torch.ones(len(m), 1, dtype=torch.long),
                  completion_ids=batch.input_ids[:, 1:], completion_mask=m.long(), advantages=adv, old_logps=(old * m).sum(-1))
    want = RLOOTrainer._compute_loss(s, None, inputs)
    want_grad, = torch.autograd.grad(want, trl_logps)
    got, got_grad = ours(PPO('rloo', kl_coef=kl_coef), batch, logps)
    torch.testing.assert_close(got, want, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(got_grad, want_grad, atol=1e-6, rtol=1e-5)
    assert not math.isclose(float(got_grad.abs().sum()), 0.)
