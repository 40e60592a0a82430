"""What Rumi writes for the model to read (headers, the automatic marker, the dashboard), in
the chat's language.

A chat in English must not read «Dashboard de metacognición» beside "Reply language:
English": the model mixes languages when its own context does. These are not sentences said
to a person (those are in `rumi.messages_*`), so they live here, one frozen set per
language; `for_language` picks one from the active language. Within a chat the language is
stable, so the leading system message stays byte-identical and the prompt cache keeps
working; only a chat switching language (with "auto") rebuilds it once.
"""

from __future__ import annotations

from dataclasses import dataclass

from rumi import messages as msg


@dataclass(frozen=True)
class ModelText:
    identity_header: str
    dashboard_header: str
    recall_header: str
    notes_header: str
    messages_header: str
    auto_marker: str
    section_titles: dict[str, str]
    not_loaded: str
    file_missing: str
    empty: str
    more_notes: str
    recall_failed: str
    levels: dict[str, str]          # the level's code ("BAJA"…) -> its word here
    level_actions: dict[str, str]
    default_hint: str
    memory_state: str
    conversation: str
    pressure: str
    disk_loaded: str
    action: str
    section_labels: dict[str, str]
    section_tokens: str
    items: str
    pinned: str
    failing_tool: str
    truncated: str
    over_budget: str
    fallback_tokenizer: str


SPANISH = ModelText(
    identity_header="=== [1] Identidad y reglas SMMA (solo lectura) ===\n\n",
    dashboard_header="=== [2] Dashboard de metacognición (automático) ===\n\n",
    recall_header="=== [8] Memorias recuperadas (espacio de trabajo) ===\n\n",
    notes_header="=== Avisos automáticos de este turno ===\n\n",
    messages_header=("=== [7–8] Log de acciones y espacio de trabajo: los mensajes siguientes, "
                     "con su [#id]; justo antes del último de la persona, [8] memorias "
                     "recuperadas y [2] dashboard ==="),
    auto_marker=("[Rumi · contexto automático del sistema, no lo escribió la persona: "
                 "memorias recuperadas y dashboard. No lo cites ni respondas a él; responde al "
                 "mensaje de la persona que sigue.]"),
    section_titles={
        "identity": "Identidad y reglas SMMA", "dashboard": "Dashboard de metacognición",
        "user_profile": "Perfil del usuario", "project_context": "Contexto del proyecto",
        "current_task": "Estado de la tarea actual", "agent_notes": "Notas del agente",
        "action_log": "Log de acciones", "workspace": "Espacio de trabajo",
    },
    not_loaded="(no cargada: {why})",
    file_missing="archivo no encontrado",
    empty="(vacía)",
    more_notes="- (…más avisos en /status)",
    recall_failed="La recuperación de memorias falló en este turno.",
    levels={"BAJA": "BAJA", "MEDIA": "MEDIA", "ALTA": "ALTA", "CRÍTICA": "CRÍTICA"},
    level_actions={
        "BAJA": "Ninguna. Procede con normalidad.",
        "MEDIA": "Ninguna urgente. Al cerrar un paso, poda las salidas que ya no necesites.",
        "ALTA": "Optimiza ahora: {hint}",
        "CRÍTICA": ("Presión crítica: optimiza de inmediato ({hint}). Si no baja, el sistema "
                    "compactará automáticamente el centro de la conversación."),
    },
    default_hint="resume pasos iniciales con summarize_range y poda lo obsoleto",
    memory_state="ESTADO DE MEMORIA:",
    conversation=("- Conversación (7–8): {conversation} / {room} tokens ({pressure}%) · "
                  "prompt {used} / {safe}"),
    pressure=("- Presión de memoria: {level} (optimizar desde {optimize:g}%, compactación "
              "automática desde {hard:g}%)"),
    disk_loaded="- Secciones en disco cargadas: {loaded}/{total}",
    action="- Acción recomendada: ",
    section_labels={
        "user_profile": "perfil", "project_context": "proyecto", "current_task": "tarea",
        "agent_notes": "notas", "action_log": "log", "workspace": "trabajo",
        "recalled_memories": "memorias",
    },
    section_tokens="- Tokens por sección: ",
    items="- Mensajes en contexto: {count} (#{first}…#{last})",
    pinned="- Fijados (no se pueden podar ni resumir): ",
    failing_tool=("- ⚠ La herramienta `{tool}` ha fallado {count} veces ({ids}): poda esos "
                  "intentos con prune_messages y anota la conclusión en agent_notes con "
                  "edit_section."),
    truncated=("- ⚠ Sección {name} truncada al cargar: {tokens} tokens > límite {limit}. "
               "Resúmela con edit_section."),
    over_budget="- ⚠ Sección {name} por encima de su presupuesto: {tokens} > {limit}.",
    fallback_tokenizer="- ⚠ Conteo de tokens aproximado (tokenizador no disponible; chars/4).",
)

