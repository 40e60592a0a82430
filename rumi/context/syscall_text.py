"""What the six memory system calls say to the model, in the chat's language: their schemas
(`TOOL_TEXTS`) and the results they return (`say`).

Model-facing, not said to a person (those are `rumi.messages_*`): a chat in English must not
read "Liberados ≈… tokens" after "Reply language: English". Both sets have the same keys
(a test checks it); numbers go through `msg.format_number`, so they read `2.935` / `2,935`.
"""

from __future__ import annotations

from rumi import messages as msg
from rumi.base.tools import ToolText

TOOL_TEXTS: dict[str, dict[str, ToolText]] = {
    "prune_messages": {
        "es": ToolText("Quita mensajes del contexto (con su llamada o resultado; los fijados "
                       "no).", {"message_ids": "ids [#n]"}),
        "en": ToolText("Removes messages from the context (with their call or result; pinned "
                       "ones stay).", {"message_ids": "ids [#n]"}),
    },
    "summarize_range": {
        "es": ToolText("Cambia los mensajes [#start_id]…[#end_id] por tu resumen (los fijados "
                       "se quedan)."),
        "en": ToolText("Replaces messages [#start_id]…[#end_id] with your summary (pinned "
                       "ones stay)."),
    },
    "recall_original": {
        "es": ToolText("Original exacto de un mensaje, aunque esté podado o resumido.",
                       {"message_id": "id [#n]; de una conversación importada, tal cual: "
                                      "\"imp…:n\""}),
        "en": ToolText("The exact original of a message, even if pruned or summarised.",
                       {"message_id": "id [#n]; for an imported conversation, as shown: "
                                      "\"imp…:n\""}),
    },
    "save_to_disk": {
        "es": ToolText("Crea o reemplaza un .md en .smma/ (no identity.md).",
                       {"file_name": "p. ej. decisiones.md"}),
        "en": ToolText("Creates or replaces a .md file in .smma/ (not identity.md).",
                       {"file_name": "e.g. decisions.md"}),
    },
    "load_from_disk": {
        "es": ToolText("Trae un .md de .smma/ al espacio de trabajo.",
                       {"file_name": "p. ej. decisiones.md"}),
        "en": ToolText("Brings a .md file from .smma/ into the workspace.",
                       {"file_name": "e.g. decisions.md"}),
    },
    "edit_section": {
        "es": ToolText("Reescribe entera una sección editable.",
                       {"section_name": "user_profile, project_context, current_task o "
                                        "agent_notes"}),
        "en": ToolText("Rewrites a whole editable section.",
                       {"section_name": "user_profile, project_context, current_task or "
                                        "agent_notes"}),
    },
}

SPANISH: dict[str, str] = {
    "pruned": "Podados del contexto: {ids}{note}. Liberados ≈{tokens} tokens.",
    "companions": " (incluye {ids}: van con su llamada o resultado)",
    "still_on_tape": "Siguen en el registro inmutable: recall_original los recupera.",
    "nothing_pruned": "No se podó nada. ",
    "refused_pinned": "Rechazados por estar fijados (pinned): {ids}.",
    "refused_open": "Rechazados por ser una llamada en curso: {ids}.",
    "unknown": "No están en el contexto activo (ya podados/resumidos o inexistentes): {ids}.",
    "use_visible_ids": " Usa ids visibles en el contexto.",
    "empty_summary": "El resumen está vacío.",
    "nothing_to_summarize": "No hay nada que resumir en ese rango. ",
    "summary_too_long": ("El resumen ({tokens} tokens) es más largo que lo que sustituye "
                         "({replaced} tokens). Escríbelo más corto."),
    "summarized": ("Resumidos {count} mensajes (#{first}…#{last}, ≈{replaced} tokens) en "
                   "#{id} ({tokens} tokens)."),
    "originals_on_tape": "Los originales siguen en el registro inmutable (recall_original).",
    "in_context": "sigue en el contexto",
    "not_in_context": "ya no está en el contexto activo",
    "imported": "conversación importada",
    "summary_of": " · resumen de ",
    "original": "Original de #{ref} ({details}; {where}) — registro inmutable:",
    "calls": "[llamadas] ",
    "no_session": "No hay una sesión activa para este chat.",
    "runaway": ("Llevas {count} llamadas de memoria seguidas sin avanzar en la tarea. Detente: "
                "no gestiones más la memoria y responde ahora al usuario."),
    "not_an_id": "«{value}» no es un id: usa n o imp…:n, tal como aparece entre corchetes.",
    "not_on_tape": "#{ref} no está en el registro inmutable de este chat.",
    "bad_path": ("Nombre no válido {name!r}: solo un nombre de archivo, sin rutas "
                 "(p. ej. 'decisiones.md')."),
    "bad_name": ("Nombre no válido {name!r}: usa letras, números, '_' o '-' y la extensión "
                 ".md (p. ej. 'decisiones.md')."),
    "unreadable": "No se puede leer .smma/{name}: {why}.",
    "too_big_to_keep": (".smma/{name} ocupa {size} bytes, demasiado para guardar una copia "
                        "antes de sobrescribirlo; no se ha modificado. Pide a quien administra "
                        "Rumi que lo reduzca."),
    "identity_read_only": "identity.md es de solo lectura: no se puede modificar.",
    "file_too_long": ("El contenido tiene {chars} caracteres y el máximo por archivo es "
                      "{limit}. Resúmelo o divídelo en varios archivos."),
    "too_many_files": "Ya hay {count} archivos .md en .smma/: reutiliza o consolida alguno.",
    "file_updated": "Archivo .smma/{name} actualizado ({chars} caracteres).",
    "file_created": "Archivo .smma/{name} creado ({chars} caracteres).",
    "no_such_file": "No existe .smma/{name}. Archivos disponibles: {available}.",
    "none": "ninguno",
    "file_truncated": ("\n…[archivo truncado: {size} B en disco, se muestran los primeros "
                       "{chars} caracteres]"),
    "file_is_section": ("\n(Este archivo es la sección {number} · {section}, que ya está en el "
                        "prompt del sistema.)"),
    "file_content": "Contenido de .smma/{name} ({tokens} tokens):\n\n{text}{note}",
    "unknown_section": "Sección desconocida {name!r}. Editables: {editable}.",
    "identity_section": "La sección 1 (identidad) es de solo lectura: no se puede modificar.",
    "not_editable": ("La sección {number} ({section}) no se edita así: usa prune_messages o "
                     "summarize_range. Editables: {editable}."),
    "section_too_long": "El contenido tiene {chars} caracteres; el máximo es {limit}.",
    "section_saved": ("Sección {number} ({section}) actualizada y guardada en "
                      ".smma/{file}: {tokens} de {limit} tokens."),
    "section_truncated": ("\n\n…[SECCIÓN TRUNCADA: el archivo {file} tiene {tokens} tokens y "
                          "el límite es {limit}; resume su contenido con edit_section]"),
    "section_over_budget": ("El contenido tiene {tokens} tokens y la sección {section} admite "
                            "{limit}. Resúmelo y vuelve a intentarlo."),
}

