"""Every user-facing sentence Rumi says on its own (not the model's words), in Spanish.

The reference catalogue: `rumi.messages` looks a name up here when the active language has no
sentence of that name, so a sentence missing in another language still reaches the person.
"""

from __future__ import annotations

BUSY = "⏳ Ya estoy trabajando en tu mensaje anterior… te respondo a este en cuanto termine."
BUSY_QUEUE_FULL = (
    "⏳ Ya estoy trabajando en tu mensaje anterior y tengo varios más en cola. "
    "Espera a que termine y vuelve a enviarme este, por favor."
)
MODEL_UNAVAILABLE = (
    "😕 El modelo no está disponible ahora mismo (puede estar saturado o caído). "
    "Inténtalo de nuevo en un rato; tu mensaje quedó guardado en la conversación."
)
MODEL_UNREACHABLE = (
    "📡 No puedo conectar con Groq ahora mismo (sin red, sin DNS o sin respuesta a tiempo). "
    "Inténtalo de nuevo en un rato; tu mensaje quedó guardado en la conversación."
)
RATE_LIMITED = (
    "⏳ La cuenta de Groq llegó a su límite por minuto y la espera ({wait}) es más larga de lo "
    "razonable. Tu mensaje quedó guardado: vuelve a escribirme dentro de {wait}."
)
RATE_LIMITED_AGAIN = (
    "⏳ La cuenta de Groq sigue en su límite por minuto: esperé {waited} y aún no me deja "
    "responder. Tu mensaje quedó guardado: vuelve a escribirme en un minuto."
)
DAILY_LIMIT = (
    "📅 La cuenta de Groq llegó a su límite diario. Podré responder de nuevo dentro de {wait}. "
    "Tu mensaje quedó guardado en la conversación."
)
AUTH_FAILED = (
    "🔑 Groq rechazó la clave de API (HTTP {status}). Quien administra Rumi debe revisar "
    "`llm.api_key` (o la variable GROQ_API_KEY) en la configuración; «rumi doctor» lo comprueba."
)
MODEL_GONE = (
    "🧩 Groq ya no sirve el modelo «{model}» y ninguna alternativa configurada responde "
    "({tried}). Quien administra Rumi debe cambiar `llm.model` (p. ej. a openai/gpt-oss-120b)."
)
MODEL_SWITCHED = (
    "ℹ️ Groq ya no sirve el modelo configurado «{configured}»; te respondo con «{answering}». "
    "Para fijarlo, cambia `llm.model` en la configuración."
)
QUOTA_FALLBACK = (
    "ℹ️ El modelo «{configured}» gastó su cuota diaria de Groq; durante {wait} te responde "
    "«{answering}» (tiene su propia cuota) y luego vuelvo al de siempre."
)
REQUEST_TOO_LARGE = (
    "📚 La conversación ya no cabe en el límite por minuto de tu cuenta de Groq y no pude "
    "resumir más. Usa /clear para vaciarla (lo importante queda guardado) o /reset."
)
REQUEST_REFUSED = (
    "⚠️ Groq rechazó la petición (HTTP {status}). Quedó registrado; inténtalo de nuevo y, si se "
    "repite, usa /clear."
)
TOOL_CALL_FAILED = (
    "😕 El modelo no logró formular bien una acción, ni al segundo intento. "
    "¿Puedes reformular la petición?"
)
REPLY_CUT = "✂️ (Respuesta cortada por longitud; pídeme que siga si la necesitas entera.)"
STREAM_CUT = ("✂️ (La respuesta se cortó: se perdió la conexión con el modelo. Pídemela de "
              "nuevo si la necesitas entera.)")
EMPTY_AFTER_REASONING = (
    "(Me quedé pensando sin llegar a escribir la respuesta. ¿Puedes repetir la pregunta, "
    "o pedirla más concreta?)"
)
INTERNAL_ERROR = "⚠️ Algo salió mal al procesar tu mensaje. Ya quedó registrado; inténtalo de nuevo."
DISK_FULL = (
    "💾 El disco del servidor está lleno y ahora no puedo guardar nada. Tu mensaje no se "
    "pierde: lo responderé en cuanto haya espacio, sin que tengas que repetirlo."
)
EMPTY_REPLY = "(El modelo no devolvió ninguna respuesta. ¿Puedes reformular la pregunta?)"
BREAKER_REPEATED = (
    "🔁 Me detuve: estaba repitiendo la misma acción ({tool}) sin avanzar. "
    "Dime cómo quieres seguir o reformula la petición."
)
BREAKER_TOOL_ERRORS = (
    "🧱 Me detuve: las últimas {count} acciones fallaron seguidas (la última, {tool}). "
    "Puede que la herramienta no esté disponible ahora; "
    "dime si quieres que lo intente de otra forma."
)
BREAKER_MAX_TURNS = (
    "⌛ Me detuve tras {turns} pasos sin llegar a una respuesta final. "
    "Lo hecho hasta ahora queda en la conversación; dime si sigo."
)
MEMORY_LOOP = (
    "🧠 Me detuve: estaba reorganizando mi memoria una y otra vez sin avanzar en tu petición. "
    "Si la conversación se ha enredado, usa /clear para vaciarla (lo importante queda "
    "guardado) o /reset para empezar de cero; si no, dime cómo seguimos."
)
CONTEXT_FULL = (
    "📚 La conversación ya no cabe en la memoria del modelo y no pude resumir más. "
    "Usa /clear para vaciarla (lo importante queda guardado) o /reset para empezar de cero."
)
TOOL_SKIPPED = "Not executed: the agent loop stopped before this call ({reason})."
TOOL_CANCELLED = "Not executed: the user cancelled the task with /stop."
TOOL_NOT_RUN = ("Not executed: Rumi restarted before this call began. Call it again if it is "
                "still needed.")
TOOL_MAYBE_RAN = ("Unknown outcome: Rumi restarted while this call was running, so it may or "
                  "may not have run. Do not repeat it blindly: check its effect first (for "
                  "example, read the file it changed) and tell the user what you found.")
TOOL_MAYBE_RAN_NOTICE = (
    "⚠️ Me reinicié mientras ejecutaba {tools}: puede que se haya hecho o no. No lo "
    "repito a ciegas; lo compruebo antes de seguir."
)

