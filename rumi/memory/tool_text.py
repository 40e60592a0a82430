"""What the memory tools say to the model, in the chat's language: their schemas
(`TOOL_TEXTS`) and their results (`say`). Both sets have the same keys (a test checks it)."""

from __future__ import annotations

from rumi import messages as msg
from rumi.base.tools import ToolText

TOOL_TEXTS: dict[str, dict[str, ToolText]] = {
    "remember": {
        "es": ToolText("Guarda un dato duradero sobre el usuario (en tercera persona, en su "
                       "idioma). Da a los datos de un solo valor una `key` (p. ej. 'ciudad'): "
                       "un valor nuevo sustituye al anterior."),
        "en": ToolText("Save a lasting fact about the user (third person, the user's "
                       "language). Give one-value facts a `key` (e.g. 'city'): a new value "
                       "replaces the old."),
    },
    "forget": {
        "es": ToolText("Olvida recuerdos de largo plazo por memory_id (preferible) o por una "
                       "consulta sobre la clave o el texto."),
        "en": ToolText("Forget long-term memories by memory_id (preferred) or by a query on "
                       "key or text."),
    },
    "search_memory": {
        "es": ToolText("Busca por palabras en la memoria de largo plazo, las conversaciones "
                       "pasadas y los registros diarios; un tiempo relativo en la consulta "
                       "('ayer', 'la semana pasada') pone primero lo de ese momento."),
        "en": ToolText("Search long-term memory, past conversations and daily logs by words; "
                       "a relative time in the query ('yesterday', 'last week') puts hits from "
                       "that time first."),
    },
}

SPANISH = {
    "off": ("La memoria de largo plazo está desactivada en este chat (/memory off): no se "
            "puede guardar ni buscar nada. Responde a partir de la conversación."),
    "saved": "Recuerdo guardado {line}",
    "several": "Coinciden varios recuerdos: {listing}. Vuelve a llamar con memory_id.",
    "give_id": "Da memory_id o query.",
    "group_owner": ("En un grupo solo puedes olvidar recuerdos sobre la persona que habla; los "
                    "de otros (o del grupo) necesitan el /forget de un admin."),
    "no_match": "Ningún recuerdo activo coincide.",
    "forgot": "Olvidados (borrados con su historial): {ids}",
    "no_results": "Sin resultados.",
}
ENGLISH = {
    "off": ("Long-term memory is switched off in this chat (/memory off): nothing can be "
            "saved or searched. Answer from the conversation itself."),
    "saved": "Saved memory {line}",
    "several": "Several memories match: {listing}. Call again with memory_id.",
    "give_id": "Give memory_id or query.",
    "group_owner": ("In a group you may only forget memories about the person speaking; "
                    "others' (or the group's) need an admin's /forget."),
    "no_match": "No active memory matched.",
    "forgot": "Forgot (erased with its history): {ids}",
    "no_results": "No results.",
}
# say(key, **values): a result in the language of the chat being answered
say = msg.speaker({"es": SPANISH, "en": ENGLISH})
