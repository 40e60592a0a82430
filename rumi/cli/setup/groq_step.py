"""Setup step: check the Groq key against Groq itself and pick a model Groq serves today.

`GET /openai/v1/models` costs no tokens and answers both questions at once: a wrong key is a
401 here, in a second, instead of "saturado, inténtalo en un rato" after retries in the first
chat; and the list says whether the default model still exists (Groq retires models).
"""

from __future__ import annotations

from dataclasses import dataclass

from rumi.base.checks import mask
from rumi.config import LLMSettings
from rumi.llm.catalogue import replacement_for

TIMEOUT = 15.0


class GroqKeyRejected(Exception):
    pass


class GroqUnreachable(Exception):
    pass


async def served_models(api_key: str, base_url: str | None) -> list[str]:
    import groq

    from rumi.llm.client import groq_client

    client = groq_client(LLMSettings(api_key=api_key, base_url=base_url), timeout=TIMEOUT)
    try:
        page = await client.models.list()
    except groq.AuthenticationError as exc:
        raise GroqKeyRejected(f"Groq rejected key {mask(api_key)}") from exc
    except groq.APIStatusError as exc:
        raise GroqUnreachable(f"Groq answered HTTP {exc.status_code}") from exc
    except groq.APIConnectionError as exc:
        raise GroqUnreachable(f"cannot reach {base_url or 'https://api.groq.com'}") from exc
    finally:
        await client.close()
    return sorted(m.id for m in page.data)


@dataclass(frozen=True)
class ModelChoice:
    model: str | None
    note: str | None  # what the person should be told (a replacement was picked, or none fits)


def pick_model(wanted: str, served: list[str]) -> ModelChoice:
    """`wanted` when Groq serves it, else Groq's replacement or the best model it serves."""
    if wanted in served:
        return ModelChoice(wanted, None)
    replacement = replacement_for(wanted, served)
    if replacement is not None:
        return ModelChoice(replacement, f"{wanted} is not served by Groq now; Rumi will "
                                        f"answer with {replacement}")
    return ModelChoice(None, "Groq serves no chat model for this key"
                       + (f" (it lists: {', '.join(served[:6])})" if served else ""))