NOTHING_TO_STOP = "No estoy trabajando en nada ahora mismo."
STOPPED_REPLY = "🛑 Tarea detenida a petición tuya."
STOPPED_MARK = "🛑 (Detenida a petición tuya.)"
RESET_DONE = (
    "🔄 Sesión reiniciada: empiezo de cero en esta conversación. "
    "Lo que guardé en la memoria a largo plazo sigue ahí."
)
CLEAR_DONE = "🧹 Listo: vacié la conversación activa ({count}). La memoria sigue intacta."
PIN_USAGE = (
    "Uso: /{name} <id> (el número que aparece como [#id]), "
    "o responde con /{name} a un mensaje (tuyo o mío) de la conversación activa."
)
PIN_NOT_FOUND = "No encuentro el elemento #{id} en la conversación activa."
PINNED = "📌 Fijado #{id}: no se podará ni se resumirá."
UNPINNED = "Soltado #{id}: vuelve a ser un mensaje normal."
NOT_AUTHORIZED = (
    "🙏 Lo siento, este asistente es privado y no estás en la lista de personas autorizadas. "
    "Si crees que es un error, pide a quien lo administra que añada tu id ({user_id})."
)
FEATURE_COMING = (
    "🚧 El comando /{name} todavía no está disponible en esta instalación; llegará pronto."
)
UNKNOWN_COMMAND = "No conozco el comando /{name}. Escribe /help para ver lo que puedo hacer."
ATTACHMENT_IGNORED = (
    "📎 Recibí un archivo, pero solo sé usarlo con /import (ponlo como pie del documento)."
)
DOCUMENT_TOO_LARGE = "📎 El archivo es demasiado grande (máximo {max_mb} MB)."



def format_wait(seconds: float) -> str:
    """A wait the way a person says it: "unos 45 s", "unos 3 min", "unas 2 h y 10 min"."""
    seconds = max(1, round(seconds))
    if seconds < 90:
        return f"unos {seconds} s"
    minutes = round(seconds / 60)
    if minutes < 120:
        return f"unos {minutes} min"
    hours, rest = divmod(minutes, 60)
    return f"unas {hours} h y {rest} min" if rest else f"unas {hours} h"


# the terminal channel: files are paths on this computer
TERMINAL_DOCUMENT_SAVED = (
    "💾 Archivo guardado en {path} ({size} bytes). Para restaurarlo: /import {path}"
)
TERMINAL_DOCUMENT_FAILED = "⚠️ No pude guardar el archivo en {path}: {reason}."
TERMINAL_IMPORT_USAGE = "Uso en la terminal: /import <ruta del archivo .tar.gz exportado>"
TERMINAL_IMPORT_MISSING = "No encuentro el archivo «{path}». No se cambió nada."
TERMINAL_IMPORT_NOT_FILE = "«{path}» no es un archivo. No se cambió nada."
TERMINAL_IMPORT_UNREADABLE = "No pude leer «{path}»: {reason}. No se cambió nada."
TERMINAL_IMPORT_TOO_LARGE = (
    "El archivo es demasiado grande ({size_mb:.1f} MB; máximo {max_mb:.0f} MB). "
    "No se cambió nada."
)

START = (
    "👋 ¡Hola! Soy Rumi, tu asistente. Puedo conversar, ejecutar comandos en mi propio "
    "espacio aislado y recordar lo importante entre conversaciones.\n\n"
    "Escríbeme lo que necesites, o usa /help para ver los comandos."
)
HELP_HEADER = "Esto es lo que puedo hacer:"
HELP_FOOTER = "Para todo lo demás, simplemente escríbeme."
# the terminal's own /help (rumi/channels/terminal_help.py)
TERMINAL_HELP_IMPORT = "Importar memoria: /import <ruta del archivo .tar.gz exportado>"
TERMINAL_HELP_HEADER = "Solo en la terminal:"
TERMINAL_HELP_AUDIO = "/audio <ruta> — Tratar un archivo de audio como una nota de voz"
TERMINAL_HELP_EXIT = "/salir, /exit — Terminar (también Ctrl-D o Ctrl-C)"
STATUS_HEADER = "📊 Estado de Rumi"
STATUS_BUSY = "Ocupado: sí, trabajando en un mensaje"
STATUS_IDLE = "Ocupado: no"
STATUS_MODEL = "Modelo: {model} ({when})"
STATUS_MODEL_ANSWERED = "el que respondió por última vez"
STATUS_MODEL_NOT_YET = "aún no ha respondido desde el arranque"
STATUS_MODEL_SWITCHED = "  (el configurado, «{configured}», ya no existe en Groq: cambia llm.model)"
STATUS_CACHE = (
    "Caché de prompt de Groq: {share:.0f} % de los tokens de entrada ({cached} de {prompt}); "
    "razonamiento: {reasoning} tokens"
)
STATUS_LIMITS = (
    "Límites de la cuenta: quedan {tokens} de {tpm} tokens este minuto y {requests} de {rpd} "
    "peticiones hoy"
)
STATUS_RATE_WAITS = "Esperas por límites: {count} ({seconds} en total)"
STATUS_LAST_FAILURE = "Último fallo del modelo: {why}"
STATUS_SANDBOX_OK = "Sandbox: parado (arranca con el primer comando)"
STATUS_SANDBOX_DOWN = "Sandbox: no disponible ahora, no puedo ejecutar comandos ({reason})"
SANDBOX_PROBLEM_ENGINE = "Docker no responde; el administrador debe revisar el servicio Docker"
SANDBOX_PROBLEM_IMAGE = (
    "falta la imagen {image}; el administrador debe crearla con «rumi sandbox build»"
)
SANDBOX_PROBLEM_IMAGE_BUILDING = (
    "la imagen {image} se está construyendo; podré ejecutar comandos cuando esté lista"
)
SANDBOX_PROBLEM_DISABLED = "está desactivado en la configuración"
SANDBOX_PROBLEM_UNKNOWN = "motivo desconocido; «rumi doctor» lo diagnostica"

