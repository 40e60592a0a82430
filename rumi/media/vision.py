"""One Groq vision call, through the real `groq` SDK, failures typed.

Separate from the chat client (rumi/llm/client.py) on purpose: the chat model may not accept
images at all (Groq answers 400), so a photo is first turned into words by a model that does
(`vision.model`), and only the words enter the conversation. One image per request (Groq takes
at most 5, each counted as 2,048 input tokens), sent inline as a base64 data URL.
"""

from __future__ import annotations

import base64
import logging

import groq

from rumi.config import LLMSettings
from rumi.llm.provider_errors import classify
from rumi.llm.side_client import SideCallFailed, SideClient

log = logging.getLogger(__name__)

PROMPT = (
    "Describe esta imagen para alguien que no puede verla, en el idioma «{language}»: qué se "
    "ve, personas u objetos, el lugar, y transcribe literalmente cualquier texto, número o "
    "dato legible (tickets, carteles, pantallas, documentos). Sé concreto y no inventes. "
    "No respondas a la persona: solo describe."
)
CAPTION_HINT = "La persona la envió con este texto, tenlo en cuenta al describir: «{caption}»"


class DescriptionFailed(SideCallFailed):
    """Groq refused or could not be reached; `error.kind` says which."""


class Describer(SideClient):
    def __init__(self, settings: LLMSettings, model: str, max_tokens: int, *,
                 client: groq.AsyncGroq | None = None) -> None:
        self.model = model
        self.max_tokens = max_tokens
        super().__init__(settings, client)

    async def describe(self, image: bytes, mime_type: str, caption: str, language: str) -> str:
        """The model's description of the image ("" if it said nothing)."""
        prompt = PROMPT.format(language=language)
        if caption:
            prompt += "\n" + CAPTION_HINT.format(caption=caption)
        url = f"data:{mime_type};base64,{base64.b64encode(image).decode('ascii')}"
        try:
            result = await self._client.chat.completions.create(
                model=self.model, temperature=0.2, max_completion_tokens=self.max_tokens,
                messages=[{"role": "user", "content": [
                    {"type": "text", "text": prompt},
                    {"type": "image_url", "image_url": {"url": url}},
                ]}],
            )
        except groq.APIStatusError as exc:
            raise DescriptionFailed(classify(exc.status_code, exc.body,
                                             exc.response.headers)) from exc
        except (groq.APITimeoutError, groq.APIConnectionError) as exc:
            raise DescriptionFailed(classify(None, None)) from exc
        if not result.choices:
            return ""
        return str(result.choices[0].message.content or "").strip()
