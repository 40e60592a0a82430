"""Voice notes as a feature: speech-to-text through the app's Groq client, and the /status
line with the audio seconds used today."""

from __future__ import annotations

import logging

from rumi.base.feature import FeatureHost, switched_off
from rumi.voice.service import VoiceService
from rumi.voice.transcriber import Transcriber

log = logging.getLogger(__name__)


class VoiceFeature:
    name = "voice"

    async def setup(self, host: FeatureHost) -> None:
        if switched_off(host.settings.voice.enabled, "voice notes", "voice.enabled"):
            return
        settings = host.settings
        # the SDK retries a failed upload itself (settings.llm.max_retries), on the shared pool
        client = host.groq.with_options(max_retries=settings.llm.max_retries)
        transcriber = Transcriber(settings.llm, settings.voice.model, client=client)
        service = VoiceService(transcriber, settings.voice, settings.agent.language)
        host.expose("voice", service)
        host.set_transcriber(service.transcribe)
        host.add_status_provider(service.status_line)
