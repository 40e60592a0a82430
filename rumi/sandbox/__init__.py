"""Per-chat Docker sandboxes: the manager, the hardening policy, exec, and the model's tools.

See docs/sandbox.md. Build with `SandboxManager(settings.sandbox, settings.data_dir)` and
register `sandbox_tools(manager)`; nothing here is a module-level singleton.
"""