COMMAND_DESCRIPTIONS: dict[str, str] = {
    "start": "Presentación",
    "help": "Ver los comandos",
    "status": "Estado de Rumi (/status detalle: el contexto)",
    "stop": "Detener la tarea en curso",
    "reset": "Reiniciar la sesión desde cero",
    "clear": "Vaciar la conversación activa (guardando un resumen)",
    "remember": "Recordar algo: /remember <texto>",
    "forget": "Olvidar algo: /forget <texto o id>",
    "memory": "Ver lo que recuerdo (/memory off deja de recordar, /memory on vuelve a hacerlo)",
    "search": "Buscar en la memoria: /search <texto>",
    "pin": "Fijar un mensaje: /pin <id>",
    "unpin": "Soltar un mensaje fijado: /unpin <id>",
    "export": "Exportar tu memoria como archivo",
    "import": "Importar memoria (envía el archivo con /import como pie)",
}

# /status: the long-term memory (rumi/memory/status.py)
STATUS_MEMORY_SEMANTIC = (
    "Memoria: búsqueda semántica y por palabras clave (modelo {model}{when}); "
    "{active}"
)
STATUS_MEMORY_LOADS_ON_USE = ", se carga con el primer uso"
STATUS_MEMORY_QUERY_TWIN = ", consultas con su copia int8"
STATUS_MEMORY_KEYWORD_ONLY = (
    "Memoria: solo búsqueda por palabras clave, {reason}; {active}"
)
ACTIVE_MEMORIES_ONE = "{n} recuerdo activo"
ACTIVE_MEMORIES_MANY = "{n} recuerdos activos"
MEMORY_REASON_DISABLED = "la búsqueda semántica está desactivada en la configuración"
MEMORY_REASON_NO_INDEX = "no hay índice vectorial configurado"
MEMORY_REASON_MODEL = "el modelo de embeddings no está disponible ({detail})"
STATUS_MEMORY_LAST = "Recuerdos usados en la última respuesta (puntuación y por qué):"
STATUS_MEMORY_ITEM = (
    "  #{id} {total:.2f} = recencia {recency:.2f} · importancia {importance:.2f} · "
    "relevancia {relevance:.2f} · frecuencia {frequency:.2f} — «{snippet}»"
)

# MEMORY.md edits that cannot be applied as saved (rumi/memory/files/markdown_sync.py)
MD_NOT_UTF8 = "el archivo no es texto UTF-8"
MD_UNREADABLE = (
    "⚠️ No puedo leer tu MEMORY.md ({reason}). No lo toco hasta que vuelva a ser un archivo "
    "normal; tus recuerdos siguen a salvo en la base de datos."
)
MD_REJECTED = (
    "⚠️ No pude aplicar tu edición de MEMORY.md ({reason}). Guardé tu texto tal cual en "
    "memory/{file} y reescribí MEMORY.md desde la memoria, así que nada se perdió y todo sigue "
    "sincronizándose. Corrige esa línea y vuelve a copiar tus cambios a MEMORY.md."
)
MD_CONFIRM_FORGET = (
    "⚠️ Tu edición de MEMORY.md olvidaría {count} de {shown} recuerdos de golpe. No la apliqué "
    "todavía: la guardé en memory/{file} y dejé MEMORY.md como estaba. ¿Olvido esos {count} "
    "recuerdos? Responde /memorymd si o /memorymd no."
)
MD_CONFIRM_YES_BUTTON = "🗑️ Sí, olvidar {count}"
MD_CONFIRM_NO_BUTTON = "↩️ No, conservarlos"
MD_NOTHING_PENDING = "No hay ninguna edición de MEMORY.md esperando confirmación."
MD_PENDING_DECLINED = (
    "👍 No olvido nada. Tu edición sigue guardada en memory/{file} por si quieres recuperar "
    "algo de ella."
)
MD_PENDING_FILE_CHANGED = (
    "MEMORY.md cambió otra vez mientras esperaba tu respuesta; primero aplico ese cambio. "
    "Vuelve a responder /memorymd si dentro de un momento."
)
MD_PENDING_MISSING = "Ya no encuentro memory/{file}; no cambié nada."
MD_PENDING_FAILED = "⚠️ No pude aplicar la edición guardada ({reason}); no se perdió nada."
MD_PENDING_APPLIED = (
    "✅ Edición de MEMORY.md aplicada: {removed} olvidados, {added} nuevos, {changed} cambiados."
)
MD_CONFIRM_USAGE = "Responde /memorymd si para aplicar la edición guardada o /memorymd no."
MD_STATUS_PENDING = (
    "⏸️ MEMORY.md: una edición que olvidaría {count} recuerdos espera tu confirmación "
    "(memory/{file}); responde /memorymd si o /memorymd no."
)
MD_STATUS_REJECTED = (
    "⚠️ MEMORY.md: tu última edición no se pudo aplicar ({reason}); está guardada en "
    "memory/{file}."
)
MD_STATUS_RESTORED = (
    "🩹 MEMORY.md: la base de datos había perdido sus últimas escrituras; recuperé {count} "
    "recuerdos desde el archivo ({dropped} no se pudieron guardar). El archivo tal como estaba "
    "está en memory/{file}."
)
MD_COMMAND_DESCRIPTION = "Confirmar o descartar una edición de MEMORY.md: /memorymd si|no"

# rumi.db lost or damaged and rebuilt from MEMORY.md (rumi/memory/files/healing.py)
DB_REBUILT = (
    "🩹 La base de datos de Rumi se perdió o estaba dañada; la reconstruí desde tu MEMORY.md "
    "({count} recuerdos). Tu archivo es la copia buena: no se perdió nada de lo que mostraba."
)
DB_REBUILD_FAILED = (
    "⚠️ La base de datos de Rumi se perdió o estaba dañada y no pude reconstruir tus recuerdos "
    "({reason}). Tu MEMORY.md quedó guardado tal cual en memory/MEMORY.md.rejected-…; "
    "corrígelo y cópialo de nuevo a MEMORY.md para que lo vuelva a leer."
)

# a message received before a crash, too old to answer now (rumi/channels/telegram_journal.py)
INTERRUPTED_REPLY = (
    "⚠️ Se me cortó mientras respondía a «{text}»; ¿lo repito? Si todavía lo necesitas, "
    "vuelve a enviármelo."
)

