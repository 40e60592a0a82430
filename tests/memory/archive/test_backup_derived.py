"""A backup leaves out what a start remakes: the tokenizer's parsed vocabulary (3 MB, kept
under data_dir/cache/tokenizer by rumi/context/tokens.py so restarts skip tiktoken's parse)."""

from __future__ import annotations

import asyncio
import tarfile
from pathlib import Path

from rumi.app import build_app
from rumi.memory.archive.backup import make_backup


async def test_a_backup_leaves_out_the_parsed_tokenizer_vocabulary(make_settings,
                                                                   tmp_path: Path) -> None:
    settings = make_settings('[llm]\napi_key = "gsk_test"\nbase_url = "http://127.0.0.1:9"\n'
                             "[sandbox]\nenabled = false\n[memory]\nembeddings_enabled = false\n")
    app = await build_app(settings)
    await app.start()
    await app.stop()
    kept = settings.data_dir / "cache" / "tokenizer" / "o200k_base.vocab"
    assert kept.is_file()   # the start kept it for the next one
    info = await asyncio.to_thread(make_backup, settings.data_dir, tmp_path / "out")
    with tarfile.open(info.path) as tar:
        names = tar.getnames()
    assert any(name.endswith("rumi.db") for name in names)
    assert not [name for name in names if "cache/tokenizer" in name]
