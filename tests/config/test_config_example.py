"""config.example.toml loads as-is and documents every key of every section."""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import BaseModel

from rumi.config import Settings
from rumi.config_load import load_settings

EXAMPLE = Path(__file__).resolve().parents[2] / "config.example.toml"


def test_example_loads() -> None:
    settings = load_settings(EXAMPLE, env={})
    assert settings.telegram.allowed_users == []
    assert settings.context.optimize_threshold == 50


def test_example_documents_every_key() -> None:
    text = EXAMPLE.read_text(encoding="utf-8")
    missing = []
    for name, field in Settings.model_fields.items():
        if field.exclude:
            continue
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            section = re.search(rf"^\[{name}\]\n(.*?)(?=^\[(?!{name}\.)|\Z)", text,
                                re.MULTILINE | re.DOTALL)
            body = section.group(0) if section else ""
            for key in annotation.model_fields:
                if not re.search(rf"^(# )?{key} = |^\[{name}\.{key}\]", body, re.MULTILINE):
                    missing.append(f"{name}.{key}")
        elif not re.search(rf"^{name} = ", text, re.MULTILINE):
            missing.append(name)
    assert missing == [], f"undocumented keys in config.example.toml: {missing}"


def test_example_model_path_names_the_configured_model() -> None:
    """The commented local copy must be the model `embedding_model` names: that name labels
    the vectors and the int8 query copy (it once pointed at MiniLM-L6 under the multilingual
    name)."""
    from rumi.doctor.modelfiles import model_mismatch

    text = EXAMPLE.read_text(encoding="utf-8")
    path = re.search(r'^# embedding_model_path = "(.+)"$', text, re.MULTILINE)
    assert path is not None
    # the path is for the fastembed model the example offers instead of the packaged default
    other = re.search(r'^# embedding_model = "(.+)"$', text, re.MULTILINE)
    model = other.group(1) if other else load_settings(EXAMPLE, env={}).memory.embedding_model
    assert model_mismatch(model, Path(path.group(1))) is None
    assert model_mismatch(model, Path("/opt/rumi/models/all-MiniLM-L6-v2-onnx")) is not None