# reminders and scheduled tasks (rumi/reminders/)
REMINDER_FIRED = "⏰ Recordatorio{note}: {text}"
REMINDER_TASK_RESULT = "⏰ Tarea programada #{id}{note}:\n\n{result}"
REMINDER_TASK_PROMPT = (
    "[Tarea programada #{id}, prevista para {when}; la pediste antes, hazla ahora y responde "
    "con el resultado] {text}"
)
REMINDER_LATE = " (con retraso)"
REMINDER_MAYBE_SENT = " (con retraso; Rumi se reinició mientras lo enviaba y quizá ya te llegó)"
REMINDERS_EMPTY = (
    "No tienes recordatorios pendientes. Pídemelos escribiendo, p. ej. «recuérdame mañana a "
    "las 9 llamar a Ana»."
)
REMINDERS_HEADER = "⏰ Tus recordatorios (hora de {tz}):"
REMINDERS_ITEM = "#{id} · {when} · {kind}{text}{repeat}"
REMINDERS_KIND_TASK = "tarea: "
REMINDERS_REPEAT = " (se repite: {rule})"
REMINDERS_FOOTER = "Para cancelar uno: /cancel <id>"
CANCEL_USAGE = "Uso: /cancel <id> (el número que aparece en /reminders)."
CANCEL_DONE = "🗑️ Cancelado #{id}: {text}"
CANCEL_NOT_FOUND = (
    "No encuentro el recordatorio #{id} entre los pendientes de este chat. Mira /reminders."
)
TIMEZONE_SHOW = (
    "🕒 La zona horaria de este chat es {tz} (ahora son las {now}). "
    "Para cambiarla: /timezone Europe/Madrid"
)
TIMEZONE_SET = "🕒 Listo: la zona horaria de este chat es ahora {tz} (ahora son las {now})."
TIMEZONE_UNKNOWN = (
    "No conozco la zona horaria «{name}». Usa un nombre IANA como Europe/Madrid, "
    "America/Lima o America/Mexico_City. No se cambió nada."
)
REMINDER_COMMANDS = {
    "reminders": "Ver tus recordatorios pendientes",
    "cancel": "Cancelar un recordatorio: /cancel <id>",
    "timezone": "Ver o cambiar la zona horaria: /timezone Europe/Madrid",
}

# voice notes (rumi/voice/, Assistant.handle_voice)
VOICE_HEARD = "🎙️ «{text}»"
VOICE_ORIGIN = "[nota de voz, {seconds} s, transcrita]"
VOICE_DISABLED = (
    "🎙️ Recibí un audio, pero la transcripción de voz está desactivada en esta instalación "
    "(voice.enabled). ¿Me lo escribes?"
)
VOICE_TOO_LARGE = (
    "🎙️ El audio es demasiado grande ({size_mb:.1f} MB; máximo {max_mb:.0f} MB). "
    "Envíame uno más corto o escríbemelo."
)
VOICE_TOO_LONG = (
    "🎙️ El audio dura demasiado ({seconds:.0f} s; máximo {max_seconds:.0f} s). "
    "Envíame uno más corto o escríbemelo."
)
VOICE_DAILY_BUDGET = (
    "🎙️ Hoy ya transcribí {used} de audio, el máximo diario es {limit}. "
    "Escríbeme el mensaje, o vuelve a enviarlo mañana."
)
VOICE_BAD_FILE = "🎙️ No pude leer ese archivo como audio (¿está dañado?). ¿Me lo escribes?"
VOICE_EMPTY = "🎙️ No entendí nada en el audio (¿silencio?). ¿Lo repites o me lo escribes?"
VOICE_RATE_LIMITED = (
    "⏳ Groq llegó a su límite de audio ({scope}). Vuelve a enviarlo dentro de {wait}, "
    "o escríbemelo."
)
VOICE_UNAVAILABLE = (
    "😕 La transcripción de voz no está disponible ahora mismo. Inténtalo en un rato o "
    "escríbemelo."
)
VOICE_AUTH = (
    "🔑 Groq rechazó la clave de API al transcribir (HTTP {status}); quien administra Rumi debe "
    "revisar llm.api_key."
)
VOICE_MODEL_GONE = (
    "🧩 Groq no sirve el modelo de voz «{model}»; quien administra Rumi debe cambiar voice.model."
)
STATUS_VOICE = "Audio transcrito hoy: {used} de {limit} (modelo {model})"
# photos and documents (rumi/media/, Assistant.handle_media)
PHOTO_ORIGIN = "[foto, descrita por el modelo de visión {model}]"
PHOTO_CAPTION = "Texto que la acompaña: {caption}"
PHOTO_DISABLED = (
    "🖼️ Recibí una foto, pero la descripción de imágenes está desactivada en esta instalación "
    "(vision.enabled). ¿Me cuentas qué hay en ella?"
)
PHOTO_TOO_LARGE = (
    "🖼️ La imagen es demasiado grande ({size_mb:.1f} MB; máximo {max_mb:.1f} MB). "
    "Envíala como foto (Telegram la comprime) o una más pequeña."
)
PHOTO_RATE_LIMITED = (
    "⏳ Groq llegó a su límite ({scope}) al mirar la foto. Vuelve a enviarla dentro de {wait}."
)
PHOTO_UNAVAILABLE = (
    "😕 No puedo describir la foto ahora mismo. Inténtalo en un rato o cuéntame qué hay en ella."
)
PHOTO_AUTH = (
    "🔑 Groq rechazó la clave de API al describir la foto (HTTP {status}); quien administra Rumi "
    "debe revisar llm.api_key."
)
PHOTO_MODEL_GONE = (
    "🧩 Groq no sirve el modelo de visión «{model}»; quien administra Rumi debe cambiar "
    "vision.model."
)
PHOTO_REFUSED = (
    "🧩 Groq rechazó la foto (HTTP 400): o la imagen está dañada, o el modelo «{model}» no "
    "acepta imágenes (quien administra Rumi debe revisar vision.model)."
)
PHOTO_EMPTY = "🖼️ El modelo de visión no supo describir la foto. ¿Me cuentas qué hay en ella?"
DOCUMENT_ORIGIN = (
    "[documento «{name}» ({size}) recibido y guardado en el sandbox: {path}]"
)
DOCUMENT_UNSUPPORTED = (
    "📎 No sé usar «{name}»: acepto fotos y documentos de texto, PDF o CSV. "
    "(Para importar memoria, envía el archivo con /import como pie.)"
)
DOCUMENT_TOO_LARGE_FOR_WORKSPACE = (
    "📎 «{name}» es demasiado grande ({size_mb:.1f} MB; máximo {max_mb:.1f} MB)."
)
DOCUMENT_NO_SANDBOX = (
    "📎 Recibí «{name}», pero no tengo un sandbox donde guardarlo ({reason}). "
    "No lo guardé; vuelve a enviarlo cuando esté disponible."
)
DOCUMENT_SANDBOX_DOWN = "el sandbox no está disponible ahora; /status dice por qué"
DOCUMENT_SANDBOX_OFF = "el sandbox está desactivado en esta instalación (sandbox.enabled)"
DOCUMENT_SAVE_FAILED = "📎 No pude guardar «{name}» en el sandbox: {reason}. Inténtalo de nuevo."
DOCUMENT_WORKSPACE_FULL = "el espacio de trabajo está lleno (sandbox.workspace_size)"
DOCUMENT_SANDBOX_FAILED = "el sandbox falló (los detalles están en el registro)"
DOCUMENTS_DISABLED = (
    "📎 Recibí «{name}», pero recibir documentos está desactivado en esta instalación "
    "(documents.enabled)."
)
TERMINAL_AUDIO_USAGE = "Uso en la terminal: /audio <ruta de un archivo de audio>"

