"""/status tells how long-term memory works right now (issue 7: "if the model is unavailable …
/status says so"; recall "returns … components, for /status"), and the bot builds its memory
the way the configuration says (vector save interval; no fastembed registry read on the loop).
"""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import pytest

from rumi.app import build_app
from rumi.config import Settings
from rumi.memory.factory import open_memory_store
from tests.conftest import MODEL_DIR, require

CHAT = "4242"
WITH_MODEL = ('embedding_model = "sentence-transformers/all-MiniLM-L6-v2"\n'
              f'embedding_model_path = "{MODEL_DIR}"\nembedding_threads = 2\n'
              "embedding_load_wait_seconds = 600\n")


def settings_for(make_settings, fake_groq, memory: str) -> Settings:
    return make_settings(f'[llm]\napi_key = "k"\nbase_url = "{fake_groq.base_url}"\n'
                         f"[sandbox]\nenabled = false\n[memory]\n{memory}")


async def status_after_a_turn(settings: Settings, fake_groq) -> tuple[str, str]:
    """/status before anything was recalled, and after one message that recalled memories."""
    app = await build_app(settings)
    await app.start()
    try:
        await app.assistant.handle(CHAT, 1, "/remember Mi perro se llama Toby")
        await app.assistant.handle(CHAT, 1, "/remember Prefiero el té verde")
        before = (await app.assistant.handle(CHAT, 1, "/status detalle")).text
        fake_groq.enqueue_text("Toby, claro.")
        await app.assistant.handle(CHAT, 1, "¿cómo se llama mi perro Toby?")
        after = (await app.assistant.handle(CHAT, 1, "/status detalle")).text
    finally:
        await app.stop()
    return before, after


async def test_status_says_keyword_only_and_why_the_last_memories_scored(
    make_settings, fake_groq
) -> None:
    settings = settings_for(make_settings, fake_groq, "embeddings_enabled = false\n")
    before, after = await status_after_a_turn(settings, fake_groq)
    assert ("Memoria: solo búsqueda por palabras clave, la búsqueda semántica está desactivada "
            "en la configuración; 2 recuerdos activos") in before
    assert "Recuerdos usados" not in before  # nothing recalled yet
    assert "Recuerdos usados en la última respuesta" in after
    item = next(line for line in after.splitlines() if "Toby" in line)
    assert "recencia" in item and "importancia" in item and "relevancia 1.00" in item
    assert "frecuencia" in item


async def test_status_names_a_missing_model(make_settings, fake_groq, tmp_path: Path) -> None:
    settings = settings_for(make_settings, fake_groq,
                            f'embedding_model_path = "{tmp_path / "no-model"}"\n')
    before, _ = await status_after_a_turn(settings, fake_groq)
    assert "Memoria: solo búsqueda por palabras clave, el modelo de embeddings no está " \
           "disponible (no model.onnx in" in before


async def test_status_with_the_model_says_semantic(make_settings, fake_groq) -> None:
    require((MODEL_DIR / "model.onnx").exists(), f"shared model missing at {MODEL_DIR}")
    settings = settings_for(make_settings, fake_groq, WITH_MODEL)
    _, after = await status_after_a_turn(settings, fake_groq)
    assert ("Memoria: búsqueda semántica y por palabras clave "
            "(modelo local/sentence-transformers/all-MiniLM-L6-v2); 2 recuerdos activos") in after
    assert "Toby" in after.split("Recuerdos usados en la última respuesta", 1)[1]


async def test_the_bot_finds_the_query_twin_in_its_data_dir(
    make_settings, fake_groq, twin_dir: Path
) -> None:
    """Where `rumi models quantize` puts the twin is where the composition root looks."""
    settings = settings_for(make_settings, fake_groq, WITH_MODEL)
    shutil.copytree(twin_dir, settings.data_dir / "models" / "all-MiniLM-L6-v2-int8")
    _, after = await status_after_a_turn(settings, fake_groq)
    assert ("Memoria: búsqueda semántica y por palabras clave (modelo local/sentence-"
            "transformers/all-MiniLM-L6-v2, consultas con su copia int8); 2 recuerdos "
            "activos") in after
    assert "Toby" in after.split("Recuerdos usados en la última respuesta", 1)[1]


async def test_bot_honours_the_vector_save_interval(make_settings, fake_groq) -> None:
    settings = settings_for(make_settings, fake_groq,
                            f'embedding_model_path = "{MODEL_DIR}"\n'
                            "vector_save_interval_seconds = 2.5\n")
    app = await build_app(settings)
    try:
        store = app.parts["memory_store"]
        assert store.vectors is not None and store.vectors.save_interval == 2.5
    finally:
        await app.stop()


async def test_unknown_model_dimension_is_looked_up_off_the_event_loop(
    make_settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A model name Rumi has no dimension for makes the embedder read fastembed's registry
    (an import of fastembed + onnxruntime, ~1 s on a Pi): never on the event loop."""
    fastembed = pytest.importorskip("fastembed")
    seen: list[bool] = []
    real = fastembed.TextEmbedding.list_supported_models

    def spy() -> list[dict]:
        seen.append(threading.current_thread() is threading.main_thread())
        return real()

    monkeypatch.setattr(fastembed.TextEmbedding, "list_supported_models", staticmethod(spy))
    settings = make_settings('[memory]\nembedding_model = "acme/unknown-embedder"\n')
    store = await open_memory_store(settings)
    try:
        assert seen == [False]
        assert store.embedder is not None and store.embedder.dim == 384  # the default guess
    finally:
        await store.close()
