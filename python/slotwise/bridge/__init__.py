"""The Python end of the shim-to-Python protocol (docs/protocol.md):
``protocol`` turns payloads into engine events and decisions into answers
(pure, testable without Java); ``server`` is the Py4J connection."""