FORGOT_ONE = "memoria {ids}"
FORGOT_MANY = "{count} memorias ({ids})"
FORGOT_HISTORY = " y su historial ({count} versiones anteriores)"
FORGOT_HISTORY_ONE = " y su historial (1 versión anterior)"
IMPORT_SKIPPED_FORGOTTEN = (
    " 🗑️ {count} recuerdos del archivo ya los habías olvidado en este chat; no los traje de vuelta."
)
IMPORT_SKIPPED_FORGOTTEN_ONE = (
    " 🗑️ 1 recuerdo del archivo ya lo habías olvidado en este chat; no lo traje de vuelta."
)
FORGOT_REPLY = (
    "🗑️ Olvidado: {what}. Borrado de la base de datos, de los índices de búsqueda y de "
    "MEMORY.md; no lo volveré a aprender solo. Lo dicho en la conversación con otras palabras "
    "sigue en el historial: /redact <texto> lo borra."
)

# --- groups: whose memory, who may forget it, /memory off|on (issue 15, item 5) ---
FORGET_NOT_YOURS = (
    "⛔ {ids}: no es un recuerdo tuyo. En un grupo cada persona solo puede olvidar sus propios "
    "recuerdos; un administrador del grupo puede olvidar cualquiera. No borré nada."
)
FORGET_OTHERS_LEFT = (
    " (Dejé {count} recuerdos de otras personas del grupo: solo un administrador puede "
    "olvidarlos.)"
)
MEMORY_SWITCH_USAGE = "Uso: /memory (estado), /memory off (desactivarla) o /memory on (activarla)."
MEMORY_SWITCH_ADMIN_ONLY = (
    "⛔ En un grupo solo un administrador puede activar o desactivar la memoria a largo plazo."
)
MEMORY_OFF_DONE = (
    "🔕 Memoria a largo plazo desactivada en este chat: no aprenderé nada de la conversación, "
    "no escribiré recuerdos, registro diario ni instantáneas, y no traeré recuerdos guardados "
    "a la conversación. La conversación sigue funcionando; lo ya guardado se conserva y "
    "/forget sigue disponible. /memory on la vuelve a activar."
)
MEMORY_ON_DONE = (
    "🔔 Memoria a largo plazo activada de nuevo. Lo que se dijo mientras estaba desactivada "
    "no se aprende."
)
MEMORY_ALREADY_OFF = "🔕 La memoria a largo plazo ya estaba desactivada en este chat."
MEMORY_ALREADY_ON = "🔔 La memoria a largo plazo ya estaba activada en este chat."
MEMORY_STATE_ON = "🔔 Memoria a largo plazo: activada (/memory off la desactiva)"
MEMORY_STATE_OFF = "🔕 Memoria a largo plazo: desactivada en este chat (/memory on la activa)"
REMEMBER_MEMORY_OFF = (
    "🔕 La memoria a largo plazo está desactivada en este chat, así que no guardé nada. "
    "/memory on la vuelve a activar."
)
MEMORY_OWNER = "de {name}"
# issue 14: the conversation search rebuilt from the tapes after a lost database
# (rumi/memory/files/healing.py)
DB_REBUILT_TAPE = (
    " Tu conversación ({count}) sigue entera y /search vuelve a encontrarla."
)
DB_REBUILT_TAPE_ONLY = (
    "🩹 La base de datos de Rumi se perdió o estaba dañada; tu conversación ({count}) "
    "sigue entera y /search vuelve a encontrarla."
)

