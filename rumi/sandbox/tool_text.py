"""The sandbox tools' schemas in each language Rumi speaks (`tool_texts`).

Their results stay as they are: a command's output is the program's, and the few bracketed
markers around it (`[exit code 0]`, `[stderr]`) are read by the model as terminal notation."""

from __future__ import annotations

from rumi.base.tools import ToolText


def tool_texts(timeout: float) -> dict[str, dict[str, ToolText]]:
    """Each sandbox tool's words by language; `timeout` is the configured command limit."""
    return {
        "bash": {
            "es": ToolText("Ejecuta una orden bash en el sandbox Linux de este chat (python3, "
                           f"git; sin red). /workspace se conserva; límite de {timeout:g} s."),
            "en": ToolText("Run a bash command in this chat's Linux sandbox (python3, git; no "
                           f"network). /workspace persists; {timeout:g} s limit."),
        },
        "read_file": {
            "es": ToolText("Lee un archivo de texto (ruta relativa a /workspace)."),
            "en": ToolText("Read a text file (path relative to /workspace)."),
        },
        "write_file": {
            "es": ToolText("Crea o sobrescribe un archivo (ruta relativa a /workspace)."),
            "en": ToolText("Create or overwrite a file (path relative to /workspace)."),
        },
        "list_files": {
            "es": ToolText("Lista un directorio (ruta relativa a /workspace)."),
            "en": ToolText("List a directory (path relative to /workspace)."),
        },
    }

