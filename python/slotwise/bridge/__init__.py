"""The Py4J end of the shim link (``server``): registration with a fresh
callback token, liveness, unregistering on a clean exit.  The messages are
``slotwise.protocol``'s; what they do is ``slotwise.core``'s."""