ENGLISH = ModelText(
    identity_header="=== [1] Identity and SMMA rules (read-only) ===\n\n",
    dashboard_header="=== [2] Metacognition dashboard (automatic) ===\n\n",
    recall_header="=== [8] Recalled memories (workspace) ===\n\n",
    notes_header="=== Automatic notices for this turn ===\n\n",
    messages_header=("=== [7–8] Action log and workspace: the messages below, with their "
                     "[#id]; right before the person's last one, [8] recalled memories and "
                     "[2] dashboard ==="),
    auto_marker=("[Rumi · automatic system context, not written by the person: recalled "
                 "memories and dashboard. Do not quote it or reply to it; answer the "
                 "person's message that follows.]"),
    section_titles={
        "identity": "Identity and SMMA rules", "dashboard": "Metacognition dashboard",
        "user_profile": "User profile", "project_context": "Project context",
        "current_task": "Current task state", "agent_notes": "Agent notes",
        "action_log": "Action log", "workspace": "Workspace",
    },
    not_loaded="(not loaded: {why})",
    file_missing="file not found",
    empty="(empty)",
    more_notes="- (…more notices in /status)",
    recall_failed="Recalling memories failed in this turn.",
    levels={"BAJA": "LOW", "MEDIA": "MEDIUM", "ALTA": "HIGH", "CRÍTICA": "CRITICAL"},
    level_actions={
        "BAJA": "None. Carry on as usual.",
        "MEDIA": "Nothing urgent. When a step is done, prune outputs you no longer need.",
        "ALTA": "Optimise now: {hint}",
        "CRÍTICA": ("Critical pressure: optimise at once ({hint}). If it does not go down, "
                    "the system will compact the middle of the conversation automatically."),
    },
    default_hint="summarise early steps with summarize_range and prune stale outputs",
    memory_state="MEMORY STATE:",
    conversation=("- Conversation (7–8): {conversation} / {room} tokens ({pressure}%) · "
                  "prompt {used} / {safe}"),
    pressure=("- Memory pressure: {level} (optimise from {optimize:g}%, automatic compaction "
              "from {hard:g}%)"),
    disk_loaded="- Disk sections loaded: {loaded}/{total}",
    action="- Recommended action: ",
    section_labels={
        "user_profile": "profile", "project_context": "project", "current_task": "task",
        "agent_notes": "notes", "action_log": "log", "workspace": "workspace",
        "recalled_memories": "memories",
    },
    section_tokens="- Tokens per section: ",
    items="- Messages in context: {count} (#{first}…#{last})",
    pinned="- Pinned (cannot be pruned or summarised): ",
    failing_tool=("- ⚠ Tool `{tool}` has failed {count} times ({ids}): prune those attempts "
                  "with prune_messages and write the conclusion in agent_notes with "
                  "edit_section."),
    truncated=("- ⚠ Section {name} truncated on load: {tokens} tokens > limit {limit}. "
               "Summarise it with edit_section."),
    over_budget="- ⚠ Section {name} over its budget: {tokens} > {limit}.",
    fallback_tokenizer="- ⚠ Approximate token count (tokenizer unavailable; chars/4).",
)

_BY_LANGUAGE = {"es": SPANISH, "en": ENGLISH}


def for_language(code: str | None = None) -> ModelText:
    """The set for `code`, or for the active language (the chat being answered)."""
    return _BY_LANGUAGE.get(msg.normalize_language(code) or msg.current_language(), SPANISH)