ENGLISH: dict[str, str] = {
    "pruned": "Pruned from the context: {ids}{note}. Freed ≈{tokens} tokens.",
    "companions": " (includes {ids}: they go with their call or result)",
    "still_on_tape": "They remain on the immutable record: recall_original brings them back.",
    "nothing_pruned": "Nothing was pruned. ",
    "refused_pinned": "Refused because pinned: {ids}.",
    "refused_open": "Refused because the call is in progress: {ids}.",
    "unknown": "Not in the active context (already pruned/summarised or never existed): {ids}.",
    "use_visible_ids": " Use ids visible in the context.",
    "empty_summary": "The summary is empty.",
    "nothing_to_summarize": "There is nothing to summarise in that range. ",
    "summary_too_long": ("The summary ({tokens} tokens) is longer than what it replaces "
                         "({replaced} tokens). Write it shorter."),
    "summarized": ("Summarised {count} messages (#{first}…#{last}, ≈{replaced} tokens) into "
                   "#{id} ({tokens} tokens)."),
    "originals_on_tape": "The originals remain on the immutable record (recall_original).",
    "in_context": "still in the context",
    "not_in_context": "no longer in the active context",
    "imported": "imported conversation",
    "summary_of": " · summary of ",
    "original": "Original of #{ref} ({details}; {where}) — immutable record:",
    "calls": "[calls] ",
    "no_session": "There is no active session for this chat.",
    "runaway": ("You have chained {count} memory calls without progress on the task. Stop: "
                "do not manage memory any more and answer the user now."),
    "not_an_id": "«{value}» is not an id: use n or imp…:n, as shown between brackets.",
    "not_on_tape": "#{ref} is not on this chat's immutable record.",
    "bad_path": ("Invalid name {name!r}: a file name only, no paths (e.g. 'decisions.md')."),
    "bad_name": ("Invalid name {name!r}: use letters, digits, '_' or '-' and the .md "
                 "extension (e.g. 'decisions.md')."),
    "unreadable": "Cannot read .smma/{name}: {why}.",
    "too_big_to_keep": (".smma/{name} takes {size} bytes, too much to keep a copy before "
                        "overwriting it; it was not changed. Ask whoever runs Rumi to shrink "
                        "it."),
    "identity_read_only": "identity.md is read-only: it cannot be changed.",
    "file_too_long": ("The content has {chars} characters and the maximum per file is "
                      "{limit}. Summarise it or split it into several files."),
    "too_many_files": "There are already {count} .md files in .smma/: reuse or merge one.",
    "file_updated": "File .smma/{name} updated ({chars} characters).",
    "file_created": "File .smma/{name} created ({chars} characters).",
    "no_such_file": ".smma/{name} does not exist. Files available: {available}.",
    "none": "none",
    "file_truncated": ("\n…[file truncated: {size} B on disk, the first {chars} characters "
                       "are shown]"),
    "file_is_section": ("\n(This file is section {number} · {section}, which is already in "
                        "the system prompt.)"),
    "file_content": "Content of .smma/{name} ({tokens} tokens):\n\n{text}{note}",
    "unknown_section": "Unknown section {name!r}. Editable: {editable}.",
    "identity_section": "Section 1 (identity) is read-only: it cannot be changed.",
    "not_editable": ("Section {number} ({section}) is not edited this way: use prune_messages "
                     "or summarize_range. Editable: {editable}."),
    "section_too_long": "The content has {chars} characters; the maximum is {limit}.",
    "section_saved": ("Section {number} ({section}) updated and saved in .smma/{file}: "
                      "{tokens} of {limit} tokens."),
    "section_truncated": ("\n\n…[SECTION TRUNCATED: file {file} has {tokens} tokens and the "
                          "limit is {limit}; summarise its content with edit_section]"),
    "section_over_budget": ("The content has {tokens} tokens and section {section} takes "
                            "{limit}. Summarise it and try again."),
}

_BY_LANGUAGE = {"es": SPANISH, "en": ENGLISH}


def say(key: str, **values: object) -> str:
    """The result text `key` in the active language; ints are written as the language does."""
    shown = {k: msg.format_number(v) if isinstance(v, int) and not isinstance(v, bool) else v
             for k, v in values.items()}
    return msg.in_language(_BY_LANGUAGE, key, **shown)
