"""The comparison benchmarks' harness: TRL's GRPOTrainer generates from the very token ids tba_kit's searchers do, is
rewarded and evaluated as tba_kit is, and a run that learns what the evaluation never shows is a harness failure;
the smoke modes of the peer and off-policy benchmarks (TRL's tests skipped without TRL)."""
import json, shutil, subprocess, sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
@pytest.mark.process
def test_peer_trl_smoke(tmp_path):
    pytest.importorskip('trl')
    r = subprocess.run([sys.executable, str(ROOT / 'benchmarks' / 'peer_trl.py'), '--smoke', '--out', str(tmp_path / 'trl')],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert got['steps'] == 2 and got['evaluations'] == 2, got
    rows = [json.loads(l) for l in open(tmp_path / 'trl' / 'metrics.jsonl')]
    assert sum('train/step' in r for r in rows) == 2  # one row per TRL step, in tba_kit's format
    assert all('reward/mean' in r for r in rows if 'train/step' in r)  # its training reward, for the harness check
    assert json.loads((tmp_path / 'trl' / 'summary.json').read_text())['prompts_checked_equal'] == 16  # all 16 training prompts
    # a 2-step cosine over 5 minutes: the steps lead the clock, so update 1 at the peak, update 2 at half of it, as tba_kit's trainer
    assert [r['train/lr'] for r in rows if 'train/lr' in r] == pytest.approx([1e-5, 5e-6])
    evals = sorted((tmp_path / 'trl' / 'evals').iterdir())
    assert [p.name for p in evals] == ['step_000000.jsonl', 'step_000002.jsonl']
    assert all('correct' in json.loads(l) for l in evals[-1].read_text().splitlines())  # per problem, for intervals


def _bench(name):
    import importlib.util
    sys.path.insert(0, str(ROOT / 'benchmarks'))
    spec = importlib.util.spec_from_file_location(name, ROOT / 'benchmarks' / f'{name}.py')
    mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
    return mod


@pytest.mark.slow
@pytest.mark.parametrize('job', ['quickstart', 'reasoning'])
def test_trl_generates_from_tba_kits_prompt_ids(tmp_path, job):
    "For 64 prompts of each job, the ids TRL's trainer builds equal encode_prompts' (the searchers'); on the main job, TRL given the chats, as before the fix, does not"
    pytest.importorskip('trl')
    import random
    from tba_kit.parts import make_policy
    from tba_kit.config import Config
    from tba_kit.tasks import encode_prompts, make_task
    peer = _bench('peer_trl')
    cfg = Config.load(ROOT / 'configs' / f'{job}.yaml', ['--precision=fp32'])
    task, (model, tok) = make_task(cfg.task, **cfg.task_args), make_policy(cfg)
    rows = peer.trl_data(task, tok)
    trainer = peer.trl_trainer(cfg, task, model, tok, tmp_path / 'trl')  # as the peer builds it
    assert peer.check_same_prompts(trainer, task, tok, n=64) == 64
    sample = random.Random(1).sample(range(len(rows)), 64)
    got = trainer._tokenize_prompts([rows[i]['prompt'] for i in sample])[0]
    want = encode_prompts(tok, [task.prompts('train')[i].messages for i in sample])
    assert [list(map(int, g)) for g in got] == [list(w) for w in want]
    assert tok.decode(want[0]).endswith('<|im_start|>assistant\n' + ('The answer is' if job == 'quickstart' else ''))
    # the rows carry the reward's column as tba_kit's searchers score it: the same completions get the same rewards
    texts = ['The answer is ' + rows[i]['answer'] for i in sample[:8]] + [' 7'] * 8
    trl_r = task.reward([rows[i]['prompt'] for i in sample[:16]], texts, answer=[rows[i]['answer'] for i in sample[:16]])
    tba_r = task.reward([task.prompts('train')[i].messages for i in sample[:16]], texts, answer=[task.prompts('train')[i].fields['answer'] for i in sample[:16]])
    assert trl_r == tba_r and sum(trl_r) >= 8
    if job != 'quickstart': return
    # the broken harness: chats handed to TRL get a closed prefix turn and a new assistant turn
    chats = trainer._tokenize_prompts([task.prompts('train')[i].messages for i in sample[:4]])[0]
    assert all(list(map(int, c)) != list(w) for c, w in zip(chats, want[:4]))
    from datasets import Dataset
    trainer.train_dataset = Dataset.from_list([{'prompt': p.messages, **p.fields} for p in task.prompts('train')])
    with pytest.raises(SystemExit, match='other tokens than tba_kit'): peer.check_same_prompts(trainer, task, tok, n=8)


def _run_folder(path, rewards, accs, n=200):
    "A run folder in tba_kit's format: the trained batches' rewards, evaluations of `n` problems at the given accuracies"
    path.mkdir(parents=True); (path / 'evals').mkdir()
    rows = [{'step': i + 1, 'train/step': i + 1, 'time/seconds': i + 1, 'reward/mean': r, 'train/step_seconds': 1., 'train/rows': 8, 'search/completions': 8}
            for i, r in enumerate(rewards)]
    for j, (step, a) in enumerate(zip([0, len(rewards)], accs)):
        k = round(a * n)
        (path / 'evals' / f'step_{step:06d}.jsonl').write_text(''.join(json.dumps({'correct': float(i < k)}) + '\n' for i in range(n)))
        rows.insert(0 if j == 0 else len(rows), {'step': step, 'time/seconds': step, 'time/train_seconds': step, 'eval/accuracy': k / n})
    (path / 'metrics.jsonl').write_text(''.join(json.dumps(r) + '\n' for r in rows))
    return path


def test_harness_check_flags_reward_that_never_reaches_the_evaluation(tmp_path):
    "Training reward up by 0.3 or more with held-out accuracy inside its start's interval: a harness failure; learning or a flat reward: not"
    ev = _bench('evidence')
    broken = ev.harness_check(_run_folder(tmp_path / 'broken', [0.1] * 10 + [0.6] * 10, [0.04, 0.05]))
    assert broken['failure'] and broken['reward_end'] - broken['reward_start'] == pytest.approx(0.5)
    assert not ev.harness_check(_run_folder(tmp_path / 'learns', [0.1] * 10 + [0.6] * 10, [0.04, 0.60]))['failure']
    assert not ev.harness_check(_run_folder(tmp_path / 'flat', [0.1] * 20, [0.04, 0.05]))['failure']
    assert not ev.harness_check(_run_folder(tmp_path / 'small', [0.1] * 10 + [0.35] * 10, [0.04, 0.05]))['failure']  # +0.25
    with pytest.raises(ValueError, match='cannot audit'):
        ev.harness_check(_run_folder(tmp_path / 'empty', [], [0.04, 0.05]))
    assert _bench('main_job').summarise(tmp_path / 'broken')['harness']['failure']  # main_job.py reports it beside each run


@pytest.mark.slow
def test_peer_report_shows_a_harness_failure_instead_of_a_result(tmp_path, capsys):
    "analyse() keeps a failing system out of the table and the comparisons, and report() names it"
    peer = _bench('peer_trl')
    runs = {'trl': [_run_folder(tmp_path / 'trl', [0.1] * 10 + [0.6] * 10, [0.04, 0.05])],
            'async': [_run_folder(tmp_path / 'async', [0.1] * 10 + [0.6] * 10, [0.04, 0.60])]}
    res = peer.analyse(runs, {'trl': [60.], 'async': [60.]}, tmp_path / 'fig.svg')
    assert res['harness_failures'] == ['trl'] and list(res['systems']) == ['async'] and 'reference' not in res
    peer.report(res)
    out = capsys.readouterr().out
    assert 'HARNESS FAILURE, not a result: trl' in out and '| trl |' not in out and '| async | 1 |' in out


def _off_policy():
    import importlib.util
    spec = importlib.util.spec_from_file_location('off_policy', ROOT / 'benchmarks' / 'off_policy.py')
    mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
    return mod


@pytest.mark.slow
def test_steps_to_interpolates_between_evaluations(tmp_path):
    "Steps to an accuracy: linear between the evaluations around the first crossing; None when never reached"
    rows = [{'step': s, 'time/seconds': s, 'eval/accuracy': a} for s, a in [(0, .1), (10, .3), (20, .5), (30, .45)]]
    (tmp_path / 'metrics.jsonl').write_text(''.join(json.dumps(r) + '\n' for r in rows))
    op = _off_policy()
    rec = op.record_of(tmp_path, 12.)  # what a finished run leaves: the analysis reads this, not the run's folder
    assert rec['wall_seconds'] == 12. and [e['step'] for e in rec['evaluations']] == [0, 10, 20, 30]
    assert op.steps_to(rec, .4) == pytest.approx(15.)
    assert op.steps_to(rec, .3) == 10. and op.steps_to(rec, .05) == 0.
    assert op.steps_to(rec, .6) is None


@pytest.mark.slow
def test_off_policy_smoke(tmp_path):
    "Every arm trains on the tiny model: the stale arms' data lags 0, 1, 0, 1 (sync_every 2) and 0, 1, 2, ... (sync_every 3) versions, the on-policy arm's 0; the measured divergence grows with the lag"
    res = _off_policy().main(['--smoke', '--out_root', str(tmp_path)])
    assert set(res) == {'tb', 'grpo_tis'}
    for obj in res:
        stale = lambda arm: [r['train/staleness'] for r in map(json.loads, open(tmp_path / f'{obj}_{arm}_seed0' / 'metrics.jsonl')) if 'train/step' in r]
        assert (stale('on'), stale('lag2'), stale('lag3')) == ([0.] * 4, [0., 1.] * 2, [0., 1., 2.] * 2)
        assert not (tmp_path / f'{obj}_lag3_seed0' / 'checkpoints').exists()  # deleted once evaluated
        assert 0 <= res[obj]['on_policy_final'] <= 1 and res[obj]['seeds'] == 1
        on = [e['eval/accuracy'] for e in map(json.loads, open(tmp_path / f'{obj}_on_seed0' / 'metrics.jsonl')) if 'eval/accuracy' in e]
        assert res[obj]['on_policy_rise'] == pytest.approx(on[-1] - on[-2]) and len(on) == 3  # --on_curve: evaluated at steps 0, 2, 4
        arms = res[obj]['arms']
        assert set(arms) == {'on', 'lag2', 'lag3', 'async'} and arms['on']['gap'] == 0
        assert arms['on']['kl'][0] < 1e-12 < min(arms[a]['kl'][0] for a in ('lag2', 'lag3')), arms  # fp32 on both sides: only stale weights move it (~1e-7 at lr 1e-5)
        if max(stale('async')) == 0: assert arms['async']['kl'][0] == 0, arms['async']  # fresh data only (timing): exactly the trainer's policy
        else: assert arms['async']['kl'][0] > -1e-6, arms['async']  # k3 >= 0 up to fp32 rounding; stale data reads 0 too where the updates between were zero (a group's rewards alike)
        assert all(len(arm['kl']) == 3 for arm in arms.values())
        by = res[obj]['kl_by_staleness']  # the sync arms' batches by versions behind: lag2 0, 1, 0, 1 and lag3 0, 1, 2, 0, 1, 2
        assert {s: v[3] for s, v in by.items()} == {0: 4, 1: 4, 2: 2} and by[0][0] < 1e-12 < by[1][0], by
    assert (tmp_path / 'divergence.svg').read_text().count('<circle') == 6  # every stale arm of both objectives (on-policy is the zero line)
    claims = _off_policy().claims(json.loads(json.dumps({'steps': 4, 'lag': 3, 'results': res})))  # as the ledger reads it back
    ledger = [c['claim'] for c in claims if 'measured KL' in c['claim']]
    assert [c.split(':')[0] for c in ledger] == [x for o in res for x in [f'{o}, {a}' for a in sorted(['lag2', 'lag3', 'async'], key=lambda a: res[o]['arms'][a]['kl'][0])] + [o]]
    assert [c['value'] for c in claims if 'versions stale' in c['claim']] == [f"s=1: {res[o]['kl_by_staleness'][1][0]:.2g}; s=2: {res[o]['kl_by_staleness'][2][0]:.2g}" for o in res]
    for run in tmp_path.glob('*_seed0'): shutil.rmtree(run)  # the run folders gone (a fresh clone): the kept records remain
    assert _off_policy().main(['--smoke', '--out_root', str(tmp_path), '--report']) == res


@pytest.mark.slow
def test_every_comparison_gives_its_arms_one_job(tmp_path):
    "peer_trl, main_job, diversity and off_policy refuse arms that differ in more than what they compare; never in the model, prompts, reward or evaluation"
    import argparse
    ev, peer, main_job, diversity = _bench('evidence'), _bench('peer_trl'), _bench('main_job'), _bench('diversity')
    systems = [peer.parse_system(s) for s in ['trl', 'trl_grpo', 'async', 'sync', 'tuned=sync --lr=3e-5 --objective=dapo --lr_schedule=constant']]
    assert peer.audit(systems, 'configs/quickstart.yaml', []) == {'trl_grpo': [], 'async': [], 'sync': ['mode', 'searcher_threads'],
                                                                  'tuned': ['objective', 'mode', 'searcher_threads', 'lr', 'lr_schedule']}
    for rogue in ['--max_new_tokens=8', '--task_args={dataset: increments, n_test: 100}', '--eval_limit=100', '--time_limit=16']:
        with pytest.raises(SystemExit, match='may not change'):
            peer.audit([*systems, peer.parse_system(f'x=async {rogue!r}')], 'configs/quickstart.yaml', [])
    with pytest.raises(SystemExit, match='the kind must be one of'): peer.parse_system('x=vllm')
    a = argparse.Namespace(config='configs/quickstart.yaml', sync_searcher_threads=2)
    arms = {m: ev.config_of(main_job.command(a, m, 0, tmp_path / m, ['--lr=3e-5'])) for m in ('async', 'sync')}
    assert ev.same_job(arms, {'mode', 'searcher_threads'}) == {'sync': ['mode', 'searcher_threads']} and arms['sync'].lr == 3e-5
    with pytest.raises(SystemExit, match=r"differ in \['mode', 'searcher_threads'\]"): ev.same_job(arms, {'objective'})
    assert diversity.audit(['tb', 'vargrad', 'grpo', 'trl'], 'configs/multiples.yaml', []) == {'vargrad': ['objective'], 'grpo': ['objective'], 'trl': ['objective']}
    # TRL's run is read as the config it trains with: its seed and overrides after '--'
    trl = ev.config_of(peer.command('trl', 3, tmp_path / 't', 'configs/quickstart.yaml', ['--lr=1e-4']))
    assert (trl.seed, trl.lr, trl.k, trl.task_args['n_test']) == (3, 1e-4, 8, 500)


def test_same_evaluation_refuses_runs_scored_on_other_problems(tmp_path):
    "Every run of a comparison is evaluated on the same held-out problems in the same order"
    ev = _bench('evidence')
    def run(name, prompts):
        r = _run_folder(tmp_path / name, [0.1] * 4, [0.0, 0.5], n=len(prompts))
        for f in (r / 'evals').iterdir():
            f.write_text(''.join(json.dumps({'prompt': p, 'correct': float(i % 2)}) + '\n' for i, p in enumerate(prompts)))
        return r
    a, b, c = run('a', ['1 + 1 =', '2 + 2 =']), run('b', ['1 + 1 =', '2 + 2 =']), run('c', ['2 + 2 =', '1 + 1 ='])
    assert ev.same_evaluation([a, b]) == 2
    with pytest.raises(SystemExit, match='other problems'): ev.same_evaluation([a, c])


def test_a_record_reads_as_its_run_folder(tmp_path):
    "keep_record's compact record gives the same evaluations, rows and harness verdict as the run folder it was made of"
    ev = _bench('evidence')
    run = _run_folder(tmp_path / 'r', [0.1] * 10 + [0.6] * 10, [0.04, 0.60])
    rec = ev.keep_record(run, tmp_path / 'kept' / 'r.json', 12.5, command='python x')
    assert ev.evaluations(rec) == ev.evaluations(run) and ev.rows(rec) == ev.rows(run)
    assert ev.harness_check(rec) == ev.harness_check(run) and json.loads(rec.read_text())['wall_seconds'] == 12.5


@pytest.mark.slow
def test_per_step_end_to_end_on_the_tiny_model(tmp_path):
    "per_step.py runs TRL and tba_kit arms as processes, keeps their records, reports equal steps; --report reads the records alone"
    pytest.importorskip('trl')
    tiny = ['--model=tiny', '--precision=fp32', '--task_args={n_train: 16, n_test: 8, answer_prefix: "The answer is"}', '--k=2', '--prompts_per_step=2',
            '--search_prompts=2', '--prefill=4', '--max_new_tokens=4', '--eval_max_new_tokens=4', '--searcher_threads=1']
    args = ['--seeds', '0', '--steps', '2', '--eval_every', '1', '--results', str(tmp_path / 'results'), '--out_root', str(tmp_path / 'runs'), *tiny]
    res = _bench('per_step').main(['--arms', 'trl_dapo=trl', 'sync_dapo=sync --objective=dapo', *args])
    assert list(res['systems']) == ['trl_dapo', 'sync_dapo'] and res['harness_failures'] == []
    assert sorted(res['at_steps']) == [0, 1, 2]  # both evaluated at every step, on the same problems
    assert res['usage']['sync_dapo'][0]['trained_per_completion'] == 1.0  # on-policy: each completion trained once
    records = sorted(p.name for p in (tmp_path / 'results' / 'per_step_runs').iterdir())
    assert records == ['sync_dapo_seed0.json', 'trl_dapo_seed0.json']
    kept = json.loads((tmp_path / 'results' / 'per_step_runs' / 'trl_dapo_seed0.json').read_text())
    assert kept['command'].startswith('python benchmarks/peer_trl.py --one') and kept['machine']['cores'] >= 1 and len(kept['commit']) == 40
    for run in (tmp_path / 'runs').iterdir(): shutil.rmtree(run)  # a fresh clone has the records only
    again = _bench('per_step').main(['--arms', 'trl_dapo=trl', 'sync_dapo=sync --objective=dapo', '--report', *args])
    assert again['at_steps'] == res['at_steps'] and again['systems'] == res['systems']


@pytest.mark.slow
def test_tuning_chooses_each_kinds_best_median_on_validation(tmp_path):
    "choose(): per kind, the candidate whose median final accuracy over the tuning seeds is highest; a tie keeps the first listed"
    peer = _bench('peer_trl')
    accs = {'trl_lr1e-5': [.30, .50], 'trl_lr3e-5': [.60, .40], 'sync_lr1e-5': [.70, .70], 'sync_lr3e-5': [.70, .70]}
    runs = {label: [_run_folder(tmp_path / f'{label}_{i}', [0.1] * 4, [0.04, a]) for i, a in enumerate(v)] for label, v in accs.items()}
    systems = [(label, label.split('_')[0], [f"--lr={label.split('lr')[1]}"]) for label in accs]
    got = peer.choose(runs, systems)
    assert {k: c['label'] for k, c in got.items()} == {'trl': 'trl_lr3e-5', 'sync': 'sync_lr1e-5'}
    assert got['trl']['accuracy'] == pytest.approx(.5) and got['trl']['overrides'] == ['--lr=3e-5']


def test_roofline_counts_the_tokens_each_pass_runs():
    "roofline.py's FLOPs: by hand for one token; the shared prompt pass runs a group's prompt once, the unshared pass once per row"
    rf = _bench('roofline')
    m = {'layers': 2, 'd': 4, 'vocab': 10, 'linear': 100}
    assert rf.forward_flops(m, queries=1, keys=3, logits=1) == 2 * 100 + 4 * 2 * 4 * 3 + 2 * 4 * 10
    k, p, c = 8, 50, 5
    shared, unshared = rf.step_flops(m, [p], [c] * k, k, True), rf.step_flops(m, [p], [c] * k, k, False)
    # shared: the prompt once (keys 1..50, mean 25.5; one logit), each completion against 50 cached keys + its own (mean 53)
    assert shared == 3 * ((2 * 100 * 50 + 4 * 2 * 4 * 50 * 25.5 + 2 * 4 * 10) + k * (2 * 100 * 5 + 4 * 2 * 4 * 5 * 53 + 2 * 4 * 10 * 5))
    assert unshared == 3 * k * (2 * 100 * 55 + 4 * 2 * 4 * 55 * 28 + 2 * 4 * 10 * 5)  # every row runs its prompt; logits for its completion
    from tba_kit.models import tiny_model
    got = rf.dims(tiny_model()[0])
    assert got['linear'] == 2 * (2 * 64 * 64 + 2 * 64 * 64 + 3 * 64 * 128) and got['vocab'] == len(tiny_model()[1])


def test_peer_times_every_system_against_the_best_on_policy_one(tmp_path, capsys):
    "--reference best_on_policy: the sync or TRL system with the highest median final; each system's time to it as a share of its own"
    peer = _bench('peer_trl')
    finals = {'sync_a': 0.30, 'sync_b': 0.50, 'trl': 0.40, 'async': 0.60}
    runs = {s: [_run_folder(tmp_path / s, [0.1] * 20, [0.05, a])] for s, a in finals.items()}
    walls = {s: [60.] for s in runs}
    res = peer.analyse(runs, walls, tmp_path / 'fig.svg', 'best_on_policy', {'sync_a', 'sync_b', 'trl'})
    assert res['reference'] == 'sync_b'  # async ends higher but is not on-policy
    assert res['systems']['async']['ratio_to_reference_time'] == pytest.approx(1.0)  # both reach 50% at their last evaluation, step 20
    assert res['systems']['sync_a']['ratio_to_reference_time'] is None  # never reaches it
    assert peer.analyse(runs, walls, tmp_path / 'fig.svg')['reference'] == 'trl'  # the default: the TRL system
    assert peer.analyse(runs, walls, tmp_path / 'fig.svg', 'sync_a')['reference'] == 'sync_a'
    with pytest.raises(ValueError, match="'nope' is not among"): peer.analyse(runs, walls, tmp_path / 'fig.svg', 'nope')
    no_ref = peer.analyse({'async': runs['async']}, {'async': [60.]}, tmp_path / 'fig.svg')
    peer.report(no_ref)
    assert 'reference' not in no_ref and "None's" not in capsys.readouterr().out  # no column for a reference that is not there


def test_working_compares_right_answers_at_equal_accuracy():
    "benchmarks/working.py: the spread of right answers is compared only where both systems were right equally often (>= 2 of K)"
    w = _bench('working')
    m = lambda right, texts, d2: {'right': right, 'answers': 1 if right else 0, 'texts': texts, 'distinct_2': d2, 'self_bleu': 1 - d2}
    a = {'samples': 4, 'problems': ['p', 'q', 'r'], 'measures': [m(4, 4, .8), m(2, 1, .3), m(3, 3, .9)]}
    b = {'samples': 4, 'problems': ['p', 'q', 'r'], 'measures': [m(4, 2, .5), m(2, 2, .5), m(1, 1, .2)]}
    res = w.analyse({'tba': [a], 'dapo': [b]}, 'dapo')
    got = res['against_reference']['tba']
    assert got['texts']['pairs'] == 2 and got['texts']['mean'] == pytest.approx(((4 - 2) + (1 - 2)) / 2)  # r: 3 right against 1, left out
    assert got['distinct_2']['mean'] == pytest.approx(((.8 - .5) + (.3 - .5)) / 2)
    assert res['systems']['tba']['accuracy'] == pytest.approx(9 / 12) and res['systems']['dapo']['problems_2_right'] == 2
    assert res['systems']['dapo']['texts'] == pytest.approx(2)  # mean over p and q (r has one right sample)
    assert 'against_reference' not in w.analyse({'tba': [a]}, 'dapo')
    with pytest.raises(ValueError, match='other problems'): w.analyse({'tba': [a], 'dapo': [b | {'samples': 8}]})