# -- rumi setup y emparejamiento (issue 20) ------------------------------------------------------
PAIRING_ASK = (
    "🔐 Este asistente es privado. Si quieres usarlo, pídele a quien administra Rumi que apruebe "
    "el código {code} (con `rumi pairing approve {code}`)."
)
PAIRING_OWNER_WELCOME = (
    "✅ Listo: ahora administras este Rumi. Escríbeme lo que quieras; /help muestra lo que sé "
    "hacer."
)
PAIRING_APPROVED = "✅ Ya puedes hablar conmigo. ¡Hola! /help muestra lo que sé hacer."
# --- time the way people say it (issue 17, item 4) ---
RECALL_BLOCK_HEADER = "Recuerdos relevantes (memoria a largo plazo):"
RECALL_RECENT_LOG = "Registro de hoy y ayer:"
RECALL_ASKED_DAYS_LOG = "Registro de los días por los que pregunta:"
SEARCH_PERIOD = "🗓️ {periods} (en tu zona horaria)"
# Redaction: /redact and the question after /forget (rumi/memory/redaction/command.py)
REDACTED_TOMBSTONE = "[borrado a petición del usuario]"
REDACT_COMMAND_DESCRIPTION = "Borrar un texto de la conversación: /redact <texto>"
REDACT_USAGE = (
    "Dime qué texto borrar: /redact <texto>. Lo quito del historial, la conversación activa, "
    "los registros diarios, las instantáneas y la memoria; cada mensaje conserva su número y "
    "su hora."
)
REDACT_TOO_SHORT = (
    "Ese texto es demasiado corto para borrarlo con seguridad (mínimo {min} caracteres): "
    "coincidiría con palabras corrientes. No borré nada."
)
REDACT_TOMBSTONE_TEXT = "No puedo borrar ese texto: es parte de la marca de borrado. No borré nada."
REDACT_NOTHING = "No encontré ese texto en la conversación ni en la memoria; no borré nada."
REDACT_NOTHING_LEFT = "nada (ya no estaba)"
REDACT_CONFIRM = (
    "Ese texto está en {where}. ¿Lo borro? Los mensajes quedarán como «{tombstone}» "
    "(conservan su número y su hora) y no se puede deshacer. Responde /redact sí o /redact no "
    "(5 minutos)."
)
REDACT_OFFER = (
    "¿Borro también las {count} menciones en el historial? Los mensajes quedarán como "
    "«{tombstone}». Responde /redact sí o /redact no (5 minutos)."
)
REDACT_OFFER_ONE = (
    "¿Borro también la mención en el historial? El mensaje quedará como «{tombstone}». "
    "Responde /redact sí o /redact no (5 minutos)."
)
REDACT_YES_BUTTON = "🗑️ Sí, borrar"
REDACT_NO_BUTTON = "No"
REDACT_EXPIRED = (
    "No hay ningún borrado esperando respuesta (o ya caducó); pídelo con /redact <texto>."
)
REDACT_CANCELLED = "De acuerdo, no borro nada de la conversación."
REDACT_DONE = (
    "✂️ Borrado: {what}. Cada mensaje conserva su número y su hora; el texto ya no está en "
    "los archivos ni en los índices de este chat y no lo volveré a aprender."
)
REDACT_MENTIONS_ONE = "1 mención en el historial"
REDACT_MENTIONS = "{count} menciones en el historial"
REDACT_WHERE = " ({parts})"
REDACT_AND = " y "
REDACT_PART_MESSAGES = "mensajes: {count}"
REDACT_PART_CONTEXT = "conversación activa: {count}"
REDACT_PART_DAILY = "líneas del registro diario: {count}"
REDACT_PART_SNAPSHOTS = "líneas de instantáneas: {count}"
REDACT_PART_NAMES = "nombres de instantánea: {count}"
REDACT_PART_PENDING = "extracciones pendientes: {count}"
REDACT_PART_SECTIONS = "líneas de tu perfil: {count}"
REDACTIONS_COUNT = "Borrados a petición tuya: {count} ({messages})"



# both languages and /status for people (rumi/chat_language.py, rumi/core/, agent/status.py)
MODEL_REPLY_LANGUAGE = (
    "Idioma de respuesta: español. Responde siempre en español salvo que la persona escriba "
    "en otro idioma o te pida otro."
)
STATUS_UPTIME = "En marcha desde hace {uptime}"
STATUS_DETAIL_HINT = "Detalles del contexto y de la memoria: /status detalle"
STATUS_KEY_OK = "Clave de Groq: funciona (última respuesta hace {ago})"
STATUS_KEY_REFUSED = (
    "Clave de Groq: RECHAZADA en la última llamada; quien administra Rumi debe revisar "
    "llm.api_key («rumi doctor» lo comprueba)"
)
STATUS_KEY_UNTRIED = "Clave de Groq: aún sin probar desde el arranque"
STATUS_USAGE_TODAY = "Uso de Groq hoy: {tokens} tokens; respuestas: {answers}"
THOUSANDS_SEPARATOR = "."
DECIMAL_SEPARATOR = ","

# Dates as Rumi writes them (`messages.format_datetime`): day/month/year, 24 h; the month as
# a date writes it (`{mon}`: here its number, in English its name).
DATE_FORMAT = "{m.day:02d}/{mon}/{m.year}"
DATETIME_FORMAT = "{m.day:02d}/{mon}/{m.year} {m.hour:02d}:{m.minute:02d}"
DATE_MONTHS = ("01", "02", "03", "04", "05", "06", "07", "08", "09", "10", "11", "12")
# plurals for messages.count_of: "<NOUN>_ONE" / "<NOUN>_MANY"
MESSAGES_ONE = "{n} mensaje"
MESSAGES_MANY = "{n} mensajes"
ITEMS_ONE = "{n} elemento"
ITEMS_MANY = "{n} elementos"
TOKENS_ONE = "{n} token"
TOKENS_MANY = "{n} tokens"
MODELS_ONE = "{n} modelo"
MODELS_MANY = "{n} modelos"
STATUS_SANDBOX_RUNNING = "Sandbox: en marcha"
STATUS_MEMORIES = "Recuerdos guardados: {active}"
STATUS_MEMORIES_KEYWORD_ONLY = " (solo búsqueda por palabras clave; /status detalle dice por qué)"
STATUS_MEMORY_STORE = "Memoria en PostgreSQL {where}, como «{name}»"
STATUS_MEMORY_STORE_SHARED = "; la comparten también: {others}"


# format_duration (rumi/messages.py) in this language
DURATION_DAY = "{n} día"
DURATION_DAYS = "{n} días"
DURATION_DAYS_HOURS = "{days} y {hours} h"


TERMINAL_WELCOME = (
    "Rumi en la terminal. Escribe /help para ver los comandos; Ctrl-D o /salir para terminar."
)
TERMINAL_BYE = "¡Hasta luego!"
TERMINAL_NOTICE = "[aviso] {text}"
TERMINAL_BUTTON = "{label}: escribe {command}"
TERMINAL_YES_NO = "(o responde s/n)"
TERMINAL_PROMPT = "tú> "

