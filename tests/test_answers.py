"The exact answer distribution of notebook 06d is the distribution tba_kit's generation samples from: checked on SmolLM2 by counting."
import math

import pytest
import torch

from tba_kit.answers import MultiplesTask, answer_distributions, leading_number, multiples_question
from tba_kit.models import load_model
from tba_kit.generation import generate_completions
from tba_kit.tasks import Prompt, encode_prompts


@pytest.mark.slow
def test_sampled_answers_follow_the_exact_distribution():
    torch.manual_seed(0)
    model, tok = load_model(dtype='float32')
    task = MultiplesTask(n_test=8, divisors=(1,), seed=0)
    # 1 to 12: ' 1' is often continued (' 10', ' 11', ' 12'), so the factor 'no digit follows' matters here
    p = Prompt('1-12', [{'role': 'user', 'content': multiples_question(1, 1, 12)}, {'role': 'assistant', 'content': 'The answer is'}],
               {'divisor': 1, 'lo': 1, 'hi': 12})
    exact = answer_distributions(model, model, tok, task, [p], beta=0.05).rows[0]
    n = 256
    (samples,) = generate_completions(model, tok, encode_prompts(tok, [p.messages]), k=n, max_new_tokens=5, batch_size=n)
    got = [leading_number(tok.decode(ids, skip_special_tokens=True)) for ids, _ in samples]
    counts = torch.tensor([sum(a == g for g in got) for a in exact.answers] + [sum(g not in exact.answers for g in got)], dtype=torch.float64)
    expected = n * exact.policy  # [A + 1]
    assert exact.accuracy > 0.05, exact.accuracy  # a prompt whose right answers are sampled at all
    # Pearson's chi-square over the bins with enough expected counts (the rest pooled into one): a wrong exact
    # distribution (e.g. without the 'no digit follows' factor, or one token off) fails by far
    big = expected >= 5
    obs = torch.cat([counts[big], counts[~big].sum()[None]])
    exp = torch.cat([expected[big], expected[~big].sum()[None]])
    keep = exp > 0
    chi2, dof = float(((obs - exp)[keep] ** 2 / exp[keep]).sum()), int(keep.sum()) - 1
    assert chi2 < dof + 4 * math.sqrt(2 * dof) + 10, (chi2, dof, counts.tolist(), expected.tolist())


@pytest.mark.slow
def test_diversity_smoke(tmp_path):
    "benchmarks/diversity.py: two objectives train on the tiny model; each answers.json holds exact distributions whose target is the reference's"
    import importlib.util, json
    from pathlib import Path
    from tba_kit.answers import answer_logprobs, answer_target, digit_tokens
    from tba_kit.models import tiny_model
    root = Path(__file__).resolve().parents[1]
    spec = importlib.util.spec_from_file_location('diversity', root / 'benchmarks' / 'diversity.py')
    mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
    res = mod.main(['--smoke', '--out_root', str(tmp_path)])
    assert set(res) == {'tb', 'grpo'} and all(r['seeds'] == [0] for r in res.values())
    ref, tok = tiny_model(seed=0)
    task = MultiplesTask(divisors=(1, 2), n_test=4)
    for system in res:
        run = tmp_path / f'{system}_seed0'
        assert not (run / 'checkpoints').exists()  # deleted once measured
        got = json.loads((run / 'answers.json').read_text())
        assert [r['prompt'] for r in got['rows']] == [p.id for p in task.prompts('test')]
        for row, p in zip(got['rows'], task.prompts('test')):
            assert row['answers'] == task.answers(p)
            assert abs(sum(row['policy']) - 1) < 1e-9 and abs(sum(row['target']) - 1) < 1e-9
            lp = answer_logprobs(ref, tok, encode_prompts(tok, [p.messages])[0], row['answers'], digit_tokens(tok))
            assert torch.allclose(torch.tensor(row['target'], dtype=torch.float64), answer_target(lp, got['beta']), atol=1e-9)  # the untrained model's
    # the paired comparison with GRPO: TB's gaps are its per-prompt means minus GRPO's; GRPO against itself is 0 points
    # away, and its distinct answers minus twice its own are minus its own
    runs = {s: [(0, json.loads((tmp_path / f'{s}_seed0' / 'answers.json').read_text()))] for s in res}
    cmp = mod.paired(runs, runs['grpo'])
    assert set(cmp) == {'tb'} and cmp['tb']['seeds'] == [0]
    tb, grpo = (mod.per_prompt(runs[s][0][1]) for s in ('tb', 'grpo'))
    assert math.isclose(cmp['tb']['accuracy_gap']['median'], sum(tb['accuracy']) / len(tb['accuracy']) - sum(grpo['accuracy']) / len(grpo['accuracy']), abs_tol=1e-12)
    same = mod.paired({'copy': runs['grpo']}, runs['grpo'])['copy']
    assert same['accuracy_gap'] == {'median': 0.0, 'ci': [0.0, 0.0]}
    assert math.isclose(same['distinct_minus_2x_grpo']['median'], -res['grpo']['distinct_correct_64']['median'], rel_tol=1e-9)
    first = runs['grpo'][0][1]
    with pytest.raises(ValueError, match='different prompts'): mod.paired({'copy': [(0, first | {'rows': first['rows'][::-1]})]}, runs['grpo'])
    moved = [r | {'target': r['target'][::-1]} for r in first['rows']]
    with pytest.raises(ValueError, match='different targets'): mod.paired({'copy': [(0, first | {'rows': moved})]}, runs['grpo'])
    # --baseline: GRPO's runs from a results file (seeds as its string keys), the same pairing; refused beside this call's grpo
    (tmp_path / 'base.json').write_text(json.dumps({'answers': {'grpo': {'0': mod.compact(first)}}}))
    name, base = mod.baseline_grpo(str(tmp_path / 'base.json'))
    assert name == str(tmp_path / 'base.json') and math.isclose(mod.paired(runs, base)['tb']['accuracy_gap']['median'], cmp['tb']['accuracy_gap']['median'], abs_tol=1e-5)
    with pytest.raises(SystemExit, match='leave grpo out'): mod.main(['--smoke', '--report', '--out_root', str(tmp_path), '--baseline', str(tmp_path / 'base.json')])
    with pytest.raises(SystemExit, match='no GRPO runs'): mod.baseline_grpo(str(tmp_path / 'tb_seed0' / 'answers.json'))
