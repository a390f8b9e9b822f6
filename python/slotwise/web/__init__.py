"""The web UI and REST API of ``slotwise serve`` (FastAPI, Jinja2)."""