# /remember, /forget, /memory, /search, /clear, /reset, /export, /import (memory/commands.py)
REMEMBER_EMPTY = "¿Qué quieres que recuerde? Ej.: /remember trabajo: Google"
REMEMBER_USAGE = "Dime qué recordar: /remember <texto> o /remember clave: valor"
REMEMBER_FAILED = "No pude guardarlo: {reason}"
REMEMBERED = "✅ Lo recordaré: {line}"
FORGET_USAGE = "Dime qué olvidar: /forget <clave, texto o #id>"
FORGET_LIST_EXPIRED = (
    "Esa lista ya caducó o no existe; vuelve a pedirlo con /forget <clave, texto o #id>."
)
FORGET_PICK_NUMBER = "Elige un número entre 1 y {count}, o «todos»."
FORGET_CANCELLED = "De acuerdo, no olvido nada."
FORGOT_EARLIER = (
    "🗑️ Borré {count} (de {ids}); la versión actual no lo "
    "dice y sigue guardada."
)
FORGOT_EARLIER_WHAT = "{count} de {ids}"
FORGOT_EARLIER_ALSO = " También borré {count} (de {ids})."
EARLIER_VERSIONS_ONE = "{n} versión anterior"
EARLIER_VERSIONS_MANY = "{n} versiones anteriores"
EARLIER_SAYING_ONE = "{n} versión anterior que lo decía"
EARLIER_SAYING_MANY = "{n} versiones anteriores que lo decían"
FORGET_NO_MATCH = "No encontré nada que coincida con «{query}»."
FORGET_MATCHES = "Encontré {count} recuerdos que coinciden:"
FORGET_WHICH = "¿Cuál olvido? Responde /forget <número>, /forget todos o /forget no."
FORGET_ALL_BUTTON = "🗑️ Todos"
FORGET_CANCEL_BUTTON = "Cancelar"
FORGET_NOT_ACTIVE = "Ese recuerdo ya no estaba activo."
CLEARED = "🧹 Conversación vaciada ({count})."
CLEARED_SNAPSHOT = "Guardé las últimas líneas en memory/snapshots/{name}."
CLEARED_LEARNED = "Aprendí {things}."
NEW_THINGS_ONE = "{n} cosa nueva"
NEW_THINGS_MANY = "{n} cosas nuevas"
CLEARED_PENDING = "No pude extraer recuerdos ahora; lo reintentaré más tarde."
CLEARED_MEMORY_INTACT = "La memoria a largo plazo sigue intacta."
RESET_FRESH = "🔄 Sesión reiniciada: empiezo de cero."
RESET_LEARNED = " Antes aprendí {things} de la conversación."
THINGS_ONE = "{n} cosa"
THINGS_MANY = "{n} cosas"
RESET_MEMORY_KEPT = " Lo que guardé en la memoria a largo plazo sigue ahí."
EXPORT_READY = (
    "📦 Aquí tienes tu memoria. Para restaurarla usa /import: en Telegram, envíame este "
    "archivo con el pie /import; en la terminal, /import <ruta>."
)
IMPORT_USAGE = "Envíame el archivo .tar.gz exportado con el pie de mensaje /import."
IMPORT_REJECTED = "⛔ No importé el archivo: {reason}. No se cambió nada."
IMPORTED = (
    "📥 Importado: {added} recuerdos nuevos, {written} archivos añadidos, {merged} combinados."
)
IMPORT_KEPT = " Conservé tu versión de: {files}."
IMPORT_ERROR_LINE = "línea {line}: {reason}"
IMPORT_INVALID = (
    " ⚠️ {count} recuerdos de memories.jsonl no eran válidos y no los importé ({shown})."
)
MEMORY_ACTIVE = "🧠 Recuerdos activos: {count}"
MEMORY_TYPE_LABELS: dict[str, str] = {
    "fact": "hechos", "preference": "preferencias", "decision": "decisiones",
    "entity": "entidades", "temporal": "temporales", "episodic": "episodios",
    "summary": "resúmenes", "profile": "perfil",
}
MEMORY_RECENT = "Últimos aprendidos:"
MEMORY_MD_SIZE = "MEMORY.md: {size} bytes"
MEMORY_MD_MISSING = "MEMORY.md: aún no existe"
MEMORY_PENDING = "Extracciones pendientes de reintentar: {count}"
SEARCH_USAGE = "Dime qué buscar: /search <palabras>"
SEARCH_NONE = "No encontré nada sobre «{query}»."
SEARCH_RESULTS = "🔎 Resultados para «{query}»:"

# /status detalle: the context (rumi/context/status.py)
CONTEXT_STATUS_HEADER = "Contexto (memoria de trabajo SMMA):"
CONTEXT_STATUS_SECTIONS = "Secciones:"
CONTEXT_SECTION_NOT_LOADED = " (no cargada)"
CONTEXT_SECTION_TRUNCATED = " (truncada: {tokens} tokens en disco)"
CONTEXT_SECTION_ITEMS = " · {count}"
CONTEXT_RECALLED = "   Memorias recuperadas: {tokens} / {budget} tokens"
CONTEXT_CALIBRATION = "Calibración ({model}): ×{factor:.3f} con {samples} muestras del proveedor"
CONTEXT_CALIBRATION_NONE = "Calibración ({model}): sin datos todavía (×1.000)"
CONTEXT_LAST_PROMPT = "Último prompt según el proveedor: {tokens} tokens"
CONTEXT_TOKENIZER_FALLBACK = "Tokenizador: estimación chars/4 (tiktoken no disponible)"
CONTEXT_TAPE = "Registro inmutable: .smma/session_log.jsonl"
SECTION_TITLES: dict[str, str] = {
    "identity": "Identidad y reglas SMMA",
    "dashboard": "Dashboard de metacognición",
    "user_profile": "Perfil del usuario",
    "project_context": "Contexto del proyecto",
    "current_task": "Estado de la tarea actual",
    "agent_notes": "Notas del agente",
    "action_log": "Log de acciones",
    "workspace": "Espacio de trabajo",
}

CONTEXT_PRESSURE = (
    "- Conversación: {conversation} / {room} tokens ({pressure} %); presión de memoria "
    "{level} (optimizar desde {optimize:g} %, compactación automática desde {hard:g} %); "
    "prompt entero {used} / {safe}"
)
# /status, once Groq told the account's per-minute cap and it is what limits the prompt
CONTEXT_CAP_ROOM = ("El límite de Groq de {tpm} tokens/min deja {room} tokens a la "
                    "conversación (ventana del modelo: {window}k)")
CONTEXT_LEVELS: dict[str, str] = {"BAJA": "BAJA", "MEDIA": "MEDIA", "ALTA": "ALTA",
                                  "CRÍTICA": "CRÍTICA"}
CONTEXT_DISK_LOADED = "- Secciones en disco cargadas: {loaded}/{total}"
CONTEXT_ITEMS = "- Mensajes en contexto: {count} (#{first}…#{last})"
CONTEXT_PINNED = "- Fijados: {ids}"
CONTEXT_FAILING_TOOL = "- ⚠ La herramienta {tool} ha fallado {count} veces"
CONTEXT_MODEL_NOTES = "- Avisos para el modelo: {count}"

