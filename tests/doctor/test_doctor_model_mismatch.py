"""Doctor warns when memory.embedding_model_path holds another model than
memory.embedding_model names (vectors and the int8 copy would be filed under the wrong name)."""

from __future__ import annotations

import json

from rumi.base.checks import Status
from rumi.doctor.checks import check_embedding_model


def _model_dir(path, layers: int, vocab: int):
    path.mkdir(parents=True)
    (path / "model.onnx").write_bytes(b"onnx")
    (path / "tokenizer.json").write_text("{}")
    (path / "config.json").write_text(json.dumps({"num_hidden_layers": layers,
                                                  "vocab_size": vocab}))
    return path


def test_minilm_l6_under_the_multilingual_name_is_a_warning(make_settings, tmp_path):
    local = _model_dir(tmp_path / "models" / "some-model", 6, 30_522)
    settings = make_settings('[memory]\nembedding_model = '
                             '"sentence-transformers/paraphrase-multilingual-MiniLM-L12-v2"\n'
                             f'embedding_model_path = "{local}"\n')
    assert "multilingual" in settings.memory.embedding_model
    result = check_embedding_model(settings, tmp_path / "cache")
    assert result.status is Status.WARN
    assert "6 layers" in result.detail and "memory.embedding_model" in result.fix


def test_a_directory_named_after_another_model_is_a_warning(make_settings, tmp_path):
    local = tmp_path / "models" / "all-MiniLM-L6-v2-onnx"
    local.mkdir(parents=True)
    (local / "model.onnx").write_bytes(b"onnx")
    (local / "tokenizer.json").write_text("{}")
    (local / "config.json").write_text("{}")
    settings = make_settings(f'[memory]\nembedding_model_path = "{local}"\n')
    result = check_embedding_model(settings, tmp_path / "cache")
    assert result.status is Status.WARN and "named after all-minilm-l6-v2" in result.detail


def test_matching_name_and_shape_pass(make_settings, tmp_path):
    local = _model_dir(tmp_path / "models" / "all-MiniLM-L6-v2-onnx", 6, 30_522)
    settings = make_settings(
        '[memory]\nembedding_model = "sentence-transformers/all-MiniLM-L6-v2"\n'
        f'embedding_model_path = "{local}"\n')
    result = check_embedding_model(settings, tmp_path / "cache")
    assert result.status is Status.OK
