"""Photos and documents as a feature (the core's media readers).

Photos need only Groq; documents need a sandbox to be saved into, which the sandbox feature
offers as `SANDBOX_FILES` (absent when `sandbox.enabled` is false, and then documents are
refused with that reason). Both readers are registered even when disabled: a disabled part
still explains itself, after an unsupported file has been told so.
"""

from __future__ import annotations

import logging

from rumi.base.feature import SANDBOX_FILES, FeatureHost
from rumi.media.documents import DocumentService
from rumi.media.photos import PhotoService
from rumi.media.vision import Describer

log = logging.getLogger(__name__)


class MediaFeature:
    name = "media"

    async def setup(self, host: FeatureHost) -> None:
        settings = host.settings
        describer = None
        if settings.vision.enabled:
            client = host.groq.with_options(max_retries=settings.llm.max_retries)
            describer = Describer(settings.llm, settings.vision.model,
                                  settings.vision.max_description_tokens, client=client)
        else:
            log.info("photos not described (vision.enabled = false)")
        photos = PhotoService(describer, settings.vision, settings.agent.language)
        host.set_media_reader("photo", photos.read)
        files = host.find(SANDBOX_FILES)
        if files is None:
            documents = DocumentService(None, lambda: False, settings.documents)
        else:
            documents = DocumentService(files.save, files.available, settings.documents)
        host.set_media_reader("document", documents.read)