# /import and /remember input problems (memory/archive.py, transfer.py, codec.py)
ARCHIVE_BOMB = "la compresión es sospechosa (posible bomba de descompresión)"
ARCHIVE_NOT_TAR = "no es un archivo .tar.gz válido"
ARCHIVE_INFLATED_TOO_LARGE = "el contenido descomprimido es demasiado grande"
ARCHIVE_PAX_GLOBAL = "cabecera pax global no permitida"
ARCHIVE_META_TOO_LARGE = "cabecera de metadatos demasiado grande ({size} KiB; máximo {max} KiB)"
ARCHIVE_SPARSE = "tipo de entrada no permitido (archivo disperso)"
ARCHIVE_TOO_LARGE = "el archivo es demasiado grande ({size} KiB; máximo {max} KiB)"
ARCHIVE_MEMBER_TOO_LARGE = "«{name}» es demasiado grande"
ARCHIVE_DUPLICATE = "«{name}» aparece dos veces"
ARCHIVE_UNREADABLE = "no se puede leer «{name}»"
ARCHIVE_NOT_TEXT = "«{name}» no es texto (UTF-8): no importé nada"
ARCHIVE_TRUNCATED = "«{name}» está truncado"
ARCHIVE_BAD_PATH = "ruta absoluta o no válida: «{name}»"
ARCHIVE_DOTDOT = "ruta con «..»: «{name}»"
ARCHIVE_LINK = "enlace no permitido: «{name}»"
ARCHIVE_DEVICE = "dispositivo no permitido: «{name}»"
ARCHIVE_ENTRY_TYPE = "tipo de entrada no permitido: «{name}»"
ARCHIVE_UNEXPECTED = "archivo inesperado: «{name}»"
ARCHIVE_NO_MANIFEST = "falta manifest.json"
ARCHIVE_MANIFEST_JSON = "manifest.json no es JSON válido"
ARCHIVE_NOT_RUMI = "no es un archivo exportado por Rumi"
ARCHIVE_VERSION = "versión de formato no soportada: {version}"
ARCHIVE_MANIFEST_FILES = "manifest.json no lista los archivos"
ARCHIVE_NOT_IN_MANIFEST = "«{name}» no está en el manifiesto"
ARCHIVE_CHECKSUM = "la suma de comprobación de «{name}» no coincide"
ARCHIVE_MISSING = "faltan archivos del manifiesto: {names}"
ARCHIVE_MEMORIES_INVALID = "memories.jsonl no es válido"
IMPORT_LINE_TOO_LONG = "línea demasiado larga"
IMPORT_LINE_NOT_JSON = "no es JSON válido"
IMPORT_LINE_NOT_OBJECT = "se esperaba un objeto JSON"
IMPORT_LINE_STATUS = "estado desconocido {status}"
IMPORT_LINE_DATE = "fecha no válida"
INPUT_FIELDS: dict[str, str] = {
    "el recuerdo": "el recuerdo", "el resumen": "el resumen", "la clave": "la clave",
    "el bloque": "el bloque", "el nombre": "el nombre", "la categoría": "la categoría",
}
INPUT_MISSING = "Falta {what}."
INPUT_NOT_UTF8 = "{what} no es texto UTF-8 válido."
INPUT_NOT_TEXT = "{what} debe ser texto."
INPUT_BINARY = "{what} parece binario, no texto."
INPUT_EMPTY = "{what} está vacío."
INPUT_TOO_LONG = "{what} es demasiado largo ({length} caracteres; máximo {max})."
MD_LINE = "línea {line}: {reason}"
MD_UNKNOWN_SECTION = "sección desconocida «{title}» (usa: {known})"
MD_NOT_AN_ITEM = "no es un recuerdo; cada recuerdo empieza con «- »"
MD_OUTSIDE_SECTION = "el recuerdo está fuera de una sección «## …»"
MD_EMPTY_ITEM = "el recuerdo está vacío"
MD_ID_TOO_LARGE = ("el número [#{memory_id}] es demasiado grande para ser un recuerdo; quítalo "
                   "para guardar la línea como un recuerdo nuevo")
MD_TOO_LARGE = "MEMORY.md ocupa {size} bytes; el máximo es {max}"

# -- progress while a turn runs (terminal indicator, Telegram status message) ----------------

TERMINAL_THINKING = "pensando…"
TERMINAL_LOG_FILE = "(registro en {path}; --verbose lo muestra aquí)"
PROGRESS_TOOL_LINE = "🔧 `{label}`"
PROGRESS_WORKING = "⏳ Trabajando…"
PROGRESS_DONE = "✔️ Listo ({steps}):"
PROGRESS_STOPPED = "⏹️ Detenido ({steps}):"
PROGRESS_MORE = "… y {steps} más"


def progress_steps(count: int) -> str:
    return "1 paso" if count == 1 else f"{count} pasos"

# -- group permissions: chat-wide commands only for a group's admins -------------------------

GROUP_ADMIN_ONLY = "⛔ En un grupo, solo un administrador puede usar /{name}. No se cambió nada."
GROUP_ADMIN_REFUSALS: dict[str, str] = {
    "redact": ("⛔ En un grupo la conversación es de todos: solo un administrador puede borrar "
               "texto de ella. Para olvidar un recuerdo tuyo usa /forget. No borré nada."),
    "reset": "⛔ En un grupo, solo un administrador puede reiniciar la conversación de todos "
             "(/reset). No se cambió nada.",
    "clear": "⛔ En un grupo, solo un administrador puede vaciar la conversación de todos "
             "(/clear). No se cambió nada.",
    "import": "⛔ En un grupo, solo un administrador puede importar un archivo a la memoria "
              "del grupo (/import). No se cambió nada.",
    "timezone": "⛔ En un grupo, solo un administrador puede cambiar la zona horaria del grupo; "
                "/timezone sin nada muestra la actual. No se cambió nada.",
    "memorymd": "⛔ En un grupo, solo un administrador puede aceptar o descartar un cambio de "
                "MEMORY.md (escribiendo /memorymd si o /memorymd no). No se cambió nada.",
    "cancel": "⛔ En un grupo, un recordatorio solo lo puede cancelar quien lo pidió o un "
              "administrador. No se cambió nada.",
}
